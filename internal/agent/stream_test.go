package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/agent"
	"github.com/conduitmcp/conduit/internal/agent/agenttest"
	"github.com/conduitmcp/conduit/internal/demo"
)

// streamed reports whether a request asked for the streamed response.
func streamed(r agenttest.Request) bool {
	return r.Body["stream"] == true || strings.Contains(r.Path, ":streamGenerateContent") || strings.HasSuffix(r.Path, "/converse-stream")
}

// TestRunStreamsByDefault: with no option said, the loop asks every
// provider that streams for the streamed response, runs its calls as they
// come, and answers them in the model's order; the model's text reaches
// OnText. NoStream asks for whole responses.
func TestRunStreamsByDefault(t *testing.T) {
	for _, p := range adapters.Providers() {
		for _, noStream := range []bool{false, true} {
			t.Run(p.String()+map[bool]string{false: "", true: "/nostream"}[noStream], func(t *testing.T) {
				f := agenttest.New(t, p, model,
					agenttest.ToolTurn(p,
						agenttest.Call{ID: "c1", Name: "notes__search_notes", Args: map[string]any{"query": "pasta"}},
						agenttest.Call{ID: "c2", Name: "web__fetch", Args: map[string]any{"url": demo.RecipeURL}}),
					agenttest.TextTurn(p, "Pasta night is on Friday."),
				)
				var text strings.Builder
				o := opts(f)
				o.NoStream = noStream
				o.OnText = func(s string) { text.WriteString(s) }
				res, err := agent.Run(context.Background(), newHub(t, nil), "pasta?", o)
				if err != nil {
					t.Fatal(err)
				}
				if res.Stop != agent.StopDone || res.Text != "Pasta night is on Friday." {
					t.Fatalf("result %+v", res)
				}
				reqs := f.Requests()
				want := p.Wire().Stream != nil && !noStream
				for i, r := range reqs {
					if streamed(r) != want {
						t.Errorf("request %d streamed %v, want %v", i, streamed(r), want)
					}
				}
				ids, isErr := agenttest.Answers(p, reqs[1].Body)
				if !slices.Equal(ids, []string{"c1", "c2"}) || slices.Contains(isErr, true) {
					t.Errorf("answers %v %v", ids, isErr)
				}
				if want && !strings.Contains(text.String(), "Let me look.") {
					t.Errorf("streamed text %q", text.String())
				}
			})
		}
	}
}
