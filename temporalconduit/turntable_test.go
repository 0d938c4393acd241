// The turn machine's shared table, driven by a Conversation in a
// workflow: the model's calls, then an update for each round of
// decisions.
package temporalconduit_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/turn/turntest"
	"github.com/conduitmcp/conduit/temporalconduit"
)

func TestSuiteTurnTable(t *testing.T) {
	turntest.Run(t, func(t *testing.T, src conduit.Source, c turntest.Case) turntest.Outcome {
		env := sourceEnv(t, src, nil)
		env.SetTestTimeout(2 * time.Minute)
		var out turntest.Outcome
		u := &updates{env: env}
		for k, round := range c.Rounds {
			env.RegisterDelayedCallback(func() {
				var ids []string
				for _, p := range pendingCalls(t, env) {
					ids = append(ids, p.ID)
				}
				out.Pending = append(out.Pending, ids)
				u.decide(fmt.Sprint("round", k), round)
			}, time.Duration(k+1)*time.Hour)
		}
		env.ExecuteWorkflow(agentWorkflow, agentInput{Script: [][]toolcall.Raw{c.Calls},
			Options: temporalconduit.ConversationOptions{Provider: turntest.Provider, MaxTurnTokens: c.MaxTurnTokens}})
		res := result(t, env)
		for k := range c.Rounds {
			for _, r := range u.rejected {
				if strings.HasPrefix(r, fmt.Sprint("round", k, ":")) {
					out.Refused = append(out.Refused, k)
				}
			}
		}
		if len(res.Turns) != 1 {
			t.Fatalf("turns %+v", res.Turns)
		}
		out.Results, out.Halted = res.Turns[0].Results, res.Turns[0].Halted
		return out
	})
}
