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

func TestShare(t *testing.T) {
	for _, c := range []struct {
		sizes []int
		total int
		want  []int
	}{
		{[]int{20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000}, 50000, []int{5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000}},
		{[]int{100, 90000, 3000, 40000}, 50000, []int{100, 23450, 3000, 23450}},
		{[]int{10, 20}, 50000, []int{10, 20}},
		{nil, 100, []int{}},
	} {
		got := budget.Share(c.sizes, c.total)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Share(%v, %d) = %v, want %v", c.sizes, c.total, got, c.want)
		}
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
