package soak_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testenv"
)

// TestStalledServerCallsAreBounded stops a stdio server (SIGSTOP) and
// sends it more than its stdin pipe holds: every call must still be
// answered by its RequestTimeout, though writes to the pipe block until the
// server reads again. (The MCP SDK's stdio connection checks the request's
// context only before its blocking write, and the other requests wait for
// that write's lock; conduit hands the writes to a goroutine of their own,
// so that the request's time limit holds. Before, these calls waited for
// the stall's end, beyond their CallTimeout; see RELIABILITY.md.)
func TestStalledServerCallsAreBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	node, args := testenv.Everything(t)
	const (
		requestTimeout = time.Second
		callTimeout    = 10 * time.Second
		stall          = 25 * time.Second
	)
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "ev", Command: node, Args: args}}, &conduit.Options{Policy: conduit.AllowAll(), RequestTimeout: requestTimeout, CallTimeout: callTimeout,
		Reconnect: conduit.Backoff{Min: 100 * time.Millisecond, Max: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	if _, err := hub.CallTool(ctx, "ev__echo", map[string]any{"message": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	// The calls use this listing, as a Conversation's do: without one a
	// call may list the tools again, which the stopped server would not
	// answer either (bounded by CallTimeout, not by RequestTimeout).
	ts, err := hub.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kids := children()
	if len(kids) != 1 {
		t.Fatalf("children: %v", kids)
	}
	pid := kids[0].pid
	syscall.Kill(pid, syscall.SIGSTOP)
	cont := time.AfterFunc(stall, func() { syscall.Kill(pid, syscall.SIGCONT) })
	defer cont.Stop()
	defer syscall.Kill(pid, syscall.SIGCONT)

	big := strings.Repeat("x", 32<<10) // two of these fill a 64 KiB pipe
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	var kinds, msgs []string
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			t0 := time.Now()
			_, err := hub.CallTool(ctx, "ev__echo", map[string]any{"message": big}, &conduit.CallOptions{ToolSet: ts})
			d := time.Since(t0)
			var ce *conduit.Error
			errors.As(err, &ce)
			mu.Lock()
			slowest = max(slowest, d)
			kinds = append(kinds, ce.String())
			if err != nil {
				msgs = append(msgs, err.Error())
			}
			if err != nil && len(kinds) == 1 {
				t.Logf("%v after %v", err, d)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	t.Logf("8 calls to a stopped server answered within %v (the slowest %v): %v", time.Since(start), slowest, kinds)
	if slowest >= callTimeout {
		t.Errorf("a call to a stopped server took %v; CallTimeout is %v, RequestTimeout %v", slowest, callTimeout, requestTimeout)
	}
	for _, k := range kinds {
		if k != conduit.ErrTimeout.String() {
			t.Errorf("a call to a stopped server was answered %s, want timeout", k)
		}
	}
	for _, m := range msgs {
		if !strings.Contains(m, "The request to the server of ev__echo timed out after 1s") {
			t.Errorf("answered %q, want the RequestTimeout's answer", m)
		}
	}
}
