package gemini_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/gemini"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/fuzzgen"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func lights() *conduit.ToolSet {
	return conduit.NewToolSet(nil, conduit.ServerTools{Server: "home", Tools: []*mcp.Tool{
		{Name: "set_light_values", Description: "Sets the brightness\u200b and color temperature of a light.", InputSchema: map[string]any{
			"type": "object", "properties": map[string]any{
				"brightness": map[string]any{"type": "integer"},
				"color_temp": map[string]any{"type": "string", "enum": []any{"daylight", "cool", "warm"}}},
			"required": []any{"brightness", "color_temp"}, "$defs": map[string]any{}, "additionalProperties": false}},
		{Name: "dim_lights", InputSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"brightness": {Type: "number"}}}},
	}})
}

func gJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func TestTools(t *testing.T) {
	tools := gemini.Driver().Tools(lights(), nil)
	want := `[{"description":"","name":"dim_lights","parametersJsonSchema":{"properties":{"brightness":{"type":"number"}},"type":"object"}},` +
		`{"description":"Sets the brightness and color temperature of a light.","name":"set_light_values","parametersJsonSchema":{"$defs":{},"additionalProperties":false,"properties":{"brightness":{"type":"integer"},"color_temp":{"enum":["daylight","cool","warm"],"type":"string"}},"required":["brightness","color_temp"],"type":"object"}}]`
	if got := gJSON(tools); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if ws := gemini.Driver().Check(lights()); ws != nil {
		t.Errorf("warnings %v", ws)
	}
}

