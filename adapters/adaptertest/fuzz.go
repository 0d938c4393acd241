package adaptertest

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the provider packages' fuzz targets share: their seeds, and the
// property every answer has.

// SeedCorpus adds to f's corpus every JSON file in dir. dir is a
// provider's directory of adapters/testdata. It adds a golden file's
// "response", or the file itself.
func SeedCorpus(f *testing.F, dir string) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no JSON files in %s (%v)", dir, err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var g struct {
			Response json.RawMessage `json:"response"`
		}
		if json.Unmarshal(data, &g) == nil && len(g.Response) > 0 {
			data = g.Response
		}
		f.Add(data)
	}
}

// outcome is one way a call can end.
type outcome struct {
	res    *mcp.CallToolResult
	err    error
	mode   toolcall.Structured
	failed bool // the answer reports a failure
}

func outcomes() []outcome {
	full := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "t"}, &mcp.ImageContent{MIMEType: "image/png", Data: pngBytes},
		&mcp.AudioContent{MIMEType: "audio/aac", Data: []byte{1}}, &mcp.ResourceLink{URI: "u://x", Name: "x"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "u://y", Blob: pngBytes, MIMEType: "image/png"}},
	}, StructuredContent: map[string]any{"k": []any{1.0}}}
	failing := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: pngBytes}, &mcp.TextContent{Text: "t"}},
		StructuredContent: json.RawMessage(`{"k":[1]}`)}
	return []outcome{
		{res: full}, {res: full, mode: toolcall.StructuredPrefer}, {res: full, mode: toolcall.StructuredAppend},
		{res: full, mode: toolcall.StructuredIgnore}, {res: &mcp.CallToolResult{}},
		{res: failing, failed: true}, {res: &mcp.CallToolResult{IsError: true}, mode: toolcall.StructuredAppend, failed: true},
		{err: &conduit.Error{Kind: conduit.ErrTimeout, Message: "timed out"}, failed: true},
		{err: errors.New("x"), failed: true}, {failed: true},
	}
}

// Fuzz is the body of a provider package's fuzz target of h, over f's
// corpus (see SeedCorpus). For each input, roundTrip checks a response of
// the provider's own shape built from it (see internal/fuzzgen).
// CheckAnswers checks the input itself, with the calls resolved against
// ts.
func Fuzz(f *testing.F, h Harness, ts *conduit.ToolSet, roundTrip func(t *testing.T, data []byte)) {
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data)
		CheckAnswers(t, h, ts, data)
	})
}

// CheckAnswers is the property of the provider packages' fuzz targets.
// h's provider parses response, whatever its bytes, without a panic. Every
// call it finds is resolved against ts. It is answered under every
// outcome:
//
//   - a result of every content kind under each structured mode;
//   - an empty result;
//   - isError results;
//   - failures;
//   - no result at all.
//
// The answer marshals, and is keyed by the call's id. It reads back
// through the harness's fake as one answer. That answer reports a failure
// exactly when the outcome is one.
func CheckAnswers(t testing.TB, h Harness, ts *conduit.ToolSet, response any) {
	t.Helper()
	p, f := h.Provider, h.Fake
	raws, err := p.Parse(response)
	if err != nil {
		return
	}
	w := p.Wire()
	for _, c := range toolcall.Resolve(raws, ts) {
		if c.Err != nil && c.Args != nil {
			t.Fatalf("a call refused (%v) has arguments", c.Err)
		}
		for _, o := range outcomes() {
			res, err := o.res, o.err
			if c.Err != nil {
				res, err = nil, c.Err
			}
			ans := p.Answer(c, res, err, &toolcall.AnswerOptions{Structured: o.mode})
			marshal(t, ans)
			got := f.Answered(w.Answers([]map[string]any{ans}))
			if len(got) != 1 || !keyedBy(got[0], c.ID, c.Name) {
				t.Fatalf("the answer of call %q (%q) reads back as %+v", c.ID, c.Name, got)
			}
			if got[0].Error != (o.failed || c.Err != nil) {
				t.Fatalf("the answer of call %q reports a failure %v under %+v", c.ID, got[0].Error, o)
			}
		}
	}
}
