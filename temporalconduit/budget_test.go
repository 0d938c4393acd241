// The turn's budget under the workflow is the adapters' own: the same
// response over the same server gets the same answers, byte for byte,
// from adapters.ExecuteToolCalls and from a Conversation in a workflow,
// in one step and when a call waits for a decision in between.
package temporalconduit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/turn/turntest"
	"github.com/conduitmcp/conduit/temporalconduit"
)

func sized(id, tool string, n int) toolcall.Raw {
	return toolcall.Raw{ID: id, Name: tool, Args: map[string]any{"n": n}}
}

// Four results of 100, 90,000, 3,000 and 40,000 words share the default
// turn budget max-min fairly: the small ones whole, the large ones cut to
// equal parts of the rest, larger than a quarter of the turn each (the
// equal shares fixed at the start that the workflow gave before). The
// workflow's answers are ExecuteToolCalls' own. With the second call
// deferred and allowed later, the workflow's answers are those of an
// adapters.Conversation resumed with the same decision.
func TestSuiteTurnBudgetAsAdapters(t *testing.T) {
	for _, ask := range []bool{false, true} {
		t.Run(fmt.Sprint("deferred=", ask), func(t *testing.T) {
			second := "sized"
			if ask {
				second = "sized_ask"
			}
			raws := []toolcall.Raw{sized("a", "sized", 100), sized("b", second, 90000), sized("c", "sized", 3000), sized("d", "sized", 40000)}
			cl := turntest.Source(t)

			// The adapters' answers.
			resp := adaptertest.FakeOf(adapters.Anthropic).Response("calling tools", raws...)
			conv, err := adapters.NewConversation(context.Background(), cl, adapters.Anthropic, nil)
			if err != nil {
				t.Fatal(err)
			}
			exec, err := conv.Execute(context.Background(), resp)
			if err != nil {
				t.Fatal(err)
			}
			if ask {
				if len(exec.Pending) != 1 {
					t.Fatalf("pending %+v", exec.Pending)
				}
				if exec, err = conv.Resume(context.Background(), map[string]adapters.Ruling{"b": {Allow: true}}); err != nil {
					t.Fatal(err)
				}
			}
			if !exec.Complete() {
				t.Fatal("the adapters' turn is not complete")
			}
			quarter := adapters.DefaultMaxTurnTokens / 4
			if b := exec.Budgets; !b[1].Cut || !b[3].Cut || b[0].Cut || b[2].Cut || b[3].Budget <= quarter {
				t.Fatalf("the adapters' budgets %+v: want the large results cut to more than %d each", b, quarter)
			}

			// The workflow's answers.
			env := sourceEnv(t, cl, nil)
			env.SetTestTimeout(2 * time.Minute) // the large results take a while under -race
			if ask {
				u := &updates{env: env}
				env.RegisterDelayedCallback(func() { u.decide("allow", map[string]adapters.Ruling{"b": {Allow: true}}) }, time.Hour)
			}
			env.ExecuteWorkflow(agentWorkflow, agentInput{Script: [][]toolcall.Raw{raws},
				Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic}})
			out := result(t, env)
			got, _ := json.Marshal(out.Turns[0].Results)
			want, _ := json.Marshal(exec.Results)
			if string(got) != string(want) {
				t.Errorf("the workflow's answers differ from the adapters':\n%.600s\n%.600s", got, want)
			}
		})
	}
}
