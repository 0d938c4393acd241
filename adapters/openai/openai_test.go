package openai_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/openai"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/fuzzgen"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func oaTools() *conduit.ToolSet {
	return conduit.NewToolSet(nil, conduit.ServerTools{Server: "notes", Tools: []*mcp.Tool{
		{Name: "search", Description: "Searches\u00ad the notes.", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"q": map[string]any{"type": "string"}, "limit": map[string]any{"type": "integer"}}, "required": []any{"q"}}},
		{Name: "pick", InputSchema: map[string]any{"type": "object", "oneOf": []any{
			map[string]any{"properties": map[string]any{"id": map[string]any{"type": "string"}}}}}},
		{Name: "ping", InputSchema: map[string]any{"type": "object"}},
	}})
}

func oaJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// report is what a listing's strict mode did, as adapters reads it.
type report struct {
	Fallbacks []fallback
	Excluded  []string
	NullPaths map[string][]driver.NullPath
}

type fallback struct {
	Tool string
	Err  error
}

// tools is d's listing of ts, and its report from driver.Strict.
func tools(d driver.Provider, ts *conduit.ToolSet, o *driver.ListOptions) ([]map[string]any, report) {
	if o == nil {
		o = &driver.ListOptions{}
	}
	rep := report{NullPaths: map[string][]driver.NullPath{}}
	for t := range ts.All() {
		r := d.(driver.Strict).StrictTool(t, o)
		switch {
		case r.Excluded:
			rep.Excluded = append(rep.Excluded, t.Exposed)
			continue
		case r.Fallback != nil:
			rep.Fallbacks = append(rep.Fallbacks, fallback{t.Exposed, r.Fallback})
		}
		if len(r.NullPaths) > 0 {
			rep.NullPaths[t.Exposed] = r.NullPaths
		}
	}
	return d.Tools(ts, o), rep
}

func TestToolsShapes(t *testing.T) {
	ts := oaTools()
	chat, rep := tools(openai.ChatDriver(), ts, nil)
	want := `[{"function":{"name":"pick","parameters":{"oneOf":[{"properties":{"id":{"type":"string"}}}],"type":"object"},"strict":false},"type":"function"},` +
		`{"function":{"name":"ping","parameters":{"additionalProperties":false,"properties":{},"required":[],"type":"object"},"strict":true},"type":"function"},` +
		`{"function":{"description":"Searches the notes.","name":"search","parameters":{"additionalProperties":false,"properties":{"limit":{"type":["integer","null"]},"q":{"type":"string"}},"required":["limit","q"],"type":"object"},"strict":true},"type":"function"}]`
	if got := oaJSON(chat); got != want {
		t.Errorf("chat:\n got %s\nwant %s", got, want)
	}
	if len(rep.Fallbacks) != 1 || rep.Fallbacks[0].Tool != "pick" || !errors.Is(rep.Fallbacks[0].Err, driver.ErrNotStrict) {
		t.Errorf("fallbacks %+v", rep.Fallbacks)
	}
	if !reflect.DeepEqual(rep.NullPaths, map[string][]driver.NullPath{"search": {{"limit"}}}) || rep.Excluded != nil {
		t.Errorf("report %+v", rep)
	}
	responses, _ := tools(openai.ResponsesDriver(), ts, nil)
	for i, r := range responses {
		fn := chat[i]["function"].(map[string]any)
		if r["type"] != "function" || r["name"] != fn["name"] || !reflect.DeepEqual(r["parameters"], fn["parameters"]) || r["strict"] != fn["strict"] {
			t.Errorf("responses tool %d: %v", i, r)
		}
		if _, ok := r["function"]; ok {
			t.Errorf("responses tool %d is nested", i)
		}
	}
}

