package conduit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDeepCallInABatch: a model's response with a call whose arguments
// nest 5,000 levels deep and a normal call to the same SDK server: the
// deep one is answered with ErrLimit and never reaches the server, the
// other is answered by the server, for Anthropic (arguments as an object)
// and OpenAI Chat (as a JSON string).
func TestDeepCallInABatch(t *testing.T) {
	var deep, echo atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "deep", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		deep.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deep"}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		echo.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed"}}}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "s", Transport: ct}}, &conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()

	nested := `{"a":` + strings.Repeat("[", 4999) + strings.Repeat("]", 4999) + `}`
	quoted, _ := json.Marshal(nested)
	responses := map[adapters.Provider]string{
		adapters.Anthropic: `{"role":"assistant","stop_reason":"tool_use","content":[
			{"type":"tool_use","id":"c1","name":"s__deep","input":` + nested + `},
			{"type":"tool_use","id":"c2","name":"s__echo","input":{}}]}`,
		adapters.OpenAIChat: `{"choices":[{"finish_reason":"tool_calls","message":{"role":"assistant","tool_calls":[
			{"id":"c1","type":"function","function":{"name":"s__deep","arguments":` + string(quoted) + `}},
			{"id":"c2","type":"function","function":{"name":"s__echo","arguments":"{}"}}]}}]}`,
	}
	for p, body := range responses {
		before := echo.Load()
		exec, err := adapters.ExecuteToolCalls(ctx, hub, p, []byte(body), nil)
		if err != nil {
			t.Fatal(p, err)
		}
		if len(exec.Errors) != 2 {
			t.Fatalf("%v: %d answers", p, len(exec.Errors))
		}
		if !errors.Is(exec.Errors[0], conduit.ErrLimit) {
			t.Errorf("%v: the deep call: %v", p, exec.Errors[0])
		}
		if exec.Errors[1] != nil || echo.Load() != before+1 {
			t.Errorf("%v: the normal call: %v", p, exec.Errors[1])
		}
		if !strings.Contains(string(mustJSON(t, exec.Results[0])), "deeper than the limit of 64 levels") {
			t.Errorf("%v: the model is told %s", p, mustJSON(t, exec.Results[0]))
		}
	}
	if n := deep.Load(); n != 0 {
		t.Fatalf("the server received %d deep calls", n)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
