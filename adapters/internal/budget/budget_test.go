package budget_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters/internal/budget"
	"github.com/conduitmcp/conduit/adapters/internal/render"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/tokens"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigText is about 3 MB of real text, as server-filesystem's
// read_text_file returns it: Go's copy of Newton's Opticks, repeated.
func bigText(t testing.TB) string {
	data, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		t.Skip(err)
	}
	return strings.Repeat(string(data), 6)
}

// The four providers' renderings, as their answer functions make them.
var providers = []struct {
	name string
	o    render.RenderOptions
	img  budget.ImageRule
}{
	{"anthropic", render.RenderOptions{Mode: toolcall.StructuredAuto, Images: true}, tokens.AnthropicImage},
	{"openai-chat", render.RenderOptions{Mode: toolcall.StructuredAuto}, tokens.OpenAIImage},
	{"openai-responses", render.RenderOptions{Mode: toolcall.StructuredAuto, Images: true}, tokens.OpenAIImage},
	{"gemini", render.RenderOptions{Mode: toolcall.StructuredPrefer, StructuredValue: true}, tokens.GeminiImage},
}

// TestThreeMegabytes: a 3 MB text result, as server-filesystem sends it
// (text content and structuredContent {"content": text}), reaches each
// provider's model as at most the budget plus the notice.
func TestThreeMegabytes(t *testing.T) {
	text := bigText(t)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: map[string]any{"content": text}}
	const limit = 25000
	for _, p := range providers {
		r := render.Render(res, &p.o)
		before := budget.Count(&r, p.img)
		out := budget.Apply(&r, &budget.Options{Budget: limit, Image: p.img})
		after := budget.Count(&r, p.img)
		notice := tokens.Text(out.Notice)
		if !out.Cut || out.Tokens != before || out.Kept > limit || after > limit+notice || out.Kept < limit*9/10 {
			t.Errorf("%s: %d tokens before, %d kept, %d after with a notice of %d", p.name, before, out.Kept, after, notice)
		}
		if r.Structured != nil {
			if data, err := json.Marshal(r.Structured); err != nil || !strings.HasPrefix(string(data), `{"content":"`) {
				t.Errorf("%s: structured %.80s, %v", p.name, data, err)
			}
		} else if last := r.Parts[len(r.Parts)-1].Text; last != out.Notice || !strings.Contains(last, "lines") {
			t.Errorf("%s: last part %q", p.name, last)
		}
		t.Logf("%s: %d tokens → %d kept + a notice of %d", p.name, before, out.Kept, notice)
	}
}

func TestApplyJSONAndImages(t *testing.T) {
	var rows []any
	for i := range 2000 {
		rows = append(rows, map[string]any{"id": i, "name": fmt.Sprintf("row %d", i)})
	}
	data, _ := json.Marshal(map[string]any{"rows": rows})
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x04\x00\x00\x00\x04\x00\x08\x02\x00\x00\x00")
	r := render.Rendered{Parts: []render.Part{
		{Kind: render.PartImage, MediaType: "image/png", Data: png}, // 1024x1024: 1,398 tokens for Anthropic
		{Kind: render.PartText, Text: string(data)},
		{Kind: render.PartImage, MediaType: "image/png", Data: png},
	}}
	out := budget.Apply(&r, &budget.Options{Budget: 3000, Image: tokens.AnthropicImage, ReadTool: "conduit__read", ResultRef: "r7"})
	if !out.Cut || len(r.Parts) != 3 || r.Parts[0].Kind != render.PartImage || !json.Valid([]byte(r.Parts[1].Text)) {
		t.Fatalf("%+v %+v", out, r.Parts)
	}
	if n := budget.Count(&render.Rendered{Parts: r.Parts[:2]}, tokens.AnthropicImage); n > 3000 {
		t.Fatalf("kept %d tokens", n)
	}
	if !strings.Contains(out.Notice, "The JSON kept is valid") || !strings.Contains(out.Notice, `call conduit__read with result "r7"`) {
		t.Fatalf("notice %q", out.Notice)
	}
	// Within the budget, nothing changes.
	r = render.Rendered{Parts: []render.Part{{Kind: render.PartText, Text: "small"}}}
	if out := budget.Apply(&r, &budget.Options{Budget: 10, Image: tokens.OpenAIImage}); out.Cut || len(r.Parts) != 1 {
		t.Fatal(out)
	}
}

