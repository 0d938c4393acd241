package anthropic_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/anthropic"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/fuzzgen"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func weatherTools() *conduit.ToolSet {
	return conduit.NewToolSet(nil, conduit.ServerTools{Server: "weather", Tools: []*mcp.Tool{
		{Name: "get_weather", Description: "Gets\u200b the weather.", InputSchema: map[string]any{
			"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}, "required": []any{"location"}}},
		{Name: "get_time", InputSchema: map[string]any{"type": "object", "properties": map[string]any{}}},
		{Name: "pick", InputSchema: map[string]any{"type": "object", "oneOf": []any{}}},
	}})
}

func TestTools(t *testing.T) {
	ts := weatherTools()
	tools := anthropic.Driver().Tools(ts, nil)
	names := []string{}
	for _, tool := range tools {
		names = append(names, tool["name"].(string))
		if _, ok := tool["cache_control"]; ok {
			t.Error("cache_control without CacheLast")
		}
	}
	if !reflect.DeepEqual(names, []string{"get_time", "get_weather", "pick"}) {
		t.Errorf("names %v", names)
	}
	if _, ok := tools[0]["description"]; ok {
		t.Errorf("a tool without description has one: %v", tools[0])
	}
	if got := tools[1]["description"]; got != "Gets the weather." {
		t.Errorf("description %q", got)
	}
	cached := anthropic.Driver().Tools(ts, &driver.ListOptions{CacheLast: true, CacheTTL: "1h"})
	if got := cached[2]["cache_control"]; !reflect.DeepEqual(got, map[string]any{"type": "ephemeral", "ttl": "1h"}) {
		t.Errorf("cache_control %v", got)
	}
	// Listings do not share their top-level maps: the cached listing left
	// the earlier one alone, and a later one has no cache_control.
	if _, ok := tools[2]["cache_control"]; ok {
		t.Error("listings share maps")
	}
	if _, ok := anthropic.Driver().Tools(ts, nil)[2]["cache_control"]; ok {
		t.Error("cache_control leaked into the memo")
	}
	if got := anthropic.Driver().Tools(ts, &driver.ListOptions{CacheLast: true})[2]["cache_control"]; !reflect.DeepEqual(got, map[string]any{"type": "ephemeral"}) {
		t.Errorf("cache_control %v", got)
	}
	if got := anthropic.Driver().Tools(conduit.NewToolSet(nil), &driver.ListOptions{CacheLast: true}); len(got) != 0 {
		t.Errorf("empty tool set: %v", got)
	}
}

func TestCheck(t *testing.T) {
	ws := anthropic.Driver().Check(weatherTools())
	if len(ws) != 1 || ws[0].Tool != "pick" {
		t.Errorf("warnings %v", ws)
	}
}

func TestParse(t *testing.T) {
	raws, err := anthropic.Driver().Parse(`{"content":[
		{"type":"text","text":"hi"},
		{"type":"tool_use","id":"a","name":"get_weather","input":{"location":"Paris"}},
		{"type":"server_tool_use","id":"srv","name":"web_search","input":{}},
		{"type":"mcp_tool_use","id":"m","name":"x","server_name":"s","input":{}},
		{"type":"tool_use","name":"get_time","input":{}},
		"junk",
		{"type":"tool_use","id":"c","name":"get_time"}
	]}`)
	if err != nil {
		t.Fatal(err)
	}
	// A block without "input" is malformed: its arguments are JSON null,
	// which resolution refuses, never the empty object.
	if len(raws) != 3 || raws[0].ID != "a" || raws[1].Err == nil || !reflect.DeepEqual(raws[2].Args, any(json.RawMessage("null"))) {
		t.Errorf("%+v", raws)
	}
	// An assistant message parses as well.
	if raws, err := anthropic.Driver().Parse(map[string]any{"role": "assistant", "content": []any{}}); err != nil || len(raws) != 0 {
		t.Errorf("%v %v", raws, err)
	}
	for _, bad := range []string{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, `{"content":"text"}`, `[]`, `{}`} {
		if _, err := anthropic.Driver().Parse(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestToolCalls(t *testing.T) {
	ts := weatherTools()
	calls, rejected, err := adapters.Anthropic.ToolCalls(`{"content":[
		{"type":"tool_use","id":"a","name":"get_weather","input":{"location":"Paris"}},
		{"type":"tool_use","id":"b","name":"nope","input":{}},
		{"type":"tool_use","id":"c","name":"get_time","input":[1]}
	]}`, ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Server != "weather" || calls[0].Tool != "get_weather" {
		t.Errorf("calls %+v", calls)
	}
	if len(rejected) != 2 || rejected[0]["tool_use_id"] != "b" || rejected[0]["is_error"] != true || rejected[1]["tool_use_id"] != "c" {
		t.Errorf("rejected %v", rejected)
	}
}

func TestToolResult(t *testing.T) {
	c := toolcall.Call{ID: "toolu_1"}
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		err  error
		want string
	}{
		{"text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "15 degrees"}}},
			nil, `{"content":[{"text":"15 degrees","type":"text"}],"tool_use_id":"toolu_1","type":"tool_result"}`},
		{"empty success", &mcp.CallToolResult{}, nil, `{"tool_use_id":"toolu_1","type":"tool_result"}`},
		{"whitespace text dropped", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: " \n"}, &mcp.TextContent{Text: "x"}}},
			nil, `{"content":[{"text":"x","type":"text"}],"tool_use_id":"toolu_1","type":"tool_result"}`},
		{"isError", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}},
			nil, `{"content":[{"text":"disk full","type":"text"}],"is_error":true,"tool_use_id":"toolu_1","type":"tool_result"}`},
		{"empty isError", &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: ""}}},
			nil, `{"content":[{"text":"The tool reported an error without details.","type":"text"}],"is_error":true,"tool_use_id":"toolu_1","type":"tool_result"}`},
		{"failure", nil, &conduit.Error{Kind: conduit.ErrDenied, Message: "Not allowed."},
			`{"content":[{"text":"Not allowed.","type":"text"}],"is_error":true,"tool_use_id":"toolu_1","type":"tool_result"}`},
		{"plain error", nil, errors.New("boom"),
			`{"content":[{"text":"boom","type":"text"}],"is_error":true,"tool_use_id":"toolu_1","type":"tool_result"}`},
		{"nothing", nil, nil,
			`{"content":[{"text":"The call produced no result.","type":"text"}],"is_error":true,"tool_use_id":"toolu_1","type":"tool_result"}`},
	}
	for _, tt := range tests {
		got, _ := json.Marshal(adapters.Anthropic.Answer(c, tt.res, tt.err, nil))
		if string(got) != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// TestConformance runs the suite every provider passes.
func TestConformance(t *testing.T) {
	adaptertest.RunConformanceTests(t, adaptertest.Of(adapters.Anthropic))
}

// FuzzParse feeds arbitrary bytes to Parse: it must not panic, and every
// call it finds is answered, under every outcome, by a tool_result keyed
// by the call's id (adaptertest.CheckAnswers). The same bytes also make a
// valid response (see roundTrip), which must parse back to exactly its
// calls.
func FuzzParse(f *testing.F) {
	adaptertest.SeedCorpus(f, filepath.Join("..", "testdata", "anthropic"))
	f.Add([]byte(`{"content":[{"type":"tool_use","id":"a","name":"get_weather","input":{"location":"x"}}]}`))
	f.Add([]byte(`{"content":[{"type":"tool_use","id":"\ud800","name":7,"input":"s"}]}`))
	// "input" null or missing: malformed, answered as not an object.
	f.Add([]byte(`{"content":[{"type":"tool_use","id":"a","name":"get_weather","input":null},{"type":"tool_use","id":"b","name":"get_weather"}]}`))
	adaptertest.Fuzz(f, adaptertest.Of(adapters.Anthropic), weatherTools(), roundTrip)
}

// roundTrip builds a Messages response from the turn data makes, in the
// shape of the documented examples (a text block, tool_use blocks, and as
// noise a thinking block and a server tool's blocks, which are not calls),
// and checks that Parse finds exactly the turn's calls, from the bytes and
// from the decoded value alike.
func roundTrip(t *testing.T, data []byte) {
	turn := fuzzgen.New(data, false)
	var content []any
	if turn.Noise {
		content = append(content, map[string]any{"type": "thinking", "thinking": turn.Text, "signature": "sig"})
	}
	if turn.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	for i, c := range turn.Calls {
		if turn.Noise && i == 1 {
			content = append(content,
				map[string]any{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": map[string]any{"query": turn.Text}},
				map[string]any{"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []any{}})
		}
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Args})
	}
	if content == nil {
		content = []any{}
	}
	resp := map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
		"content": content, "stop_reason": "tool_use", "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}
	fuzzgen.RoundTrip(t, turn, resp, anthropic.Driver().Parse)
}
