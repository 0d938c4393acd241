package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/internal/agent"
	"github.com/conduitmcp/conduit/internal/agent/agenttest"
	"github.com/conduitmcp/conduit/internal/demo"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// searchHub is the demo's hub with a policy that lets the model search.
func searchHub(t *testing.T) *conduit.Hub {
	t.Helper()
	ctx := context.Background()
	srvs, stop, err := demo.InProcess(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := conduit.NewHub(ctx, srvs, &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Deny("notes/delete_*").When(conduit.Tainted("web")),
		conduit.Allow("notes/search_*", "web/*", "conduit/search_tools"),
		conduit.Ask("notes/*"),
	)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close(); stop() })
	return hub
}

// A whole loop with conduit's search, for every provider: a call before
// the search is unknown, the search's finds join the next request's tools
// after what was there, and the model calls one of them.
func TestRunConduitSearch(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			f := agenttest.New(t, p, model,
				agenttest.ToolTurn(p,
					agenttest.Call{ID: "c1", Name: "web__fetch", Args: map[string]any{"url": demo.RecipeURL}},
					agenttest.Call{ID: "c2", Name: "search_tools", Args: map[string]any{"query": "fetch a web page", "limit": 2}}),
				agenttest.ToolTurn(p, agenttest.Call{ID: "c3", Name: "web__fetch", Args: map[string]any{"url": demo.RecipeURL}}),
				agenttest.TextTurn(p, "Pasta night is on Friday."))
			o := opts(f)
			o.Search = adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: true}
			res, err := agent.Run(context.Background(), searchHub(t), "pasta?", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop != agent.StopDone || res.Turns != 3 || !slices.Equal(res.Taint, []string{"web"}) {
				t.Fatalf("result %+v", res)
			}
			reqs := f.Requests()
			first, second, third := agenttest.ToolNames(reqs[0].Body), agenttest.ToolNames(reqs[1].Body), agenttest.ToolNames(reqs[2].Body)
			if !slices.Equal(first, []string{"search_tools"}) || len(second) != 3 || second[0] != "search_tools" || !slices.Contains(second, "web__fetch") {
				t.Fatalf("tools: %v, then %v", first, second)
			}
			if !slices.Equal(third, second) {
				t.Errorf("the third request's tools %v, the second's %v", third, second)
			}
			if a, b := canonTools(t, reqs[0].Body), canonTools(t, reqs[1].Body); !strings.HasPrefix(b, strings.TrimSuffix(a, "]")) {
				t.Errorf("the first request's tools are not a prefix of the second's:\n%s\n%s", a, b)
			}
			ids, isErr := agenttest.Answers(p, reqs[1].Body)
			if !slices.Equal(ids, []string{"c1", "c2"}) || !isErr[0] || isErr[1] {
				t.Errorf("answers %v %v: the early call is an error, the search is not", ids, isErr)
			}
			if !strings.Contains(string(mustJSON(t, reqs[1].Body)), "web__fetch: ") {
				t.Error("the search's answer does not name web__fetch")
			}
			ids, isErr = agenttest.Answers(p, reqs[2].Body)
			if !slices.Equal(ids, []string{"c3"}) || isErr[0] {
				t.Errorf("answers %v %v", ids, isErr)
			}
		})
	}
}

// The provider's own search: every tool goes deferred with the search
// tool, the API's search blocks go back as they came, and only the call
// of the tool found is answered.
func TestRunProviderSearch(t *testing.T) {
	anthropicTurn := `{"id": "msg_1", "type": "message", "role": "assistant", "model": "` + model + `", "stop_reason": "tool_use", "content": [
		{"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": {"query": "fetch web page"}},
		{"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {"type": "tool_search_tool_search_result",
			"tool_references": [{"type": "tool_reference", "tool_name": "web__fetch"}]}},
		{"type": "tool_use", "id": "toolu_1", "name": "web__fetch", "input": {"url": "` + demo.RecipeURL + `"}}]}`
	responsesTurn := `{"id": "resp_1", "object": "response", "status": "completed", "output": [
		{"type": "reasoning", "id": "rs_1", "summary": []},
		{"type": "tool_search_call", "id": "tsc_1", "call_id": null, "execution": "server", "status": "completed", "arguments": {"query": "fetch"}},
		{"type": "tool_search_output", "id": "tso_1", "call_id": null, "execution": "server", "status": "completed", "tools": []},
		{"type": "function_call", "id": "fc_1", "call_id": "call_1", "namespace": "web", "name": "fetch", "arguments": "{\"url\": \"` + demo.RecipeURL + `\"}", "status": "completed"}]}`
	for _, tc := range []struct {
		p              adapters.Provider
		turn, searchTy string
		callID         string
		kept           []string // the item types of the turn the next request carries
	}{
		{adapters.Anthropic, anthropicTurn, "tool_search_tool_bm25_20251119", "toolu_1", []string{"server_tool_use", "tool_search_tool_result", "tool_use"}},
		{adapters.OpenAIResponses, responsesTurn, "tool_search", "call_1", []string{"reasoning", "tool_search_call", "tool_search_output", "function_call"}},
	} {
		t.Run(tc.p.String(), func(t *testing.T) {
			f := agenttest.New(t, tc.p, model, tc.turn, agenttest.TextTurn(tc.p, "Pasta night is on Friday."))
			o := opts(f)
			o.Search = adapters.SearchOptions{Mode: adapters.SearchOn}
			res, err := agent.Run(context.Background(), searchHub(t), "pasta?", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop != agent.StopDone || res.Turns != 2 || !slices.Equal(res.Taint, []string{"web"}) {
				t.Fatalf("result %+v", res)
			}
			reqs := f.Requests()
			tools := jsonv.List(reqs[0].Body["tools"])
			if !strings.Contains(string(mustJSON(t, tools)), `"type":"`+tc.searchTy+`"`) || !strings.Contains(string(mustJSON(t, tools)), `"defer_loading":true`) {
				t.Errorf("the first request's tools: %s", mustJSON(t, tools))
			}
			if canonTools(t, reqs[0].Body) != canonTools(t, reqs[1].Body) {
				t.Error("the tool list changed between requests")
			}
			var types []string
			for _, item := range adaptertest.FakeOf(tc.p).Conversation(reqs[1].Body) {
				m := jsonv.Object(item)
				if tc.p == adapters.Anthropic && m["role"] == "assistant" {
					for _, b := range jsonv.List(m["content"]) {
						types = append(types, jsonv.String(jsonv.Object(b)["type"]))
					}
				} else if typ := jsonv.String(m["type"]); typ != "" && typ != "function_call_output" {
					types = append(types, typ)
				}
			}
			if !slices.Equal(types, tc.kept) {
				t.Errorf("the next request carries %v, want %v", types, tc.kept)
			}
			ids, isErr := agenttest.Answers(tc.p, reqs[1].Body)
			if !slices.Equal(ids, []string{tc.callID}) || isErr[0] {
				t.Errorf("answers %v %v, want only %s", ids, isErr, tc.callID)
			}
		})
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

// canonTools is a request's tools as JSON; for Gemini, the
// functionDeclarations.
func canonTools(t *testing.T, body map[string]any) string {
	tools := body["tools"]
	if l := jsonv.List(tools); len(l) == 1 {
		if decls := jsonv.Object(l[0])["functionDeclarations"]; decls != nil {
			tools = decls
		}
	}
	return string(mustJSON(t, tools))
}
