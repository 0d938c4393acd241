package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/agent/agenttest"
)

const model = "test-model"

func agentRun(t *testing.T, f *agenttest.Fake, dir string, extra ...string) result {
	t.Helper()
	args := append([]string{"agent", "--provider", f.Provider.String(), "--model", model, "--base-url", f.URL}, extra...)
	return conduit(t, runOpts{dir: dir, env: []string{f.Provider.Wire().KeyEnv + "=" + agenttest.Key}}, args...)
}

func TestAgentEveryProvider(t *testing.T) {
	dir := demoDir(t)
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			f := agenttest.New(t, p, model,
				agenttest.ToolTurn(p,
					agenttest.Call{ID: "c1", Name: "notes__search_notes", Args: map[string]any{"query": "pasta"}},
					agenttest.Call{ID: "c2", Name: "web__fetch", Args: map[string]any{"url": "https://example.com/recipes/pasta"}}),
				agenttest.TextTurn(p, "Pasta night is on Friday."))
			r := agentRun(t, f, dir, "when", "is", "pasta", "night?")
			expect(t, r, 0, "turn 1: 2 tool call(s)", "call 1 notes__search_notes: ok", "call 2 web__fetch: ok")
			if r.stdout != "Pasta night is on Friday.\n" {
				t.Errorf("stdout %q", r.stdout)
			}
			reqs := f.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i, req := range reqs {
				if got := agenttest.ToolNames(req.Body); !slices.Equal(got, allTools) {
					t.Errorf("request %d offered %v", i, got)
				}
			}
			if !strings.Contains(mustJSON(reqs[0].Body), "when is pasta night?") {
				t.Errorf("the prompt is not in the first request: %s", mustJSON(reqs[0].Body))
			}
			ids, isErr := agenttest.Answers(p, reqs[1].Body)
			if !slices.Equal(ids, []string{"c1", "c2"}) || slices.Contains(isErr, true) {
				t.Errorf("answers %v %v", ids, isErr)
			}
		})
	}
}

func TestAgentTaintAndJSON(t *testing.T) {
	dir := demoDir(t)
	p := adapters.OpenAIResponses
	f := agenttest.New(t, p, model,
		agenttest.ToolTurn(p, agenttest.Call{ID: "c1", Name: "web__fetch", Args: map[string]any{"url": "https://example.com/recipes/pasta"}}),
		agenttest.ToolTurn(p, agenttest.Call{ID: "c2", Name: "notes__delete_note", Args: map[string]any{"id": "n1"}}),
		agenttest.TextTurn(p, "I did not delete anything."))
	// --approve allow would let the delete run; the taint rule comes first.
	r := agentRun(t, f, dir, "--json", "--approve", "allow", "go")
	expect(t, r, 0, "call 1 notes__delete_note: denied")
	var out struct {
		Stop, Text string
		Turns      int
		Taint      []string
		Messages   []map[string]any
	}
	decode(t, r, &out)
	// The denied delete sent nothing: notes' output never reached the
	// model. The conversation: the prompt, three turns of reasoning, text
	// and a call or the final text, and two answers.
	if out.Stop != "done" || out.Turns != 3 || !slices.Equal(out.Taint, []string{"web"}) || len(out.Messages) != 10 {
		t.Errorf("result %+v", out)
	}
	ids, isErr := agenttest.Answers(p, f.Requests()[2].Body)
	if !slices.Equal(ids, []string{"c2"}) || !isErr[0] {
		t.Errorf("answers %v %v", ids, isErr)
	}
}

func TestAgentMaxTurns(t *testing.T) {
	p := adapters.Gemini
	turn := agenttest.ToolTurn(p, agenttest.Call{Name: "notes__search_notes", Args: map[string]any{"query": "x"}})
	f := agenttest.New(t, p, model, turn, turn, turn)
	r := agentRun(t, f, demoDir(t), "--max-turns", "2", "loop")
	expect(t, r, 1, "after 2 turn(s); raise --max-turns")
	if n := len(f.Requests()); n != 2 {
		t.Errorf("%d requests", n)
	}
}

func TestAgentAPIError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}`))
	}))
	defer srv.Close()
	r := conduit(t, runOpts{dir: demoDir(t), env: []string{"OPENAI_API_KEY=bad"}},
		"agent", "--provider", "openai-chat", "--model", model, "--base-url", srv.URL, "hi")
	expect(t, r, 1, "HTTP 401: Incorrect API key provided", "check OPENAI_API_KEY")

	// A response that is not JSON.
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }))
	defer srv2.Close()
	r = conduit(t, runOpts{dir: demoDir(t)}, "agent", "--provider", "anthropic", "--model", model, "--base-url", srv2.URL, "hi")
	expect(t, r, 1, "not a JSON object")
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
