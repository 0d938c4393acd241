// Package budget applies a token budget to a rendered result, for every
// provider package. It counts what the model reads of the rendering:
//
//   - its text;
//   - its structuredContent, where the answer sends it;
//   - its images, by the provider's rule.
//
// Over the budget, it keeps the beginning, cut at a clean boundary. That
// is valid JSON for a result whose structure matters. A notice ends it,
// saying what was kept and how to ask for less.
//
// [Pending] is a provider's answer waiting for its budget. Package
// adapters measures it before it shares a turn's budget. The package knows
// nothing of MCP sessions. Package internal/tokens counts and cuts.
//
// Anthropic's and Gemini's tokenizers are not public. Their counting
// endpoints would cost a request per result. These are Anthropic's
// /v1/messages/count_tokens and Gemini's countTokens. The estimate is
// fitted to OpenAI's o200k_base. It errs above it, by 5% over real
// outputs.
//
// Claude's tokenizers make more tokens of the same text than o200k. Claude
// 3.5 measured 20 to 30% more than GPT-4o. Anthropic states that Claude
// Opus 4.7's tokenizer makes 1.0 to 1.35 times as many as its
// predecessors'. Up to 1.47 was measured on technical text. So Claude
// makes up to about 1.7 times o200k's tokens. Google's documentation gives
// Gemini about 4 characters a token, as o200k's on English.
//
// A budget is therefore a bound on o200k tokens with a margin. On Claude's
// tokens it is a looser bound. Choose it with that in mind (BENCHMARKS.md,
// "Result budget").
package budget

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/conduitmcp/conduit/adapters/internal/render"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/conduitmcp/conduit/internal/tokens"
)

// ImageRule is a provider's tokens for an image of w×h pixels (0, 0 when
// unknown). The rules are tokens.AnthropicImage, tokens.OpenAIImage and
// tokens.GeminiImage.
type ImageRule func(w, h int) int

// Count returns the estimated tokens a model reads of r, its images
// counted by img.
func Count(r *render.Rendered, img ImageRule) int {
	n := 0
	if r.Structured != nil {
		n += tokens.Text(structuredText(r.Structured))
	}
	for _, p := range r.Parts {
		n += partTokens(p, img, 0)
	}
	return n
}

// partTokens is p's estimate, counted no further than limit needs (see
// tokens.TextUpTo).
func partTokens(p render.Part, img ImageRule, limit int) int {
	if p.Kind == render.PartImage {
		return img(tokens.ImageSize(p.MediaType, p.Data))
	}
	return tokens.TextUpTo(p.Text, limit)
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
	// ReadTool and ResultRef are for the notice. When set, they name
	// conduit's tool that reads the rest of a cut result. They name the
	// result there.
	ReadTool, ResultRef string
}

// Outcome is what Apply did.
type Outcome struct {
	// Tokens is the estimate of the whole result. Kept is the estimate of
	// what is left of it, the notice aside.
	Tokens, Kept int
	// Cut reports that the result was over the budget and was cut.
	Cut bool
	// Notice is the notice's text when Cut. It is the last part of r. For a
	// result rendered as a structured value, the caller places it.
	Notice string
}

// Apply cuts r to o.Budget when it is over it, in place:
//
//   - Parts are kept in order while they fit.
//   - The first that does not fit is cut. A text is cut at a line break
//     or character, a JSON text into valid JSON. An image is dropped.
//   - The parts after it are dropped.
//   - The notice is appended as a text part.
//
// A structured value (r.Structured) is cut into a valid value. It is nil
// when none fits. The notice is left in Outcome.Notice.
func Apply(r *render.Rendered, o *Options) Outcome {
	return apply(r, o, nil)
}

// apply is Apply with the parts' estimates, when known (sizes[i] < 0:
// not yet counted).
func apply(r *render.Rendered, o *Options, sizes []int) Outcome {
	c := modeltext.Cut{Budget: o.Budget, ReadTool: o.ReadTool, ResultRef: o.ResultRef}
	if r.Structured != nil {
		return applyStructured(r, o, c, structuredText(r.Structured), -1)
	}
	pieces := make([]tokens.Piece, len(r.Parts))
	for i, p := range r.Parts {
		n := -1
		if i < len(sizes) {
			n = sizes[i]
		}
		if n < 0 {
			n = partTokens(p, o.Image, 0)
		}
		pieces[i] = tokens.Piece{Text: p.Text, Tokens: n, Whole: p.Kind == render.PartImage}
	}
	f := tokens.Fit(pieces, o.Budget)
	out := Outcome{Tokens: f.Tokens, Kept: f.Kept}
	if !f.Over() {
		return out
	}
	kept := r.Parts[:f.Keep]
	if f.HasCut {
		kept = append(kept, render.Part{Kind: render.PartText, Text: f.Cut})
	}
	c.Tokens, c.KeptTokens = f.Tokens, f.Kept
	c.Bytes, c.KeptBytes, c.Lines, c.KeptLines, c.JSON = f.Bytes, f.KeptBytes, f.Lines, f.KeptLines, f.JSON
	c.Replaced = len(kept) == 0
	out.Cut, out.Notice = true, modeltext.CutNotice(c)
	r.Parts = append(kept, render.Part{Kind: render.PartText, Text: out.Notice})
	return out
}