func TestToolsStrictTable(t *testing.T) {
	ts := oaTools()
	on, rep := tools(openai.ResponsesDriver(), ts, &driver.ListOptions{Strict: driver.StrictOn})
	if len(on) != 2 || !reflect.DeepEqual(rep.Excluded, []string{"pick"}) || rep.Fallbacks != nil {
		t.Errorf("strict on: %d tools, %+v", len(on), rep)
	}
	for _, tool := range on {
		if tool["strict"] != true {
			t.Errorf("strict on: %v", tool)
		}
	}
	off, rep := tools(openai.ResponsesDriver(), ts, &driver.ListOptions{Strict: driver.StrictOff})
	if len(off) != 3 || rep.Excluded != nil || rep.Fallbacks != nil || len(rep.NullPaths) != 0 {
		t.Errorf("strict off: %d tools, %+v", len(off), rep)
	}
	for _, tool := range off {
		if tool["strict"] != false {
			t.Errorf("strict off: %v", tool)
		}
	}
	// The original schema, with "type": "object" filled in.
	if got := oaJSON(off[1]["parameters"]); got != `{"type":"object"}` {
		t.Errorf("strict off ping: %s", got)
	}
	// Memoized per API and choice: a listing after another gets the same.
	again, _ := tools(openai.ResponsesDriver(), ts, &driver.ListOptions{Strict: driver.StrictOn})
	if !reflect.DeepEqual(on, again) {
		t.Error("listings differ")
	}
	again[0]["strict"] = "vandalized"
	if third, _ := tools(openai.ResponsesDriver(), ts, &driver.ListOptions{Strict: driver.StrictOn}); third[0]["strict"] != true {
		t.Error("a listing's top-level map is shared with the memo")
	}
}

// maxTools is the most tools OpenAI documents in one request.
const maxTools = 128

func TestCheck(t *testing.T) {
	var tools []*mcp.Tool
	for i := range maxTools + 1 {
		tools = append(tools, &mcp.Tool{Name: fmt.Sprintf("t%03d", i), InputSchema: map[string]any{"type": "object"}})
	}
	ts := conduit.NewToolSet(nil, conduit.ServerTools{Server: "s", Tools: tools[:maxTools]})
	if ws := openai.ChatDriver().Check(ts); ws != nil {
		t.Errorf("%v", ws)
	}
	ts = conduit.NewToolSet(nil, conduit.ServerTools{Server: "s", Tools: tools})
	if ws := openai.ChatDriver().Check(ts); len(ws) != 1 || ws[0].Tool != "" {
		t.Errorf("%v", ws)
	}
}

