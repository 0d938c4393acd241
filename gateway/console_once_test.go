package gateway

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/store"
)

// TestConsoleDecideOnce: many admins on two replicas deciding one
// approval at once make exactly one decision, and the held call reads
// that one.
func TestConsoleDecideOnce(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	defer st.Close()
	var cs [2]*console
	for i := range cs {
		c, err := newConsole(ConsoleOptions{Admins: []string{"alice"}}, st, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cs[i] = c
	}
	ask := approvalRecord{Kind: "ask", ID: newID(), Asked: time.Now(), Until: time.Now().Add(time.Minute)}
	if err := cs[0].appendJSON(ctx, approvalsJournal, ask, time.Hour); err != nil {
		t.Fatal(err)
	}
	var wins atomic.Int32
	var winner atomic.Value
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			d := approvalRecord{Kind: "decided", ID: ask.ID, Decision: []string{"approve", "deny"}[i%2], By: fmt.Sprint("admin", i)}
			won, err := cs[i%2].decide(ctx, d)
			if err != nil {
				t.Error(err)
			}
			if won {
				wins.Add(1)
				winner.Store(d.By)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d decisions won, want 1", wins.Load())
	}
	d, ok := cs[1].decision(ctx, ask)
	if !ok || d.By != winner.Load() {
		t.Fatalf("the held call reads %+v, want the winner %v's", d, winner.Load())
	}
}
