package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/agent"
	"github.com/conduitmcp/conduit/internal/agent/agenttest"
	"github.com/conduitmcp/conduit/internal/demo"
)

// TestRunBudget: the loop cuts each result to its budget, offers
// read_result when Read is on, and the notice the model reads names it.
func TestRunBudget(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			f := agenttest.New(t, p, model,
				agenttest.ToolTurn(p, agenttest.Call{ID: "c1", Name: "web__fetch", Args: map[string]any{"url": demo.RecipeURL}}),
				agenttest.TextTurn(p, "Done."))
			ctx := context.Background()
			srvs, stop, err := demo.InProcess(ctx)
			if err != nil {
				t.Fatal(err)
			}
			hub, err := conduit.NewHub(ctx, srvs, &conduit.Options{Policy: conduit.AllowAll()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { hub.Close(); stop() })
			o := opts(f)
			o.Answers.MaxResultTokens, o.Read = 20, adapters.ReadOptions{On: true}
			var cut bool
			o.OnTurn = func(tn agent.Turn) { cut = cut || tn.Exec.Budgets[0].Cut }
			if _, err := agent.Run(ctx, hub, "pasta?", o); err != nil {
				t.Fatal(err)
			}
			reqs := f.Requests()
			if len(reqs) != 2 || !cut || !slices.Contains(agenttest.ToolNames(reqs[0].Body), adapters.ReadToolName) {
				t.Fatalf("%d requests, cut %v, tools %v", len(reqs), cut, agenttest.ToolNames(reqs[0].Body))
			}
			body, _ := json.Marshal(reqs[1].Body)
			if !strings.Contains(string(body), "budget of 20 tokens") || !strings.Contains(string(body), "call read_result with result") {
				t.Errorf("the notice is not in the next request: %.400s", body)
			}
		})
	}
}