func TestParse(t *testing.T) {
	raws, err := gemini.Driver().Parse(`{"candidates":[{"content":{"role":"model","parts":[
		{"text":"ok"},
		{"functionCall":{"id":"a","name":"set_light_values","args":{"brightness":25,"color_temp":"warm"}},"thoughtSignature":"sig"},
		{"functionCall":{"name":"dim_lights","args":{"brightness":0.5}}},
		{"functionCall":{"name":"dim_lights"}},
		{"functionCall":{"name":"dim_lights","args":[1]}},
		{"executableCode":{"language":"PYTHON","code":"print(1)"}}
	]}},{"content":{"parts":[{"functionCall":{"name":"second candidate"}}]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(raws) != 4 || raws[0].ID != "a" || raws[1].ID != "" || raws[2].Args != nil {
		t.Errorf("%+v", raws)
	}
	// A Content parses as well; a blocked prompt or candidate has no calls.
	for _, ok := range []string{`{"role":"model","parts":[]}`, `{"promptFeedback":{"blockReason":"SAFETY"}}`,
		`{"candidates":[{"finishReason":"SAFETY"}]}`, `{"candidates":[]}`} {
		if raws, err := gemini.Driver().Parse(ok); err != nil || len(raws) != 0 {
			t.Errorf("%s: %v %v", ok, raws, err)
		}
	}
	for _, bad := range []string{`{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}`,
		`{"candidates":[{"content":{"parts":{}}}]}`, `{}`} {
		if _, err := gemini.Driver().Parse(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestFunctionCalls(t *testing.T) {
	calls, rejected, err := adapters.Gemini.ToolCalls(`{"candidates":[{"content":{"parts":[
		{"functionCall":{"id":"a","name":"set_light_values","args":{"brightness":25,"color_temp":"warm"}}},
		{"functionCall":{"name":"nope","args":{}}},
		{"functionCall":{"id":"c","name":"dim_lights","args":"dim"}}]}}]}`, lights())
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Tool != "set_light_values" {
		t.Errorf("%+v", calls)
	}
	want := `[{"functionResponse":{"name":"nope","response":{"error":"Unknown tool \"nope\": it is not among the tools offered."}}},` +
		`{"functionResponse":{"id":"c","name":"dim_lights","response":{"error":"Invalid arguments for dim_lights: the arguments must be a JSON object."}}}]`
	if got := gJSON(rejected); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}

func TestFunctionResponse(t *testing.T) {
	sc := map[string]any{"brightness": 25.0}
	tests := []struct {
		name string
		c    toolcall.Call
		res  *mcp.CallToolResult
		err  error
		o    *toolcall.AnswerOptions
		want string
	}{
		{"structured prefers the object", toolcall.Call{ID: "a", Name: "set"}, &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: "done"}}, StructuredContent: sc}, nil, nil,
			`{"functionResponse":{"id":"a","name":"set","response":{"output":{"brightness":25}}}}`},
		{"text, no id", toolcall.Call{Name: "set"}, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil,
			`{"functionResponse":{"name":"set","response":{"output":"done"}}}`},
		{"ignore", toolcall.Call{Name: "set"}, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}, StructuredContent: sc}, nil,
			&toolcall.AnswerOptions{Structured: toolcall.StructuredIgnore},
			`{"functionResponse":{"name":"set","response":{"output":"done"}}}`},
		{"isError shows its words", toolcall.Call{Name: "set"}, &mcp.CallToolResult{IsError: true,
			Content: []mcp.Content{&mcp.TextContent{Text: "bulb missing"}}, StructuredContent: sc}, nil, nil,
			`{"functionResponse":{"name":"set","response":{"error":"bulb missing"}}}`},
		{"isError structured only", toolcall.Call{Name: "set"}, &mcp.CallToolResult{IsError: true, StructuredContent: sc}, nil, nil,
			`{"functionResponse":{"name":"set","response":{"error":"{\"brightness\":25}"}}}`},
		{"empty isError", toolcall.Call{Name: "set"}, &mcp.CallToolResult{IsError: true}, nil, nil,
			`{"functionResponse":{"name":"set","response":{"error":"The tool reported an error without details."}}}`},
		{"failure", toolcall.Call{ID: "x", Name: "set"}, nil, &conduit.Error{Message: "Denied."}, nil,
			`{"functionResponse":{"id":"x","name":"set","response":{"error":"Denied."}}}`},
		{"plain error", toolcall.Call{Name: "set"}, nil, errors.New("boom"), nil,
			`{"functionResponse":{"name":"set","response":{"error":"boom"}}}`},
	}
	for _, tt := range tests {
		if got := gJSON(adapters.Gemini.Answer(tt.c, tt.res, tt.err, tt.o)); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
	// The structuredContent value is handed over as plain JSON.
	type light struct {
		Brightness int `json:"brightness"`
	}
	fr := adapters.Gemini.Answer(toolcall.Call{Name: "set"}, &mcp.CallToolResult{StructuredContent: light{7}}, nil, nil)
	if got := fr["functionResponse"].(map[string]any)["response"].(map[string]any)["output"]; !reflect.DeepEqual(got, map[string]any{"brightness": 7.0}) {
		t.Errorf("%#v", got)
	}
}

// TestConformance runs the suite every provider passes.
func TestConformance(t *testing.T) {
	adaptertest.RunConformanceTests(t, adaptertest.Of(adapters.Gemini))
}

// FuzzParse feeds arbitrary bytes to Parse: it must not panic, and every
// call it finds is answered, under every outcome, by a functionResponse
// part keyed by the call's id, or its name when it has none
// (adaptertest.CheckAnswers). The same bytes also make a valid response
// (see roundTrip), which must parse back to exactly its calls.
func FuzzParse(f *testing.F) {
	adaptertest.SeedCorpus(f, filepath.Join("..", "testdata", "gemini"))
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"a","name":"dim_lights","args":{"brightness":1}}}]}}]}`))
	f.Add([]byte(`{"parts":[{"functionCall":{"name":3,"args":null}}]}`))
	adaptertest.Fuzz(f, adaptertest.Of(adapters.Gemini), lights(), roundTrip)
}

// roundTrip builds a generateContent response from the turn data makes, in
// the shape of the documented examples (a text part, functionCall parts
// with or without ids, and as noise a thought part and a thoughtSignature),
// and checks that Parse finds exactly the turn's calls, from the bytes and
// from the decoded value alike.
func roundTrip(t *testing.T, data []byte) {
	turn := fuzzgen.New(data, true)
	var parts []any
	if turn.Noise {
		parts = append(parts, map[string]any{"text": turn.Text, "thought": true})
	}
	if turn.Text != "" {
		parts = append(parts, map[string]any{"text": turn.Text})
	}
	for i, c := range turn.Calls {
		fc := map[string]any{"name": c.Name, "args": c.Args}
		if c.ID != "" {
			fc["id"] = c.ID
		}
		part := map[string]any{"functionCall": fc}
		if turn.Noise && i == 0 {
			part["thoughtSignature"] = "c2ln"
		}
		parts = append(parts, part)
	}
	if parts == nil {
		parts = []any{}
	}
	resp := map[string]any{"candidates": []any{map[string]any{
		"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 1}, "modelVersion": "gemini"}
	fuzzgen.RoundTrip(t, turn, resp, gemini.Driver().Parse)
}
