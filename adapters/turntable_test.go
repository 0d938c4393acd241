// The turn machine's shared table, driven by a Conversation: Execute,
// then Resume for each round of decisions.
package adapters_test

import (
	"context"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/internal/turn/turntest"
)

func TestTurnTable(t *testing.T) {
	turntest.Run(t, func(t *testing.T, src conduit.Source, c turntest.Case) turntest.Outcome {
		ctx := context.Background()
		o := &adapters.ConversationOptions{}
		o.Budget.MaxTurnTokens = c.MaxTurnTokens
		o.MaxConcurrency = 1 // the workflow's default: a halt stops the calls after it
		conv, err := adapters.NewConversation(ctx, src, turntest.Provider, o)
		if err != nil {
			t.Fatal(err)
		}
		exec, err := conv.Execute(ctx, adaptertest.FakeOf(turntest.Provider).Response("calling tools", c.Calls...))
		if err != nil {
			t.Fatal(err)
		}
		var out turntest.Outcome
		for k, round := range c.Rounds {
			var ids []string
			for _, p := range exec.Pending {
				ids = append(ids, p.ID)
			}
			out.Pending = append(out.Pending, ids)
			next, err := conv.Resume(ctx, round)
			if err != nil {
				out.Refused = append(out.Refused, k)
				continue
			}
			exec = next
		}
		if !exec.Complete() {
			t.Fatalf("the turn is not complete: %+v", exec.Pending)
		}
		out.Results, out.Halted = exec.Results, exec.Halted
		return out
	})
}
