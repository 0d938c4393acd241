// The turn's budget split of the documented example, by ExecuteToolCalls:
// temporalconduit's TestSuiteTurnBudgetAsAdapters gives the same inputs
// to a workflow and finds the same answers.
package adapters_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/turn/turntest"
)

// Results of 100, 90,000, 3,000 and 40,000 words share the default turn
// budget max-min fairly: the small ones whole, the large ones (25,000
// tokens each, their own budget) cut to equal parts of what is left,
// more than a quarter of the turn each.
func TestTurnShareMaxMin(t *testing.T) {
	cl := turntest.Source(t)
	var raws []toolcall.Raw
	for i, n := range []int{100, 90000, 3000, 40000} {
		raws = append(raws, toolcall.Raw{ID: fmt.Sprint("c", i), Name: "sized", Args: map[string]any{"n": n}})
	}
	exec, err := adapters.ExecuteToolCalls(context.Background(), cl, adapters.Anthropic, adaptertest.FakeOf(adapters.Anthropic).Response("", raws...), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := exec.Budgets
	small := b[0].Kept + b[2].Kept
	if b[0].Cut || b[2].Cut || !b[1].Cut || !b[3].Cut || b[1].Budget != b[3].Budget {
		t.Fatalf("budgets %+v: want the small results whole, the large ones cut alike", b)
	}
	if want := (adapters.DefaultMaxTurnTokens - small) / 2; b[1].Budget != want || want <= adapters.DefaultMaxTurnTokens/4 {
		t.Errorf("each large result's budget %d, want %d (max-min), more than an equal quarter", b[1].Budget, want)
	}
}
