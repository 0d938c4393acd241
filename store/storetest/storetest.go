// Package storetest is the conformance suite of store.Store. Every
// implementation runs [Run]. So they all keep the guarantees the store
// package documents: expiry, atomicity under concurrency, lock exclusivity,
// leases, namespaces. An implementation's test is
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, namespace string) store.Store {
//			s := mystore.Open(..., namespace) // a new client of one backend
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/internal/claimer"
)

// Opener opens a store for a test. Stores opened with the same namespace in
// one test share their keys, as the clients of one backend do. For a store
// that lives in the process, the same store may be returned. Stores opened
// with different namespaces see none of each other's keys. The opener closes
// what it opens when the test ends. Close must be safe to call again.
type Opener func(t *testing.T, namespace string) store.Store

// Run runs the conformance suite against the stores that open opens. The
// subtests run in parallel, each with its own keys. The suite takes a few
// seconds, most of it waiting for expiries.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"Sets", testSets},
		{"SetsExpire", testSetsExpire},
		{"Claims", testClaims},
		{"ClaimsRace", testClaimsRace},
		{"ClaimsExpire", testClaimsExpire},
		{"Windows", testWindows},
		{"WindowsRace", testWindowsRace},
		{"WindowsExpire", testWindowsExpire},
		{"Slots", testSlots},
		{"SlotsRace", testSlotsRace},
		{"SlotsLeaseExpires", testSlotsLease},
		{"Lock", testLock},
		{"LockExclusive", testLockExclusive},
		{"LockExpires", testLockExpires},
		{"Namespaces", testNamespaces},
		{"BadLifetime", testBadLifetime},
		{"Closed", testClosed},
		{"Journals", testJournals},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open)
		})
	}
}

// ns returns a namespace of the test's own.
func ns(t *testing.T) string { return "storetest/" + t.Name() + "/" }

