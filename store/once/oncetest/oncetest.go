// Package oncetest is the conformance suite of the at-most-once protocol of
// package once over a store. Every store that holds claims runs [Run]. So
// once keeps its promise on each. A store's test is
//
//	func TestOnce(t *testing.T) {
//		oncetest.Run(t, func(t *testing.T, namespace string) store.Claims {
//			s := mystore.Open(..., namespace) // a new client of one backend
//			t.Cleanup(func() { s.Close() })
//			return s
//		}, nil)
//	}
//
// A store shared by processes also sets [Options.Claimer], so that a
// claimer that is killed is a real process.
package oncetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/internal/claimer"
	"github.com/conduitmcp/conduit/store/once"
)

// Opener opens a store for a test. Stores opened with the same namespace in
// one test share their keys, as the clients of one backend do. A store that
// lives in the process may return the same store. Stores opened with
// different namespaces see none of each other's keys. The opener closes what
// it opens when the test ends.
type Opener func(t *testing.T, namespace string) store.Claims

// Options are what a store adds to the suite; nil is none.
type Options struct {
	// Claimer, when set, returns a command that runs [ClaimAndWait] in
	// another OS process. It runs on the store that namespace opens, for key
	// and ttl. Typically it is the test binary run again with what it needs
	// in its environment. The suite starts it, waits for its claim, and
	// kills it. So it is a claimer that dies between claim and record.
	Claimer func(t *testing.T, namespace, key string, ttl time.Duration) *exec.Cmd
}

// Run runs the suite against the stores that open opens. The subtests run in
// parallel, each with its own keys. The suite takes a few seconds, most of
// it waiting for claims to expire.
func Run(t *testing.T, open Opener, opts *Options) {
	if opts == nil {
		opts = &Options{}
	}
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"RunAndRead", testRunAndRead},
		{"Failed", testFailed},
		{"Race", testRace},
		{"Abandoned", testAbandoned},
		{"Canceled", testCanceled},
		{"Records", testRecords},
		{"BadTTL", testBadTTL},
	}
	if opts.Claimer != nil {
		tests = append(tests, struct {
			name string
			fn   func(*testing.T, Opener)
		}{"KilledClaimer", func(t *testing.T, open Opener) { testKilled(t, open, opts.Claimer) }})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open)
		})
	}
}