func TestParseChat(t *testing.T) {
	raws, err := openai.ChatDriver().Parse(`{"choices":[{"message":{"role":"assistant","tool_calls":[
		{"id":"a","type":"function","function":{"name":"search","arguments":"{\"q\":\"x\"}"}},
		{"id":"b","type":"function","function":{"name":"search","arguments":"{\"q\":"}},
		{"id":"c","type":"function","function":{"name":"ping","arguments":""}},
		{"id":"d","type":"function","function":{"name":"ping","arguments":{"already":"decoded"}}},
		{"id":"e","type":"custom","custom":{"name":"grammar","input":"x"}},
		{"id":"f","type":"function"},
		7
	]}},{"message":{"tool_calls":[{"id":"second choice"}]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(raws) != 6 {
		t.Fatalf("%d calls", len(raws))
	}
	// Arguments are resolved with the tool set: invalid JSON and a custom
	// call are answered, an empty string is no arguments.
	ts := conduit.NewToolSet(nil, conduit.ServerTools{Server: "s", Tools: []*mcp.Tool{
		{Name: "search", InputSchema: map[string]any{"type": "object"}},
		{Name: "ping", InputSchema: map[string]any{"type": "object"}},
		{Name: "grammar", InputSchema: map[string]any{"type": "object"}},
	}})
	calls := toolcall.Resolve(raws, ts)
	if calls[0].Err != nil || calls[0].Args["q"] != "x" || calls[1].Err == nil ||
		calls[2].Err != nil || len(calls[2].Args) != 0 || calls[3].Err != nil || calls[3].Args["already"] != "decoded" ||
		calls[4].Err == nil || raws[4].Name != "grammar" || calls[5].Err == nil {
		t.Errorf("%+v", calls)
	}
	if !strings.Contains(calls[1].Err.Message, "not valid JSON") || !strings.Contains(calls[4].Err.Message, "custom tool call") {
		t.Errorf("%q, %q", calls[1].Err.Message, calls[4].Err.Message)
	}
	// A message on its own parses too; so does a response without calls.
	if raws, err := openai.ChatDriver().Parse(`{"role":"assistant","content":"hi"}`); err != nil || len(raws) != 0 {
		t.Errorf("%v %v", raws, err)
	}
	if raws, err := openai.ChatDriver().Parse(`{"choices":[]}`); err != nil || len(raws) != 0 {
		t.Errorf("%v %v", raws, err)
	}
	for _, bad := range []string{`{"error":{"message":"Rate limit reached","type":"requests"}}`, `{"choices":[{}]}`, `{"id":"x"}`} {
		if _, err := openai.ChatDriver().Parse(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestParseResponses(t *testing.T) {
	raws, err := openai.ResponsesDriver().Parse(`{"output":[
		{"type":"reasoning","id":"rs_1","summary":[]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]},
		{"type":"function_call","id":"fc_1","call_id":"call_1","name":"search","arguments":"{\"q\":\"x\"}"},
		{"type":"web_search_call","id":"ws_1","status":"completed"},
		{"type":"function_call","id":"fc_2","call_id":"call_2","name":"search","arguments":"[1]"}
	]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(raws) != 2 || raws[0].ID != "call_1" || raws[1].ID != "call_2" {
		t.Errorf("%+v", raws)
	}
	for _, bad := range []string{`{"error":{"message":"bad","code":"server_error"}}`, `{"output":{}}`, `{}`} {
		if _, err := openai.ResponsesDriver().Parse(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestToolCalls(t *testing.T) {
	calls, rejected, err := adapters.OpenAIResponses.ToolCalls(`{"output":[
		{"type":"function_call","call_id":"a","name":"search","arguments":"{\"q\":\"x\"}"},
		{"type":"function_call","call_id":"b","name":"nope","arguments":"{}"},
		{"type":"function_call","call_id":"c","name":"search","arguments":"{oops"}]}`, oaTools())
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Args["q"] != "x" {
		t.Errorf("%+v", calls)
	}
	want := `[{"call_id":"b","output":"Error: Unknown tool \"nope\": it is not among the tools offered.","type":"function_call_output"},` +
		`{"call_id":"c","output":"Error: Invalid arguments for search: the arguments are not valid JSON (invalid character 'o' looking for beginning of object key string).","type":"function_call_output"}]`
	if got := oaJSON(rejected); got != want {
		t.Errorf("rejected:\n got %s\nwant %s", got, want)
	}
}

func TestAnswer(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	img := &mcp.ImageContent{MIMEType: "image/png", Data: png}
	c := toolcall.Call{ID: "call_1"}
	prefix := "ERR "
	tests := []struct {
		name string
		api  adapters.Provider
		res  *mcp.CallToolResult
		err  error
		o    *toolcall.AnswerOptions
		want string
	}{
		{"chat text", adapters.OpenAIChat, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, nil, nil,
			`{"content":"a\nb","role":"tool","tool_call_id":"call_1"}`},
		{"chat image placeholder", adapters.OpenAIChat, &mcp.CallToolResult{Content: []mcp.Content{img}}, nil, nil,
			`{"content":"[image: image/png, 16 bytes]","role":"tool","tool_call_id":"call_1"}`},
		{"chat failure", adapters.OpenAIChat, nil, &conduit.Error{Message: "Denied."}, nil,
			`{"content":"Error: Denied.","role":"tool","tool_call_id":"call_1"}`},
		{"chat isError", adapters.OpenAIChat, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}}, nil, nil,
			`{"content":"Error: disk full","role":"tool","tool_call_id":"call_1"}`},
		{"chat empty isError", adapters.OpenAIChat, &mcp.CallToolResult{IsError: true}, nil, nil,
			`{"content":"Error: The tool reported an error without details.","role":"tool","tool_call_id":"call_1"}`},
		{"chat prefix", adapters.OpenAIChat, nil, errors.New("x"), &toolcall.AnswerOptions{ErrorPrefix: prefix},
			`{"content":"ERR x","role":"tool","tool_call_id":"call_1"}`},
		{"responses text", adapters.OpenAIResponses, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}}}, nil, nil,
			`{"call_id":"call_1","output":"a","type":"function_call_output"}`},
		{"responses image", adapters.OpenAIResponses, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "see"}, img, &mcp.TextContent{Text: ""}}}, nil, nil,
			`{"call_id":"call_1","output":[{"text":"see","type":"input_text"},{"detail":"auto","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==","type":"input_image"}],"type":"function_call_output"}`},
		{"responses isError with image", adapters.OpenAIResponses, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad render"}, img}}, nil, nil,
			`{"call_id":"call_1","output":[{"text":"Error: bad render","type":"input_text"},{"detail":"auto","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==","type":"input_image"}],"type":"function_call_output"}`},
		{"responses isError image first", adapters.OpenAIResponses, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{img}}, nil, nil,
			`{"call_id":"call_1","output":[{"text":"Error:","type":"input_text"},{"detail":"auto","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==","type":"input_image"}],"type":"function_call_output"}`},
		{"responses failure", adapters.OpenAIResponses, nil, &conduit.Error{Message: "Timed out."}, nil,
			`{"call_id":"call_1","output":"Error: Timed out.","type":"function_call_output"}`},
	}
	for _, tt := range tests {
		if got := oaJSON(tt.api.Answer(c, tt.res, tt.err, tt.o)); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// TestConformance runs the suite every provider passes, for both APIs.
func TestConformance(t *testing.T) {
	t.Run("chat", func(t *testing.T) { adaptertest.RunConformanceTests(t, adaptertest.Of(adapters.OpenAIChat)) })
	t.Run("responses", func(t *testing.T) { adaptertest.RunConformanceTests(t, adaptertest.Of(adapters.OpenAIResponses)) })
}

func FuzzParseChat(f *testing.F)      { fuzzParse(f, adapters.OpenAIChat) }
func FuzzParseResponses(f *testing.F) { fuzzParse(f, adapters.OpenAIResponses) }

// fuzzParse feeds arbitrary bytes to Parse: it must not panic, and every
// call it finds is answered, under every outcome, by an answer keyed by
// the call's id (adaptertest.CheckAnswers). The same bytes also make a
// valid response (see responseRoundTrip), which must parse back to
// exactly its calls.
func fuzzParse(f *testing.F, p adapters.Provider) {
	adaptertest.SeedCorpus(f, filepath.Join("..", "testdata", p.String()))
	f.Add([]byte(`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"search","arguments":"{\"q\":1}"}}]}}]}`))
	f.Add([]byte(`{"output":[{"type":"function_call","call_id":"a","name":"search","arguments":"\"s\""}]}`))
	// "arguments" null or missing: malformed, answered as not an object.
	f.Add([]byte(`{"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"search","arguments":null}},{"id":"b","function":{"name":"search"}}]}}]}`))
	f.Add([]byte(`{"output":[{"type":"function_call","call_id":"a","name":"search","arguments":null},{"type":"function_call","call_id":"b","name":"search"}]}`))
	adaptertest.Fuzz(f, adaptertest.Of(p), oaTools(), func(t *testing.T, data []byte) { responseRoundTrip(t, p, data) })
}

// responseRoundTrip builds a response of api from the turn data makes, in the
// shape of the documented examples (Chat: a message with content and
// tool_calls whose arguments are JSON text; Responses: function_call items
// and, as noise, a reasoning and a message item), and checks that Parse
// finds exactly the turn's calls, from the bytes and from the decoded
// value alike.
func responseRoundTrip(t *testing.T, api adapters.Provider, data []byte) {
	turn := fuzzgen.New(data, false)
	argText := func(a map[string]any) string {
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var resp map[string]any
	if api == adapters.OpenAIResponses {
		out := []any{}
		if turn.Noise {
			out = append(out, map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{}})
		}
		if turn.Text != "" {
			out = append(out, map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": turn.Text, "annotations": []any{}}}})
		}
		for i, c := range turn.Calls {
			out = append(out, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", i), "call_id": c.ID,
				"name": c.Name, "arguments": argText(c.Args), "status": "completed"})
		}
		resp = map[string]any{"id": "resp_1", "object": "response", "status": "completed", "output": out}
	} else {
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
		if turn.Text != "" {
			msg["content"] = turn.Text
		}
		if len(turn.Calls) > 0 || turn.Noise {
			tcs := []any{}
			for _, c := range turn.Calls {
				tcs = append(tcs, map[string]any{"id": c.ID, "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": argText(c.Args)}})
			}
			msg["tool_calls"] = tcs
		}
		resp = map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "choices": []any{map[string]any{
			"index": 0, "message": msg, "finish_reason": "tool_calls"}}}
	}
	fuzzgen.RoundTrip(t, turn, resp, api.Parse)
}
