package agent_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/internal/agent"
	"github.com/conduitmcp/conduit/internal/agent/agenttest"
	"github.com/conduitmcp/conduit/internal/demo"
)

const model = "test-model"

var wantTools = []string{"notes__add_note", "notes__delete_note", "notes__search_notes", "web__fetch", "web__screenshot"}

// newHub is a hub over the demo's in-process servers with the demo's policy.
func newHub(t *testing.T, approver conduit.Approver) *conduit.Hub {
	t.Helper()
	ctx := context.Background()
	cfg, err := config.Parse(demo.Config)
	if err != nil {
		t.Fatal(err)
	}
	srvs, stop, err := demo.InProcess(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := conduit.NewHub(ctx, srvs, &conduit.Options{Policy: cfg.Policy, Approver: approver})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close(); stop() })
	return hub
}

func opts(f *agenttest.Fake) agent.Options {
	return agent.Options{Provider: f.Provider, Model: model, BaseURL: f.URL, APIKey: agenttest.Key,
		TurnOptions: adapters.TurnOptions{CallTimeout: 10 * time.Second}}
}

func TestRunToolTurnThenText(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			f := agenttest.New(t, p, model,
				agenttest.ToolTurn(p,
					agenttest.Call{ID: "c1", Name: "notes__search_notes", Args: map[string]any{"query": "pasta"}},
					agenttest.Call{ID: "c2", Name: "web__fetch", Args: map[string]any{"url": demo.RecipeURL}}),
				agenttest.TextTurn(p, "Pasta night is on Friday."))
			var turns []agent.Turn
			o := opts(f)
			o.OnTurn = func(tn agent.Turn) { turns = append(turns, tn) }
			res, err := agent.Run(context.Background(), newHub(t, nil), "pasta?", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop != agent.StopDone || res.Text != "Pasta night is on Friday." || res.Turns != 2 {
				t.Fatalf("result %+v", res)
			}
			if !slices.Equal(res.Taint, []string{"notes", "web"}) {
				t.Errorf("taint %v", res.Taint)
			}
			reqs := f.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i, r := range reqs {
				if got := agenttest.ToolNames(r.Body); !slices.Equal(got, wantTools) {
					t.Errorf("request %d tools %v", i, got)
				}
			}
			ids, isErr := agenttest.Answers(p, reqs[1].Body)
			want := []string{"c1", "c2"}
			if !slices.Equal(ids, want) || slices.Contains(isErr, true) {
				t.Errorf("answers %v (errors %v), want %v", ids, isErr, want)
			}
			if len(turns) != 1 || len(turns[0].Calls) != 2 || turns[0].Calls[1].Name != "web__fetch" {
				t.Errorf("OnTurn saw %+v", turns)
			}
		})
	}
}

func TestRunTaintAcrossTurns(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			f := agenttest.New(t, p, model,
				agenttest.ToolTurn(p, agenttest.Call{ID: "c1", Name: "web__fetch", Args: map[string]any{"url": demo.RecipeURL}}),
				// The page told the model to delete notes: the taint rule
				// must refuse it now, although it would only ask before.
				agenttest.ToolTurn(p, agenttest.Call{ID: "c2", Name: "notes__delete_note", Args: map[string]any{"id": "n1"}}),
				agenttest.TextTurn(p, "done"))
			asked := false
			hub := newHub(t, func(context.Context, conduit.ApprovalRequest) conduit.Approval {
				asked = true
				return conduit.Approve()
			})
			res, err := agent.Run(context.Background(), hub, "go", opts(f))
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop != agent.StopDone || res.Turns != 3 {
				t.Fatalf("result %+v", res)
			}
			if asked {
				t.Error("the approver was asked: the tainted deny rule should have decided")
			}
			ids, isErr := agenttest.Answers(p, f.Requests()[2].Body)
			if !slices.Equal(ids, []string{"c2"}) || !isErr[0] {
				t.Errorf("answers %v %v: want c2 as an error", ids, isErr)
			}
		})
	}
}

func TestRunHalt(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			f := agenttest.New(t, p, model,
				agenttest.ToolTurn(p, agenttest.Call{ID: "c1", Name: "notes__add_note", Args: map[string]any{"title": "t", "body": "b"}}),
				agenttest.TextTurn(p, "never sent"))
			hub := newHub(t, func(context.Context, conduit.ApprovalRequest) conduit.Approval {
				return conduit.RejectAndHalt("stop")
			})
			res, err := agent.Run(context.Background(), hub, "go", opts(f))
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop != agent.StopHalted || res.Turns != 1 || len(f.Requests()) != 1 {
				t.Fatalf("result %+v after %d requests", res, len(f.Requests()))
			}
		})
	}
}

func TestRunMaxTurns(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			turn := agenttest.ToolTurn(p, agenttest.Call{ID: "c1", Name: "notes__search_notes", Args: map[string]any{"query": "x"}})
			f := agenttest.New(t, p, model, turn, turn, turn)
			o := opts(f)
			o.MaxTurns = 2
			res, err := agent.Run(context.Background(), newHub(t, nil), "go", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop != agent.StopMaxTurns || res.Turns != 2 || len(f.Requests()) != 2 {
				t.Fatalf("result %+v after %d requests", res, len(f.Requests()))
			}
		})
	}
}

func TestRunAPIError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
	}))
	defer srv.Close()
	_, err := agent.Run(context.Background(), newHub(t, nil), "go", agent.Options{Provider: adapters.Anthropic, Model: model, BaseURL: srv.URL})
	var ae *agent.APIError
	if !errors.As(err, &ae) || ae.Status != 401 || ae.Message != "invalid x-api-key" {
		t.Fatalf("err %v", err)
	}
}

func TestEndpoint(t *testing.T) {
	for _, tc := range []struct {
		p    adapters.Provider
		want string
	}{
		{adapters.Anthropic, "https://api.anthropic.com/v1/messages"},
		{adapters.OpenAIChat, "https://api.openai.com/v1/chat/completions"},
		{adapters.OpenAIResponses, "https://api.openai.com/v1/responses"},
		{adapters.Gemini, "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"},
	} {
		w := tc.p.Wire()
		if got := w.Endpoint(w.BaseURL+"/", "gemini-2.5-flash"); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.p, got, tc.want)
		}
	}
}