// ClaimAndWait is the body of a claimer process (see [Options.Claimer]). It
// claims key in claims for ttl. It writes "claimed" and a newline to
// standard output. Then it waits for its standard input to close, but the
// suite kills it first. It records nothing.
func ClaimAndWait(ctx context.Context, claims store.Claims, key string, ttl time.Duration) error {
	t, found, err := once.Claim(ctx, claims, key, ttl)
	if err != nil {
		return err
	}
	if t == nil {
		return fmt.Errorf("oncetest: the claimer did not win %q: %v", key, found.State)
	}
	fmt.Println("claimed")
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

// ns returns a namespace of the test's own.
func ns(t *testing.T) string { return "oncetest/" + t.Name() + "/" }

// counted is work that counts its runs and returns result.
type counted struct {
	runs   atomic.Int32
	result []byte
	err    error
	wait   chan struct{} // when set, a run waits for it to close
}

func (c *counted) run(ctx context.Context) ([]byte, error) {
	c.runs.Add(1)
	if c.wait != nil {
		select {
		case <-c.wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.result, c.err
}

// do calls once.Do and fails t on a store error.
func do(t *testing.T, c context.Context, s store.Claims, key string, ttl time.Duration, w *counted) once.Outcome {
	t.Helper()
	out, err := once.Do(c, s, key, ttl, w.run)
	if err != nil {
		t.Fatalf("Do(%q): %v", key, err)
	}
	return out
}

// A first Do runs and records. Every later Do, by any client, reads the
// record byte for byte and runs nothing.
func testRunAndRead(t *testing.T, open Opener) {
	a, b, c := open(t, ns(t)), open(t, ns(t)), claimer.Ctx(t)
	results := map[string][]byte{
		"json":   []byte(`{"content":[{"type":"text","text":"done <&>"}],  "isError" : false }`),
		"binary": {0, 1, 0xff, ':', '\n', 0},
		"header": []byte("conduit-once/1 failed\nnot a failure"),
		"empty":  {},
	}
	for name, result := range results {
		w := &counted{result: result}
		got := do(t, c, a, name, time.Minute, w)
		if got.State != once.Ran || !bytes.Equal(got.Result, result) || got.Err != nil {
			t.Fatalf("%s: first Do = %+v, want ran with its result", name, got)
		}
		for _, s := range []store.Claims{a, b} {
			again := do(t, c, s, name, time.Minute, w)
			if again.State != once.Recorded || !bytes.Equal(again.Result, result) || again.Result == nil || again.Err != nil {
				t.Fatalf("%s: later Do = %+v (%q), want recorded with %q", name, again, again.Result, result)
			}
		}
		if n := w.runs.Load(); n != 1 {
			t.Fatalf("%s: ran %d times, want once", name, n)
		}
	}
	// Claim reads as Do does, and wins a new key.
	tk, found, err := once.Claim(c, b, "json", time.Minute)
	if err != nil || tk != nil || found.State != once.Recorded || !bytes.Equal(found.Result, results["json"]) {
		t.Fatalf("Claim of a recorded key = %v, %+v, %v", tk, found, err)
	}
	tk, found, err = once.Claim(c, b, "fresh", time.Minute)
	if err != nil || tk == nil || found.State != 0 {
		t.Fatalf("Claim of a new key = %v, %+v, %v: want a ticket", tk, found, err)
	}
	if err := tk.Record(c, []byte("by ticket"), nil); err != nil {
		t.Fatal(err)
	}
	if got := do(t, c, a, "fresh", time.Minute, &counted{}); got.State != once.Recorded || string(got.Result) != "by ticket" {
		t.Fatalf("Do after Ticket.Record = %+v", got)
	}
	for _, st := range []once.State{once.Ran, once.Recorded, once.Unknown, 0} {
		if st.String() == "" {
			t.Errorf("State(%d) has no name", st)
		}
	}
}

// A failed run is recorded as failed, with its message. Later callers know
// it ran, and do not run it again.
func testFailed(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	boom := errors.New("the server said no")
	w := &counted{result: []byte("ignored"), err: boom}
	got := do(t, c, s, "k", time.Minute, w)
	if got.State != once.Ran || got.Err != boom || got.Result != nil {
		t.Fatalf("failing Do = %+v, want ran with its error", got)
	}
	again := do(t, c, open(t, ns(t)), "k", time.Minute, w)
	if again.State != once.Recorded || again.Err == nil || again.Err.Error() != boom.Error() || again.Result != nil {
		t.Fatalf("later Do = %+v, want recorded with the failure %q", again, boom)
	}
	if n := w.runs.Load(); n != 1 {
		t.Fatalf("ran %d times, want once", n)
	}
}

// Concurrent Do of one key, through several clients: run runs exactly once.
// Every caller gets its outcome, or Unknown while it runs.
func testRace(t *testing.T, open Opener) {
	c := claimer.Ctx(t)
	clients := []store.Claims{open(t, ns(t)), open(t, ns(t)), open(t, ns(t))}
	for round := range 4 {
		key := fmt.Sprintf("race-%d", round)
		w := &counted{result: fmt.Appendf(nil, "result of round %d", round)}
		if round%2 == 1 {
			// The winner runs until every other caller has answered, so
			// that they all find it running.
			w.wait = make(chan struct{})
		}
		const n = 32
		outs := make([]once.Outcome, n)
		var others sync.WaitGroup
		others.Add(n - 1)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				out, err := once.Do(c, clients[i%len(clients)], key, time.Minute, w.run)
				if err != nil {
					t.Error(err)
				}
				outs[i] = out
				if out.State != once.Ran {
					others.Done()
				}
			})
		}
		if w.wait != nil {
			others.Wait()
			close(w.wait)
		}
		wg.Wait()
		var ran, recorded, unknown int
		for _, out := range outs {
			switch {
			case out.State == once.Ran && bytes.Equal(out.Result, w.result):
				ran++
			case out.State == once.Recorded && bytes.Equal(out.Result, w.result):
				recorded++
			case out.State == once.Unknown && out.Result == nil && out.Err == nil:
				unknown++
			default:
				t.Fatalf("round %d: an outcome %+v", round, out)
			}
		}
		if runs := w.runs.Load(); runs != 1 || ran != 1 || ran+recorded+unknown != n {
			t.Fatalf("round %d: ran %d times; %d ran, %d recorded, %d unknown", round, runs, ran, recorded, unknown)
		}
		if w.wait != nil && unknown != n-1 {
			t.Fatalf("round %d: %d callers found the claim unknown while it ran, want %d", round, unknown, n-1)
		}
		if got := do(t, c, clients[0], key, time.Minute, w); got.State != once.Recorded || !bytes.Equal(got.Result, w.result) {
			t.Fatalf("round %d: after the race, Do = %+v", round, got)
		}
	}
}

// A claimer that never records (it died between claim and record) leaves the
// outcome Unknown to every later caller. They run nothing until the claim's
// ttl passes. Then the key is won again.
func testAbandoned(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	const ttl = 400 * time.Millisecond
	claimed := time.Now()
	tk, _, err := once.Claim(c, s, "k", ttl)
	if err != nil || tk == nil {
		t.Fatalf("Claim = %v, %v", tk, err)
	}
	checkUnknownThenRuns(t, open(t, ns(t)), "k", ttl, claimed)
	// The dead claimer's ticket is no longer good.
	if err := tk.Record(c, []byte("late"), nil); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("Record by an expired claim: %v, want store.ErrNotHeld", err)
	}
}

// testKilled is testAbandoned with a real process, killed.
func testKilled(t *testing.T, open Opener, newClaimer func(*testing.T, string, string, time.Duration) *exec.Cmd) {
	const ttl = 2 * time.Second
	started := time.Now()
	p := claimer.Start(t, newClaimer(t, ns(t), "k", ttl), "claimed")
	if err := p.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.Cmd.Wait()
	checkUnknownThenRuns(t, open(t, ns(t)), "k", ttl, started)
}