// applyStructured cuts a structured value into a valid one. Its JSON is
// text, and its estimate n (n < 0: not yet counted).
func applyStructured(r *render.Rendered, o *Options, c modeltext.Cut, text string, n int) Outcome {
	if n < 0 {
		n = tokens.Text(text)
	}
	out := Outcome{Tokens: n, Kept: n}
	if o.Budget <= 0 || out.Tokens <= o.Budget {
		return out
	}
	c.JSON, c.Bytes, c.Tokens = true, len(text), out.Tokens
	r.Structured, out.Kept = nil, 0
	if kept, ok := tokens.CutJSON(text, o.Budget); ok {
		var v any
		if json.Unmarshal([]byte(kept), &v) == nil {
			r.Structured = v
			c.KeptBytes, out.Kept = len(kept), tokens.Text(kept)
		}
	}
	c.Replaced = r.Structured == nil
	c.KeptTokens = out.Kept
	out.Cut, out.Notice = true, modeltext.CutNotice(c)
	return out
}

// Writer writes a provider's answer of a rendered result. notice is the
// notice of a structured value that was cut ("" otherwise). The provider
// places it itself. The notice of parts is their last part.
type Writer func(r render.Rendered, notice string) map[string]any

// Pending is one call's answer, rendered, waiting for its budget. A
// provider's answer function makes one. It holds the rendering, the image
// rule and the writer. It implements driver.Pending. Each part is counted
// at most once, however often it is measured.
type Pending struct {
	r     render.Rendered
	img   ImageRule
	write Writer

	sizes      []int  // each part's estimate, -1 until counted whole
	structured string // r.Structured as JSON, once marshalled
	structN    int    // its estimate, -1 until counted whole
	readAs     []render.Part
}

// ReadAs sets the parts whose text Text gives in place of a structured
// value's JSON. They are the result's content. It reads by lines where the
// value is one long string (server-filesystem's {"content": text}).
func (p *Pending) ReadAs(parts []render.Part) *Pending {
	p.readAs = parts
	return p
}

// Pend returns r's answer, to be written by write with the provider's
// image rule img.
func Pend(r render.Rendered, img ImageRule, write Writer) *Pending {
	p := &Pending{r: r, img: img, write: write, sizes: make([]int, len(r.Parts)), structN: -1}
	for i := range p.sizes {
		p.sizes[i] = -1
	}
	return p
}

// Tokens estimates the tokens the model reads of the whole result. With
// limit > 0 the count stops once it passes limit.
func (p *Pending) Tokens(limit int) int {
	n := 0
	if p.r.Structured != nil {
		if p.structN < 0 {
			if p.structured == "" {
				p.structured = structuredText(p.r.Structured)
			}
			m := tokens.TextUpTo(p.structured, limit)
			if limit > 0 && m > limit {
				return m
			}
			p.structN = m
		}
		n = p.structN
	}
	for i, part := range p.r.Parts {
		if limit > 0 && n > limit {
			return n
		}
		if p.sizes[i] < 0 {
			rest := 0
			if limit > 0 {
				rest = limit - n
			}
			m := partTokens(part, p.img, rest)
			if rest > 0 && m > rest && part.Kind == render.PartText {
				return n + m // counted in part only
			}
			p.sizes[i] = m
		}
		n += p.sizes[i]
	}
	return n
}

// Text is the whole result as text. It gives each part's text, one a line.
// A JSON text is indented, for reading by lines. An image is its
// placeholder. A structured value is indented JSON, or the parts ReadAs
// gave.
func (p *Pending) Text() string {
	parts := p.r.Parts
	switch {
	case p.r.Structured != nil && len(p.readAs) > 0:
		parts = p.readAs
	case p.r.Structured != nil:
		if p.structured == "" {
			p.structured = structuredText(p.r.Structured)
		}
		return indented(p.structured)
	}
	var b strings.Builder
	for i, part := range parts {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch {
		case part.Kind == render.PartImage:
			b.WriteString(modeltext.Placeholder("image", part.MediaType, len(part.Data)))
		case tokens.IsJSON(part.Text):
			b.WriteString(indented(part.Text))
		default:
			b.WriteString(part.Text)
		}
	}
	return b.String()
}

// indented is a JSON text indented, one member or element a line.
func indented(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", " ") != nil {
		return s
	}
	return b.String()
}

// Write writes the answer, its result cut to b.
func (p *Pending) Write(b toolcall.Budget) (map[string]any, toolcall.Budgeted) {
	o := &Options{Budget: b.Resolved(), Image: p.img, ReadTool: b.ReadTool, ResultRef: b.Ref}
	r := p.r
	var out Outcome
	notice := ""
	if r.Structured != nil {
		if p.structured == "" {
			p.structured = structuredText(r.Structured)
		}
		c := modeltext.Cut{Budget: o.Budget, ReadTool: o.ReadTool, ResultRef: o.ResultRef}
		out = applyStructured(&r, o, c, p.structured, p.structN)
		notice = out.Notice // the provider places it
	} else {
		r.Parts = append([]render.Part(nil), p.r.Parts...) // apply cuts its own copy
		out = apply(&r, o, p.sizes)
	}
	done := toolcall.Budgeted{Budget: o.Budget, Tokens: out.Tokens, Kept: out.Kept, Cut: out.Cut}
	if out.Cut && b.ReadTool != "" {
		done.Ref = b.Ref
	}
	return p.write(r, notice), done
}

// Answer writes p within o's budget (o.MaxResultTokens; o may be nil). It
// is a provider's answer function, for one answer on its own.
func Answer(p *Pending, o *toolcall.AnswerOptions) map[string]any {
	var b toolcall.Budget
	if o != nil {
		b.Tokens = o.MaxResultTokens
	}
	a, _ := p.Write(b)
	return a
}

// ErrorText is the rendering of a failed call: err's text, for the
// model, as one part.
func ErrorText(err error) render.Rendered {
	return render.Rendered{Parts: []render.Part{{Kind: render.PartText, Text: render.ErrorText(err)}}, IsError: true}
}
