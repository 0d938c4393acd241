package bedrock_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/bedrock"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/internal/fuzzgen"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestConformance runs the suite every provider passes.
func TestConformance(t *testing.T) {
	adaptertest.RunConformanceTests(t, adaptertest.Of(adapters.Bedrock))
}

// TestOutsideProvider runs the suite on the driver made a provider anew,
// as a program outside this module would: NewProvider and a harness.
func TestOutsideProvider(t *testing.T) {
	p := adapters.NewProvider(renamed{bedrock.Driver()})
	if p == adapters.Bedrock {
		t.Fatal("two NewProvider calls made equal providers")
	}
	adaptertest.RunConformanceTests(t, adaptertest.Harness{Provider: p, Fake: adaptertest.FakeOf(adapters.Bedrock)})
}

// renamed is a driver under a name no built-in has, as an outside one's.
type renamed struct{ driver.Provider }

func (renamed) Name() string { return "bedrock-outside" }

// TestPublicContractOnly checks that the package imports nothing of
// conduit's internal packages: the driver contract is enough to write a
// provider outside this module.
func TestPublicContractOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(path, "/internal") {
				t.Errorf("%s imports %s", file, path)
			}
		}
	}
}

func fuzzTools() *conduit.ToolSet {
	return conduit.NewToolSet(nil, conduit.ServerTools{Server: "radio", Tools: []*mcp.Tool{
		{Name: "top_song", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"sign": map[string]any{"type": "string"}}}},
	}})
}

// FuzzParse feeds arbitrary bytes to Parse: it must not panic, and every
// call it finds is answered, under every outcome, by a toolResult keyed
// by the call's id (adaptertest.CheckAnswers). The same bytes also make a
// valid response (see roundTrip), which must parse back to its calls.
func FuzzParse(f *testing.F) {
	adaptertest.SeedCorpus(f, filepath.Join("..", "testdata", "bedrock"))
	f.Add([]byte(`{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"t","name":"radio__top_song","input":{"sign":"WZPZ"}}}]}},"stopReason":"tool_use"}`))
	f.Add([]byte(`{"output":{"message":{"content":[{"toolUse":{"toolUseId":"t","name":3,"input":null}},{"toolUse":{"name":"x"}}]}}}`))
	f.Add([]byte(`{"message":"The security token included in the request is invalid."}`))
	adaptertest.Fuzz(f, adaptertest.Of(adapters.Bedrock), fuzzTools(), roundTrip)
}

// roundTrip builds a Converse response from the turn data makes, in the
// shape of the documented examples (a text block, toolUse blocks, usage
// and metrics), and checks that Parse finds exactly the turn's calls.
func roundTrip(t *testing.T, data []byte) {
	turn := fuzzgen.New(data, false)
	content := []any{}
	if turn.Text != "" {
		content = append(content, map[string]any{"text": turn.Text})
	}
	for _, c := range turn.Calls {
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name, "input": c.Args}})
	}
	resp := map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": "tool_use", "usage": map[string]any{"inputTokens": 1}, "metrics": map[string]any{"latencyMs": 1}}
	fuzzgen.RoundTrip(t, turn, resp, adapters.Bedrock.Parse)
}
