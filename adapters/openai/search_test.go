package openai_test

import (
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/openai"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hubTools is a hub's tool set of two servers, one with a tool whose
// short name in its namespace is taken by another of its tools.
func hubTools() *conduit.ToolSet {
	obj := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	return conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true},
		conduit.ServerTools{Server: "notes", Tools: []*mcp.Tool{
			{Name: "search", Description: "Searches the notes.", InputSchema: obj},
			{Name: "pick", InputSchema: map[string]any{"type": "object", "oneOf": []any{map[string]any{}}}},
		}},
		conduit.ServerTools{Server: "web", Tools: []*mcp.Tool{{Name: "fetch", InputSchema: obj}}})
}

// searchTools is the Responses driver's listing for its tool search, and
// what strict mode did to every tool of all.
func searchTools(loaded, all *conduit.ToolSet, o *driver.ListOptions) ([]map[string]any, report, error) {
	if o == nil {
		o = &driver.ListOptions{}
	}
	d := openai.ResponsesDriver()
	l, err := d.(driver.Searcher).SearchTools(loaded, all, o)
	if err != nil {
		return nil, report{}, err
	}
	_, rep := tools(d, all, o)
	return l.Tools, rep, nil
}

func TestSearchTools(t *testing.T) {
	ts := hubTools()
	loaded := ts.Filter(conduit.SkipFiltered, func(tl *conduit.Tool) bool { return tl.Exposed == "web__fetch" })
	tools, rep, err := searchTools(loaded, ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"web__fetch","parameters":{"additionalProperties":false,"properties":{"q":{"type":["string","null"]}},"required":["q"],"type":"object"},"strict":true,"type":"function"},` +
		`{"type":"tool_search"},` +
		`{"description":"The 2 tools of the MCP server notes.","name":"notes","tools":[` +
		`{"defer_loading":true,"name":"pick","parameters":{"oneOf":[{}],"type":"object"},"strict":false,"type":"function"},` +
		`{"defer_loading":true,"description":"Searches the notes.","name":"search","parameters":{"additionalProperties":false,"properties":{"q":{"type":["string","null"]}},"required":["q"],"type":"object"},"strict":true,"type":"function"}],` +
		`"type":"namespace"}]`
	if got := oaJSON(tools); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// The report covers the deferred functions: their null paths and
	// fallbacks.
	if len(rep.NullPaths["notes__search"]) != 1 || len(rep.NullPaths["web__fetch"]) != 1 || len(rep.Fallbacks) != 1 || rep.Fallbacks[0].Tool != "notes__pick" {
		t.Errorf("report %+v", rep)
	}
	// Under StrictOn the one that does not convert is left out.
	_, rep, _ = searchTools(loaded, ts, &driver.ListOptions{Strict: driver.StrictOn})
	if !reflect.DeepEqual(rep.Excluded, []string{"notes__pick"}) {
		t.Errorf("excluded %v", rep.Excluded)
	}
	if _, ok := openai.ChatDriver().(driver.Searcher); ok {
		t.Error("chat has a tool search")
	}
}

func TestFunctionName(t *testing.T) {
	ts := hubTools()
	search, _ := ts.Lookup("notes__search")
	if got := openai.FunctionName(search, ts); got != "search" {
		t.Errorf("%q", got)
	}
	// A client's tools have no server prefix; one whose short name is
	// another tool's exposed name keeps its own.
	cl := conduit.NewToolSet(nil, conduit.ServerTools{Server: "x", Tools: []*mcp.Tool{{Name: "x__a"}, {Name: "a"}, {Name: "b"}}})
	xa, _ := cl.Lookup("x__a")
	b, _ := cl.Lookup("b")
	if got := openai.FunctionName(xa, cl); got != "x__a" {
		t.Errorf("x__a in a set with a: %q", got)
	}
	if got := openai.FunctionName(b, cl); got != "b" {
		t.Errorf("b: %q", got)
	}
	// Every function name resolves back to its own tool.
	for _, set := range []*conduit.ToolSet{ts, cl} {
		for tl := range set.All() {
			if got := toolcall.InNamespace(set, tl.Server, openai.FunctionName(tl, set)); got != tl.Exposed {
				t.Errorf("%s resolves to %s", tl.Exposed, got)
			}
		}
	}
}

func TestParseNamespace(t *testing.T) {
	raws, err := openai.ResponsesDriver().Parse([]byte(`{"output": [
		{"type": "tool_search_call", "id": "ts_1", "execution": "server", "status": "completed", "arguments": {"query": "notes"}},
		{"type": "tool_search_output", "id": "tso_1", "execution": "server", "status": "completed", "tools": []},
		{"type": "function_call", "call_id": "call_1", "namespace": "notes", "name": "search", "arguments": "{\"q\":\"x\"}"}]}`))
	if err != nil || len(raws) != 1 || raws[0].Namespace != "notes" || raws[0].Name != "search" {
		t.Fatalf("%v %+v", err, raws)
	}
	calls := toolcall.Resolve(raws, hubTools())
	if calls[0].Err != nil || calls[0].Name != "notes__search" || calls[0].Server != "notes" || calls[0].Tool != "search" {
		t.Errorf("resolved %+v", calls[0])
	}
	// The fake writes the namespace back.
	resp := adaptertest.FakeOf(adapters.OpenAIResponses).Response("", toolcall.Raw{ID: "c", Name: "search", Namespace: "notes", Args: map[string]any{}})
	if back, _ := openai.ResponsesDriver().Parse(resp); len(back) != 1 || back[0].Namespace != "notes" {
		t.Errorf("round trip %+v", back)
	}
}