func BenchmarkApply(b *testing.B) {
	text := bigText(b)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	b.Run("render", func(b *testing.B) {
		for b.Loop() {
			render.Render(res, &render.RenderOptions{Mode: toolcall.StructuredAuto})
		}
	})
	b.Run("render+budget", func(b *testing.B) {
		for b.Loop() {
			r := render.Render(res, &render.RenderOptions{Mode: toolcall.StructuredAuto})
			budget.Apply(&r, &budget.Options{Budget: 25000, Image: tokens.AnthropicImage})
		}
	})
}

// TestPending: a pending answer is measured no further than a limit
// needs, written within its budget, and gives its whole text to keep.
func TestPending(t *testing.T) {
	text := bigText(t)
	r := render.Render(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "head"}, &mcp.TextContent{Text: text}}}, nil)
	var written render.Rendered
	p := budget.Pend(r, tokens.AnthropicImage, func(r render.Rendered, notice string) map[string]any {
		written = r
		return map[string]any{"notice": notice}
	})
	whole := budget.Count(&r, tokens.AnthropicImage)
	if n := p.Tokens(1000); n <= 1000 || n > 1000+20000 {
		t.Fatalf("Tokens(1000) = %d", n)
	}
	if n := p.Tokens(0); n != whole {
		t.Fatalf("Tokens(0) = %d, want %d", n, whole)
	}
	if p.Text() != "head\n"+text {
		t.Fatal("Text is not the whole")
	}
	a, done := p.Write(toolcall.Budget{Tokens: 2000, ReadTool: "read_result", Ref: "R-1"})
	if !done.Cut || done.Tokens != whole || done.Kept > 2000 || done.Budget != 2000 || done.Ref != "R-1" || a["notice"] != "" {
		t.Fatalf("Write: %+v %v", done, a)
	}
	if last := written.Parts[len(written.Parts)-1].Text; !strings.Contains(last, `call read_result with result "R-1"`) {
		t.Fatalf("notice %q", last)
	}
	// The pending answer's own rendering is not cut: it is written again
	// whole under no budget.
	if _, done := p.Write(toolcall.Budget{Tokens: -1}); done.Cut || done.Kept != whole || len(written.Parts) != 2 {
		t.Fatalf("no budget: %+v, %d parts", done, len(written.Parts))
	}

	// A structured value: its notice is the provider's to place, and its
	// whole text is indented JSON.
	rows := make([]any, 3000)
	for i := range rows {
		rows[i] = map[string]any{"id": float64(i)}
	}
	sr := render.Rendered{Structured: map[string]any{"rows": rows}}
	p = budget.Pend(sr, tokens.GeminiImage, func(r render.Rendered, notice string) map[string]any {
		return map[string]any{"output": r.Structured, "notice": notice}
	})
	a, done = p.Write(toolcall.Budget{Tokens: 500})
	if !done.Cut || done.Ref != "" || !strings.Contains(a["notice"].(string), "The JSON kept is valid") {
		t.Fatalf("structured: %+v %v", done, a["notice"])
	}
	if data, err := json.Marshal(a["output"]); err != nil || tokens.Text(string(data)) > 500 {
		t.Fatalf("output %d tokens, %v", tokens.Text(string(data)), err)
	}
	if !strings.HasPrefix(p.Text(), "{\n \"rows\": [\n  {\n   \"id\": 0\n  },") {
		t.Fatalf("Text %.60q", p.Text())
	}
	// A budget of 0 is the default, 25,000 tokens.
	if _, done := budget.Pend(r, tokens.OpenAIImage, func(render.Rendered, string) map[string]any { return nil }).Write(toolcall.Budget{}); done.Budget != toolcall.DefaultMaxResultTokens || !done.Cut {
		t.Fatalf("default: %+v", done)
	}
}
