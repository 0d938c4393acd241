// Package budget applies a token budget to a rendered result, for every
// provider package: it counts what the model reads of the rendering (its
// text, its structuredContent where the answer sends it, its images by the
// provider's rule) and, over the budget, keeps the beginning, cut at a
// clean boundary (valid JSON for a result whose structure matters), and
// ends it with a notice that says what was kept and how to ask for less.
// It knows nothing of MCP sessions; internal/tokens counts and cuts.
//
// Anthropic's and Gemini's tokenizers are not public; their counting
// endpoints (Anthropic's /v1/messages/count_tokens, Gemini's countTokens)
// would cost a request per result. The estimate is fitted to OpenAI's
// o200k_base and errs above it (by 5% over real outputs). Claude's
// tokenizers make more tokens of the same text than o200k: 20 to 30% more
// measured for Claude 3.5 against GPT-4o, and Anthropic states that Claude
// Opus 4.7's makes 1.0 to 1.35 times as many as its predecessors' (up to
// 1.47 measured on technical text), so up to about 1.7 times o200k's.
// Google's documentation gives Gemini about 4 characters a token, as
// o200k's on English. A budget is therefore a bound on o200k tokens with
// a margin, and on Claude's tokens a looser one: choose it with that in
// mind (BENCHMARKS.md, "Result budget").
package budget

import (
	"encoding/json"
	"strings"

	"github.com/conduitmcp/conduit/adapters/internal/render"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/conduitmcp/conduit/internal/tokens"
)

// ImageRule is a provider's tokens for an image of w×h pixels (0, 0 when
// unknown): tokens.AnthropicImage, tokens.OpenAIImage, tokens.GeminiImage.
type ImageRule func(w, h int) int

// Count returns the estimated tokens a model reads of r, its images
// counted by img.
func Count(r *render.Rendered, img ImageRule) int {
	n := 0
	if r.Structured != nil {
		n += tokens.Text(structuredText(r.Structured))
	}
	for _, p := range r.Parts {
		n += partTokens(p, img)
	}
	return n
}

func partTokens(p render.Part, img ImageRule) int {
	if p.Kind == render.PartImage {
		return img(render.ImageSize(p.MediaType, p.Data))
	}
	return tokens.Text(p.Text)
}

func structuredText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

// Options are the options of [Apply].
type Options struct {
	// Budget is the most tokens of the result the model reads, its notice
	// aside. Zero or less: no budget.
	Budget int
	// Image is the provider's image rule.
	Image ImageRule
	// ReadTool and ResultRef, when set, name conduit's tool that reads the
	// rest of a cut result, and the result's name there, for the notice.
	ReadTool, ResultRef string
}

// Outcome is what Apply did.
type Outcome struct {
	// Tokens is the estimate of the whole result; Kept of what is left of
	// it, the notice aside.
	Tokens, Kept int
	// Cut reports that the result was over the budget and was cut.
	Cut bool
	// Notice is the notice's text when Cut: the last part of r, or, for a
	// result rendered as a structured value, for the caller to place.
	Notice string
}

// Apply cuts r to o.Budget when it is over it, in place. Parts are kept
// in order while they fit; the first that does not is cut (a text at a
// line break or character, a JSON text into valid JSON, an image replaced
// by a placeholder), and the parts after it are dropped; the notice is
// appended as a text part. A structured value (r.Structured) is cut into
// a valid value, or nil when none fits, and the notice is left in
// Outcome.Notice.
func Apply(r *render.Rendered, o *Options) Outcome {
	// Each part is counted once: a text of megabytes costs a scan.
	sizes := make([]int, len(r.Parts))
	out := Outcome{}
	if r.Structured != nil {
		out.Tokens = tokens.Text(structuredText(r.Structured))
	}
	for i, p := range r.Parts {
		sizes[i] = partTokens(p, o.Image)
		out.Tokens += sizes[i]
	}
	out.Kept = out.Tokens
	if o.Budget <= 0 || out.Tokens <= o.Budget {
		return out
	}
	out.Cut = true
	c := modeltext.Cut{Budget: o.Budget, Tokens: out.Tokens, ReadTool: o.ReadTool, ResultRef: o.ResultRef}
	if r.Structured != nil {
		text := structuredText(r.Structured)
		c.JSON, c.Bytes = true, len(text)
		r.Structured = nil
		if kept, ok := tokens.CutJSON(text, o.Budget); ok {
			var v any
			if json.Unmarshal([]byte(kept), &v) == nil {
				r.Structured = v
				c.KeptBytes, out.Kept = len(kept), tokens.Text(kept)
			}
		}
		c.Replaced = r.Structured == nil
		if c.Replaced {
			out.Kept = 0
		}
		c.KeptTokens = out.Kept
		out.Notice = modeltext.CutNotice(c)
		return out
	}
	left := o.Budget
	kept := r.Parts[:0]
	cutDone := false
	for i, p := range r.Parts {
		if p.Kind == render.PartText {
			c.Bytes += len(p.Text)
			c.Lines += lines(p.Text)
		}
		if cutDone {
			continue
		}
		n := sizes[i]
		if n <= left {
			kept = append(kept, p)
			left -= n
			if p.Kind == render.PartText {
				c.KeptBytes += len(p.Text)
				c.KeptLines += lines(p.Text)
			}
			continue
		}
		cutDone = true
		if p.Kind == render.PartImage {
			continue // dropped, with what follows; the notice says so
		}
		text := p.Text
		if isJSON(text) {
			c.JSON = true
			text, _ = tokens.CutJSON(text, left)
		} else {
			text = tokens.CutText(text, left)
		}
		if text != "" {
			kept = append(kept, render.Part{Kind: render.PartText, Text: text})
			left -= tokens.Text(text)
			c.KeptBytes += len(text)
			c.KeptLines += strings.Count(text, "\n")
		}
	}
	out.Kept = o.Budget - left
	c.KeptTokens = out.Kept
	c.Replaced = len(kept) == 0
	if c.JSON || c.Lines <= 1 {
		c.Lines, c.KeptLines = 0, 0 // lines say little of JSON or of one line
	}
	out.Notice = modeltext.CutNotice(c)
	r.Parts = append(kept, render.Part{Kind: render.PartText, Text: out.Notice})
	return out
}

// lines counts the lines of a text: its line breaks, and one for an
// unterminated last line.
func lines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// isJSON reports a text that is a JSON object or array: its structure
// matters, and it is cut into valid JSON.
func isJSON(s string) bool {
	t := strings.TrimSpace(s)
	return t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t))
}

// Share divides a turn's budget among its results, given each one's
// tokens in the model's order: max-min fair, so that a result within an
// equal share keeps all of it, and what it leaves goes to the larger ones,
// equally. The shares add up to at most total; a result's share is never
// more than its tokens. Every result's share is then applied in the
// model's order, none before another.
func Share(sizes []int, total int) []int {
	shares := make([]int, len(sizes))
	left, open := total, len(sizes)
	done := make([]bool, len(sizes))
	for open > 0 && left > 0 {
		each := left / open
		settled := false
		for i, n := range sizes {
			if !done[i] && n <= each {
				shares[i], done[i] = n, true
				left -= n
				open--
				settled = true
			}
		}
		if !settled {
			for i := range sizes {
				if !done[i] {
					shares[i] = each
				}
			}
			break
		}
	}
	return shares
}
