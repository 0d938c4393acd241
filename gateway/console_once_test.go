package gateway

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
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

// slowJournals counts the reads of the approvals journal in flight. Each
// read is slow, so reads issued by many pollers at once overlap.
type slowJournals struct {
	*store.Memory
	inFlight, most atomic.Int32
}

func (s *slowJournals) Read(ctx context.Context, key string, since time.Time, limit int) ([]store.Entry, error) {
	if key == approvalsJournal {
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for {
			m := s.most.Load()
			if n <= m || s.most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s.Memory.Read(ctx, key, since, limit)
}

// TestConsoleOneWatcher: many calls held at once on one replica share one
// reader of the approvals journal, and each still gets its own decision,
// made on another replica.
func TestConsoleOneWatcher(t *testing.T) {
	ctx := context.Background()
	st := &slowJournals{Memory: store.NewMemory()}
	defer st.Close()
	held, err := newConsole(ConsoleOptions{Admins: []string{"alice"}}, st, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other, err := newConsole(ConsoleOptions{Admins: []string{"alice"}}, st, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	held.poll = 5 * time.Millisecond
	const calls = 20
	answers := make(chan conduit.Approval, calls)
	for i := range calls {
		go func() {
			call := &conduit.Call{Principal: "bob", Server: "fs", Tool: "write", Method: "tools/call", Args: map[string]any{"i": i}}
			answers <- held.hold(ctx, conduit.ApprovalRequest{Call: call})
		}()
	}
	// Decide every ask from the other replica once all are in the journal.
	var ids []string
	for len(ids) < calls {
		time.Sleep(10 * time.Millisecond)
		asks, _, err := other.readApprovals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = ids[:0]
		for _, a := range asks {
			ids = append(ids, a.ID)
		}
	}
	for i, id := range ids {
		d := approvalRecord{Kind: "decided", ID: id, Decision: []string{"approve", "deny"}[i%2], By: "alice"}
		if won, err := other.decide(ctx, d); err != nil || !won {
			t.Fatalf("decide %s: won %v, %v", id, won, err)
		}
	}
	approved := 0
	for range calls {
		select {
		case a := <-answers:
			if a.Allow {
				approved++
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a held call got no decision")
		}
	}
	if approved != calls/2 {
		t.Errorf("%d approved, want %d", approved, calls/2)
	}
	if m := st.most.Load(); m > 2 {
		t.Errorf("%d reads of the approvals journal at once, want one reader per replica", m)
	}
}
