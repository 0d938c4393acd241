package adapters_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestProviderTable(t *testing.T) {
	ps := adapters.Providers()
	var names []string
	for _, p := range ps {
		names = append(names, p.String())
		back, err := adapters.ParseProvider(strings.ToUpper(p.String()))
		if err != nil || back != p {
			t.Errorf("ParseProvider(%s) = %v, %v", p, back, err)
		}
	}
	if !slices.Equal(names, []string{"anthropic", "openai-chat", "openai-responses", "gemini"}) {
		t.Errorf("providers %v", names)
	}
	if _, err := adapters.ParseProvider("claude"); err == nil || !strings.Contains(err.Error(), "anthropic, openai-chat") {
		t.Errorf("ParseProvider(claude): %v", err)
	}
	bad := adapters.Provider(99)
	if bad.String() != "Provider(99)" || bad.Wire().Endpoint != nil || bad.Answer(toolcall.Call{}, nil, nil, nil) != nil {
		t.Error("an invalid provider")
	}
	if _, err := bad.Parse(`{}`); err == nil {
		t.Error("Parse of an invalid provider")
	}
	if _, err := adapters.ExecuteToolCalls(context.Background(), nil, bad, `{}`, nil); err == nil {
		t.Error("ExecuteToolCalls of an invalid provider")
	}
	if _, err := adapters.NewConversation(context.Background(), nil, adapters.Provider(0), nil); err == nil {
		t.Error("NewConversation of an invalid provider")
	}
}

// Every provider's Wire is whole, and its parts agree with one another and
// with Parse and Answer: a response written by Response parses back to its
// calls, reads as a turn, and its answers read back from the conversation.
func TestWireRoundTrip(t *testing.T) {
	calls := []toolcall.Raw{
		{ID: "c1", Name: "srv__search", Args: map[string]any{"q": "pasta", "n": 2.0}},
		{ID: "c2", Name: "srv__ping", Args: map[string]any{}},
	}
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, conduit.ServerTools{Server: "srv", Tools: []*mcp.Tool{
		{Name: "search", InputSchema: map[string]any{"type": "object"}}, {Name: "ping", InputSchema: map[string]any{"type": "object"}}}})
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			w := p.Wire()
			v := reflect.ValueOf(w)
			for i := range v.NumField() {
				if v.Field(i).IsZero() {
					t.Errorf("Wire.%s is not set", v.Type().Field(i).Name)
				}
			}
			if !strings.HasPrefix(w.Endpoint(w.BaseURL, "m"), "https://") {
				t.Errorf("endpoint %s", w.Endpoint(w.BaseURL, "m"))
			}
			h := http.Header{}
			w.Authorize(h, "k")
			if !strings.Contains(strings.Join(slices.Collect(func(yield func(string) bool) {
				for _, vs := range h {
					for _, s := range vs {
						yield(s)
					}
				}
			}), " "), "k") {
				t.Errorf("the key is in no header: %v", h)
			}

			// Through JSON, as it would come off the wire.
			var resp map[string]any
			data, _ := json.Marshal(w.Response("Looking.", calls...))
			if err := json.Unmarshal(data, &resp); err != nil {
				t.Fatal(err)
			}
			raws, err := p.Parse(resp)
			if err != nil || len(raws) != 2 {
				t.Fatalf("Parse: %v, %v", raws, err)
			}
			resolved := toolcall.Resolve(raws, ts)
			for i, c := range resolved {
				if c.Err != nil || c.ID != calls[i].ID || c.Name != calls[i].Name || !reflect.DeepEqual(c.Args, calls[i].Args) {
					t.Errorf("call %d: %+v", i, c)
				}
			}
			turn, err := w.Turn(resp)
			if err != nil || !turn.ToolUse || turn.Text != "Looking." || len(turn.Items) == 0 {
				t.Fatalf("Turn: %+v, %v", turn, err)
			}
			text, err := w.Turn(w.Response("Done."))
			if err != nil || text.ToolUse || text.Text != "Done." {
				t.Fatalf("text Turn: %+v, %v", text, err)
			}

			answers := []map[string]any{
				p.Answer(resolved[0], &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil, nil),
				p.Answer(resolved[1], nil, errors.New("down"), nil),
			}
			conv := append([]any{w.Prompt("hi")}, turn.Items...)
			conv = append(conv, w.Answers(answers)...)
			req := w.Request(toolcall.Request{Model: "m", Tools: []map[string]any{{"name": "x"}}, Conversation: conv})
			if got := w.Conversation(req); !reflect.DeepEqual(got, conv) {
				t.Errorf("Conversation(Request) is not the conversation")
			}
			got := w.Answered(w.Conversation(req))
			want := []toolcall.Answered{{ID: "c1"}, {ID: "c2", Error: true}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Answered %+v, want %+v", got, want)
			}
			if len(w.Answered([]any{w.Prompt("hi")})) != 0 {
				t.Error("a prompt has no answers")
			}
			if _, err := w.Turn(map[string]any{}); err == nil {
				t.Error("Turn of an empty response")
			}
		})
	}
}