// checkUnknownThenRuns checks key, claimed (not before claimed) and never
// recorded. It must be Unknown and run nothing until the claim's ttl has
// passed. Then it runs.
func checkUnknownThenRuns(t *testing.T, s store.Claims, key string, ttl time.Duration, claimed time.Time) {
	t.Helper()
	c := claimer.Ctx(t)
	w := &counted{result: []byte("again")}
	got := do(t, c, s, key, ttl, w)
	if got.State == once.Ran && time.Since(claimed) >= ttl {
		t.Logf("the machine is too slow for the check: the claim expired before it was read")
		return
	}
	if got.State != once.Unknown || got.Err != nil || w.runs.Load() != 0 {
		t.Fatalf("Do of a key claimed and never recorded = %+v, ran %d times: want unknown, not run", got, w.runs.Load())
	}
	claimer.Eventually(t, "a claim never recorded has not expired", func() bool {
		got = do(t, c, s, key, ttl, w)
		switch got.State {
		case once.Unknown:
			if w.runs.Load() != 0 {
				t.Fatalf("ran while unknown")
			}
			return false
		case once.Ran:
			return true
		}
		t.Fatalf("Do = %+v, want unknown, then ran", got)
		return false
	})
	if w.runs.Load() != 1 || !bytes.Equal(got.Result, w.result) {
		t.Fatalf("after the claim expired: ran %d times, %+v", w.runs.Load(), got)
	}
}

// A Do whose context is done before it claims claims nothing: the next
// Do runs. A run whose context is canceled while it runs is recorded all
// the same, with its error.
func testCanceled(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	done, cancel := context.WithCancel(c)
	cancel()
	w := &counted{result: []byte("r")}
	if out, err := once.Do(done, s, "before", time.Minute, w.run); err == nil || out.State != 0 || w.runs.Load() != 0 {
		t.Fatalf("Do with a done context = %+v, %v, ran %d times: want an error, nothing run", out, err, w.runs.Load())
	}
	if got := do(t, c, s, "before", time.Minute, w); got.State != once.Ran {
		t.Fatalf("Do after a canceled one = %+v, want ran", got)
	}

	during, cancel := context.WithCancel(c)
	w = &counted{wait: make(chan struct{})}
	go func() {
		for w.runs.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	out, err := once.Do(during, s, "during", time.Minute, w.run)
	if err != nil || out.State != once.Ran || !errors.Is(out.Err, context.Canceled) {
		t.Fatalf("Do canceled while it ran = %+v, %v: want ran, with the cancellation", out, err)
	}
	if got := do(t, c, s, "during", time.Minute, w); got.State != once.Recorded || got.Err == nil || got.Err.Error() != context.Canceled.Error() {
		t.Fatalf("Do after one canceled while it ran = %+v, want its failure recorded", got)
	}
}

// Records as the store holds them. A bare result, as older releases recorded
// it, is read as a result. One of a later version, or malformed, is Unknown,
// and its work is not run again.
func testRecords(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	put := func(key string, record []byte) {
		t.Helper()
		cl, err := s.Claim(c, key, time.Minute)
		if err != nil || cl.State != store.Claimed {
			t.Fatalf("Claim(%q) = %+v, %v", key, cl, err)
		}
		if err := s.Complete(c, key, cl.Token, record, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	legacy := []byte(`{"answer":{"type":"tool_result","content":"ok"},"reached":true}`)
	put("legacy", legacy)
	w := &counted{}
	if got := do(t, c, s, "legacy", time.Minute, w); got.State != once.Recorded || !bytes.Equal(got.Result, legacy) || got.Err != nil {
		t.Errorf("a bare record = %+v, want recorded with its bytes", got)
	}
	for key, rec := range map[string]string{
		"later":  "conduit-once/2 ok\n{}",
		"kind":   "conduit-once/1 maybe\n{}",
		"no end": "conduit-once/1 ok",
	} {
		put(key, []byte(rec))
		if got := do(t, c, s, key, time.Minute, w); got.State != once.Unknown || got.Err == nil || got.Result != nil {
			t.Errorf("record %q = %+v, want unknown with why", rec, got)
		}
	}
	if n := w.runs.Load(); n != 0 {
		t.Errorf("ran %d times on records found, want never", n)
	}
}

// A ttl that is not positive is refused, and nothing runs.
func testBadTTL(t *testing.T, open Opener) {
	s, c := open(t, ns(t)), claimer.Ctx(t)
	w := &counted{}
	for _, ttl := range []time.Duration{0, -time.Second} {
		if out, err := once.Do(c, s, "k", ttl, w.run); err == nil || out.State != 0 {
			t.Errorf("Do with ttl %v = %+v, %v: want an error", ttl, out, err)
		}
	}
	if n := w.runs.Load(); n != 0 {
		t.Errorf("ran %d times, want never", n)
	}
}