// must(f())(t) returns f's value, or fails t with f's error.
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func testSets(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	if got := must(s.Members(c, "alice"))(t); len(got) != 0 {
		t.Fatalf("Members of a new key = %q, want none", got)
	}
	if err := s.AddMembers(c, "alice", time.Minute, "web", "fs"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddMembers(c, "alice", time.Minute, "web", "mail"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddMembers(c, "alice", time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, want := must(s.Members(c, "alice"))(t), []string{"fs", "mail", "web"}; !slices.Equal(got, want) {
		t.Errorf("Members = %q, want %q (sorted, no duplicates)", got, want)
	}
	if got := must(s.Members(c, "bob"))(t); len(got) != 0 {
		t.Errorf("Members of another key = %q, want none", got)
	}
	// Another client of the same backend sees the set.
	if got := must(open(t, ns(t)).Members(c, "alice"))(t); len(got) != 3 {
		t.Errorf("another client's Members = %q, want 3", got)
	}
}

func testSetsExpire(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	if err := s.AddMembers(c, "k", 300*time.Millisecond, "a"); err != nil {
		t.Fatal(err)
	}
	claimer.Eventually(t, "a set with a 300ms lifetime has not expired", func() bool {
		return len(must(s.Members(c, "k"))(t)) == 0
	})
	// An addition extends the whole set: a is kept as long as b. The check
	// holds when b was added before a expired. A loaded machine may delay
	// that past a's lifetime. Then the check is skipped.
	startA := time.Now()
	if err := s.AddMembers(c, "k", time.Second, "a"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := s.AddMembers(c, "k", 5*time.Second, "b"); err != nil {
		t.Fatal(err)
	}
	addedB := time.Since(startA)
	time.Sleep(time.Until(startA.Add(1200 * time.Millisecond)))
	got := must(s.Members(c, "k"))(t)
	switch {
	case addedB >= time.Second || time.Since(startA) >= 5*time.Second:
		t.Logf("the machine is too slow for the check: b was added %v after a", addedB)
	case !slices.Equal(got, []string{"a", "b"}):
		t.Errorf("after a's lifetime but within b's, Members = %q, want [a b]: an addition sets the whole set's expiry", got)
	}
}

func testClaims(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	first := must(s.Claim(c, "call-1", time.Minute))(t)
	if first.State != store.Claimed || first.Token == "" {
		t.Fatalf("first Claim = %+v, want claimed with a token", first)
	}
	other := open(t, ns(t))
	if got := must(other.Claim(c, "call-1", time.Minute))(t); got.State != store.Pending || got.Token != "" || got.Result != nil {
		t.Fatalf("second Claim = %+v, want pending", got)
	}
	if err := other.Complete(c, "call-1", "not-the-token", []byte("x"), time.Minute); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("Complete with another token: %v, want ErrNotHeld", err)
	}
	if err := s.Complete(c, "call-2", first.Token, []byte("x"), time.Minute); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("Complete of a key never claimed: %v, want ErrNotHeld", err)
	}
	result := []byte(`{"content":[{"type":"text","text":"done"}]}`)
	if err := s.Complete(c, "call-1", first.Token, result, time.Minute); err != nil {
		t.Fatal(err)
	}
	// A retry of the same Complete succeeds; another result does not.
	if err := s.Complete(c, "call-1", first.Token, result, time.Minute); err != nil {
		t.Fatalf("Complete again with the same result: %v", err)
	}
	if err := s.Complete(c, "call-1", first.Token, []byte("other"), time.Minute); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("Complete again with another result: %v, want ErrNotHeld", err)
	}
	got := must(other.Claim(c, "call-1", time.Minute))(t)
	if got.State != store.Completed || string(got.Result) != string(result) {
		t.Fatalf("Claim after Complete = %+v, want completed with %q", got, result)
	}
	// An empty result is a result.
	e := must(s.Claim(c, "empty", time.Minute))(t)
	if err := s.Complete(c, "empty", e.Token, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := must(s.Claim(c, "empty", time.Minute))(t); got.State != store.Completed || got.Result == nil || len(got.Result) != 0 {
		t.Fatalf("Claim after an empty Complete = %+v, want completed with an empty, non-nil result", got)
	}
	// Binary results come back as they went in.
	bin := must(s.Claim(c, "binary", time.Minute))(t)
	raw := []byte{0, 1, 0xff, ':', '\n', 0}
	if err := s.Complete(c, "binary", bin.Token, raw, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := must(s.Claim(c, "binary", time.Minute))(t); string(got.Result) != string(raw) {
		t.Fatalf("binary result = %q, want %q", got.Result, raw)
	}
	for _, st := range []store.ClaimState{store.Claimed, store.Pending, store.Completed, 0} {
		if st.String() == "" {
			t.Errorf("ClaimState(%d) has no name", st)
		}
	}
}

func testClaimsRace(t *testing.T, open Opener) {
	c := claimer.Ctx(t)
	clients := []store.Store{open(t, ns(t)), open(t, ns(t)), open(t, ns(t))}
	for round := range 5 {
		key := fmt.Sprintf("race-%d", round)
		var won, pending atomic.Int32
		var wg sync.WaitGroup
		for i := range 48 {
			wg.Go(func() {
				got, err := clients[i%len(clients)].Claim(c, key, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				switch got.State {
				case store.Claimed:
					won.Add(1)
				case store.Pending:
					pending.Add(1)
				default:
					t.Errorf("Claim = %+v", got)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 || pending.Load() != 47 {
			t.Fatalf("round %d: %d claimers won and %d found it pending, want 1 and 47", round, won.Load(), pending.Load())
		}
	}
}

func testClaimsExpire(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	first := must(s.Claim(c, "k", 200*time.Millisecond))(t)
	var again store.Claim
	claimer.Eventually(t, "a claim with a 200ms lifetime has not expired", func() bool {
		again = must(s.Claim(c, "k", time.Minute))(t)
		return again.State == store.Claimed
	})
	if again.Token == first.Token {
		t.Error("a new claim has the expired claim's token")
	}
	if err := s.Complete(c, "k", first.Token, []byte("late"), time.Minute); !errors.Is(err, store.ErrNotHeld) {
		t.Errorf("Complete by the expired claim's token: %v, want ErrNotHeld", err)
	}
	// A recorded result expires with its own lifetime.
	if err := s.Complete(c, "k", again.Token, []byte("r"), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	claimer.Eventually(t, "a result with a 200ms lifetime has not expired", func() bool {
		return must(s.Claim(c, "k", time.Minute))(t).State == store.Claimed
	})
}

func testWindows(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	if w := must(s.Hit(c, "alice/tool", 0, time.Minute))(t); w.Allowed || w.Count != 0 || w.Reset != 0 {
		t.Fatalf("reading a new window = %+v, want nothing", w)
	}
	for i := 1; i <= 3; i++ {
		w := must(s.Hit(c, "alice/tool", 3, time.Minute))(t)
		if !w.Allowed || w.Count != int64(i) || w.Reset <= 0 || w.Reset > time.Minute {
			t.Fatalf("hit %d = %+v, want allowed, count %d, reset within a minute", i, w, i)
		}
	}
	w := must(open(t, ns(t)).Hit(c, "alice/tool", 3, time.Minute))(t)
	if w.Allowed || w.Count != 3 || w.Reset <= 0 || w.Reset > time.Minute {
		t.Fatalf("hit over the limit = %+v, want refused, count 3, a reset within a minute", w)
	}
	if w := must(s.Hit(c, "alice/tool", 0, time.Minute))(t); w.Allowed || w.Count != 3 {
		t.Fatalf("reading the window = %+v, want count 3", w)
	}
	// A higher limit counts on in the same window.
	if w := must(s.Hit(c, "alice/tool", 10, time.Minute))(t); !w.Allowed || w.Count != 4 {
		t.Fatalf("hit under a higher limit = %+v, want allowed, count 4", w)
	}
	if w := must(s.Hit(c, "bob/tool", 3, time.Minute))(t); !w.Allowed || w.Count != 1 {
		t.Fatalf("another key's hit = %+v, want its own count", w)
	}
}

func testWindowsRace(t *testing.T, open Opener) {
	c := claimer.Ctx(t)
	clients := []store.Store{open(t, ns(t)), open(t, ns(t))}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			w, err := clients[i%2].Hit(c, "k", 25, time.Minute)
			if err != nil {
				t.Error(err)
			} else if w.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 25 {
		t.Errorf("%d of 60 concurrent hits allowed under a limit of 25", allowed.Load())
	}
	if w := must(clients[0].Hit(c, "k", 0, time.Minute))(t); w.Count != 25 {
		t.Errorf("count = %d, want exactly 25", w.Count)
	}
}

func testWindowsExpire(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	start := time.Now()
	for range 2 {
		must(s.Hit(c, "k", 2, time.Second))(t)
	}
	if w := must(s.Hit(c, "k", 2, time.Second))(t); w.Allowed && time.Since(start) < time.Second {
		t.Fatalf("third hit of 2 within the window = %+v", w)
	}
	claimer.Eventually(t, "a 1s window has not ended", func() bool {
		w := must(s.Hit(c, "k", 2, time.Second))(t)
		return w.Allowed && w.Count == 1
	})
}

func testSlots(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	if sl := must(s.Acquire(c, "alice", 0, time.Minute))(t); sl.Acquired || sl.InUse != 0 {
		t.Fatalf("reading new slots = %+v", sl)
	}
	var held []store.Slot
	for i := 1; i <= 3; i++ {
		sl := must(s.Acquire(c, "alice", 3, time.Minute))(t)
		if !sl.Acquired || sl.Token == "" || sl.InUse != int64(i) {
			t.Fatalf("acquire %d = %+v", i, sl)
		}
		held = append(held, sl)
	}
	other := open(t, ns(t))
	if sl := must(other.Acquire(c, "alice", 3, time.Minute))(t); sl.Acquired || sl.Token != "" || sl.InUse != 3 {
		t.Fatalf("acquire over the limit = %+v, want refused with 3 in use", sl)
	}
	if err := other.Release(c, "alice", held[1].Token); err != nil {
		t.Fatal(err)
	}
	if err := other.Release(c, "alice", held[1].Token); err != nil {
		t.Fatalf("releasing a released slot: %v", err)
	}
	if err := other.Release(c, "alice", "unknown"); err != nil {
		t.Fatalf("releasing an unknown slot: %v", err)
	}
	if sl := must(other.Acquire(c, "alice", 3, time.Minute))(t); !sl.Acquired || sl.InUse != 3 {
		t.Fatalf("acquire after a release = %+v", sl)
	}
	if sl := must(s.Acquire(c, "bob", 3, time.Minute))(t); !sl.Acquired || sl.InUse != 1 {
		t.Fatalf("another key's slots = %+v", sl)
	}
	for _, sl := range []store.Slot{held[0], held[2]} {
		if err := s.Release(c, "alice", sl.Token); err != nil {
			t.Fatal(err)
		}
	}
	if sl := must(s.Acquire(c, "alice", 0, time.Minute))(t); sl.InUse != 1 {
		t.Fatalf("in use after releases = %d, want 1", sl.InUse)
	}
}

func testSlotsRace(t *testing.T, open Opener) {
	c := claimer.Ctx(t)
	clients := []store.Store{open(t, ns(t)), open(t, ns(t))}
	var mu sync.Mutex
	tokens := map[string]bool{}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			sl, err := clients[i%2].Acquire(c, "k", 10, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			if sl.Acquired {
				mu.Lock()
				tokens[sl.Token] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(tokens) != 10 {
		t.Errorf("%d distinct slots taken of a limit of 10 by 40 concurrent acquirers", len(tokens))
	}
}

func testSlotsLease(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	// A process takes both slots and dies without releasing them.
	start := time.Now()
	for range 2 {
		if sl := must(s.Acquire(c, "k", 2, time.Second))(t); !sl.Acquired {
			t.Fatal("not acquired")
		}
	}
	if sl := must(s.Acquire(c, "k", 2, time.Minute))(t); sl.Acquired && time.Since(start) < time.Second {
		t.Fatalf("a third slot of 2 within the leases = %+v", sl)
	}
	claimer.Eventually(t, "slots on a 1s lease have not come back", func() bool {
		return must(s.Acquire(c, "k", 2, time.Minute))(t).Acquired
	})
	// The two slots were taken a round trip apart. So the second may end a
	// moment after the first. What is left is the one just taken.
	claimer.Eventually(t, "the second slot's lease has not ended", func() bool {
		return must(s.Acquire(c, "k", 0, time.Minute))(t).InUse == 1
	})
}

func testLock(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	token := must(s.Lock(c, "refresh/server", time.Minute))(t)
	other := open(t, ns(t))
	short, cancel := context.WithTimeout(c, 150*time.Millisecond)
	defer cancel()
	if _, err := other.Lock(short, "refresh/server", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held lock: %v, want context.DeadlineExceeded", err)
	}
	if err := other.Unlock(c, "refresh/server", "not-the-token"); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("Unlock by another token: %v, want ErrNotHeld", err)
	}
	// A waiter gets the lock when its owner releases it.
	got := make(chan error, 1)
	go func() {
		tok, err := other.Lock(c, "refresh/server", time.Minute)
		if err == nil {
			err = other.Unlock(c, "refresh/server", tok)
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := s.Unlock(c, "refresh/server", token); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if err := s.Unlock(c, "refresh/server", token); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("Unlock twice: %v, want ErrNotHeld", err)
	}
	// Another key is another lock.
	a := must(s.Lock(c, "a", time.Minute))(t)
	b := must(s.Lock(c, "b", time.Minute))(t)
	if a == b {
		t.Error("two locks have one token")
	}
}

func testLockExclusive(t *testing.T, open Opener) {
	c := claimer.Ctx(t)
	clients := []store.Store{open(t, ns(t)), open(t, ns(t)), open(t, ns(t))}
	var inside, entered atomic.Int32
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			s := clients[i%len(clients)]
			for range 3 {
				tok, err := s.Lock(c, "k", time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d owners inside the lock at once", n)
				}
				entered.Add(1)
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := s.Unlock(c, "k", tok); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if entered.Load() != 36 {
		t.Errorf("%d of 36 locks taken", entered.Load())
	}
}

func testLockExpires(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	// The owner dies holding the lock; a waiter gets it when it expires.
	start := time.Now()
	dead := must(s.Lock(c, "k", 300*time.Millisecond))(t)
	tok := must(open(t, ns(t)).Lock(c, "k", time.Minute))(t)
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("the lock was taken %v after it was first locked, before its owner's 300ms expired", waited)
	}
	if err := s.Unlock(c, "k", dead); !errors.Is(err, store.ErrNotHeld) {
		t.Errorf("Unlock by the expired owner: %v, want ErrNotHeld", err)
	}
	if err := s.Unlock(c, "k", tok); err != nil {
		t.Errorf("Unlock by the new owner: %v", err)
	}
}

func testNamespaces(t *testing.T, open Opener) {
	c := claimer.Ctx(t)
	a, b := open(t, ns(t)+"a/"), open(t, ns(t)+"b/")
	for _, s := range []store.Store{a, b} {
		if got := must(s.Claim(c, "k", time.Minute))(t); got.State != store.Claimed {
			t.Errorf("claim in its own namespace = %v, want claimed", got.State)
		}
		if w := must(s.Hit(c, "k", 1, time.Minute))(t); !w.Allowed {
			t.Errorf("hit in its own namespace = %+v, want allowed", w)
		}
		if sl := must(s.Acquire(c, "k", 1, time.Minute))(t); !sl.Acquired {
			t.Errorf("acquire in its own namespace = %+v, want acquired", sl)
		}
		short, cancel := context.WithTimeout(c, 5*time.Second)
		if _, err := s.Lock(short, "k", time.Minute); err != nil {
			t.Errorf("lock in its own namespace: %v", err)
		}
		cancel()
	}
	if err := a.AddMembers(c, "k", time.Minute, "web"); err != nil {
		t.Fatal(err)
	}
	if got := must(b.Members(c, "k"))(t); len(got) != 0 {
		t.Errorf("another namespace's Members = %q, want none", got)
	}
	// Kinds have key spaces of their own. A set, a claim, a window, slots
	// and a lock all named "k" live side by side.
	if got := must(a.Members(c, "k"))(t); !slices.Equal(got, []string{"web"}) {
		t.Errorf("Members = %q", got)
	}
}

func testBadLifetime(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	for name, err := range map[string]error{
		"AddMembers": s.AddMembers(c, "k", 0, "a"),
		"Claim":      second(s.Claim(c, "k", -time.Second)),
		"Complete":   s.Complete(c, "k", "t", nil, 0),
		"Hit":        second(s.Hit(c, "k", 1, 0)),
		"Acquire":    second(s.Acquire(c, "k", 1, 0)),
		"Lock":       second(s.Lock(c, "k", 0)),
	} {
		if err == nil || errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s with a lifetime that is not positive: %v, want an error that is not ErrUnavailable", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func testClosed(t *testing.T, open Opener) {
	c := claimer.Ctx(t)
	s := open(t, ns(t))
	if err := s.Ping(c); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for name, err := range map[string]error{
		"Ping":       s.Ping(c),
		"AddMembers": s.AddMembers(c, "k", time.Minute, "a"),
		"Members":    second(s.Members(c, "k")),
		"Claim":      second(s.Claim(c, "k", time.Minute)),
		"Hit":        second(s.Hit(c, "k", 1, time.Minute)),
		"Acquire":    second(s.Acquire(c, "k", 1, time.Minute)),
		"Lock":       second(s.Lock(c, "k", time.Minute)),
	} {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}
