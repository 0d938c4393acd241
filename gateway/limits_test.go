package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// countingFails makes the counters of a failingStore fail, as a Redis
// that is down does.
type countingFails struct {
	*failingStore
	fail atomic.Bool
}

func (f *countingFails) Hit(ctx context.Context, key string, limit int64, window time.Duration) (store.Window, error) {
	if f.fail.Load() {
		return store.Window{}, fmt.Errorf("hit: %w", store.ErrUnavailable)
	}
	return f.failingStore.Hit(ctx, key, limit, window)
}

func (f *countingFails) Acquire(ctx context.Context, key string, limit int64, lease time.Duration) (store.Slot, error) {
	if f.fail.Load() {
		return store.Slot{}, fmt.Errorf("acquire: %w", store.ErrUnavailable)
	}
	return f.failingStore.Acquire(ctx, key, limit, lease)
}

// TestLimits: calls per minute and at once, for each principal apart, for
// clients with a session and without; a refusal says when to retry (in
// its text and its _meta), and sends nothing; an approval asked is not a
// call; Usage reports the counts.
func TestLimits(t *testing.T) {
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) { limits(t, version) })
	}
}

func limits(t *testing.T, version string) {
	up := newUpstream(t, "up")
	counted := countedTool(up, "counted", "done")
	release := make(chan struct{})
	var inSlow atomic.Int64
	up.tool("slow", "Waits.", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		inSlow.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return text("slow done"), nil
	})
	asked := countedTool(up, "asked", "asked done")
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{
		Hub: &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("up/asked"), conduit.Allow("*"))},
		Limits: []gateway.Limit{
			{Tools: []string{"up/counted", "up/asked"}, PerMinute: 3},
			{Tools: []string{"up/slow"}, AtOnce: 1},
			{Principals: []string{"bob"}, PerMinute: 100},
		},
	})
	url := serveGateway(t, g)
	alice := httpClient(t, url, aliceToken, version)
	bob := httpClient(t, url, bobToken, version)
	ctx := context.Background()
	call := func(cs *mcp.ClientSession, name string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	for i := range 3 {
		if res := call(alice, "up__counted"); res.IsError {
			t.Fatalf("call %d: %s", i+1, resultText(res))
		}
	}
	res := call(alice, "up__counted")
	msg := resultText(res)
	if !res.IsError || !strings.Contains(msg, "3 calls per minute") || !strings.Contains(msg, "retry in") || !strings.Contains(msg, `"alice"`) {
		t.Errorf("the 4th call = %q", msg)
	}
	if s, ok := res.Meta[gateway.MetaRetryAfter].(float64); !ok || s < 1 || s > 60 {
		t.Errorf("_meta = %v, want %s between 1 and 60 seconds", res.Meta, gateway.MetaRetryAfter)
	}
	if n := counted.Load(); n != 3 {
		t.Errorf("the server ran %d calls, want 3", n)
	}
	// Bob is counted apart.
	if res := call(bob, "up__counted"); res.IsError {
		t.Errorf("bob's call: %s", resultText(res))
	}

	// At once: the second is refused while the first is in flight.
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := alice.CallTool(ctx, &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{}})
		done <- res
	}()
	eventually(t, "the slow call to start", func() bool { return inSlow.Load() == 1 })
	res = call(alice, "up__slow")
	if msg := resultText(res); !res.IsError || !strings.Contains(msg, "1 call at once") {
		t.Errorf("the second slow call = %q", msg)
	}
	usage, err := g.Usage(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(usage) != 2 || usage[0].Calls != 3 || usage[0].WindowEnds <= 0 || usage[1].InFlight != 1 {
		t.Errorf("usage = %+v", usage)
	}
	close(release)
	if res := <-done; res == nil || res.IsError {
		t.Fatalf("the slow call = %v", res)
	}
	eventually(t, "the slot to be given back", func() bool {
		u, err := g.Usage(ctx, "alice")
		return err == nil && u[1].InFlight == 0
	})
	if res := call(alice, "up__slow"); res.IsError {
		t.Errorf("a slow call after the first ended: %s", resultText(res))
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("asked ran %d times", n)
	}
}

// TestLimitsApprovalNotCounted: for a client without a session, the round
// that asks for an approval is no call; the approved retry is one.
func TestLimitsApprovalNotCounted(t *testing.T) {
	up := newUpstream(t, "up")
	asked := countedTool(up, "asked", "asked done")
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{
		Hub:    &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("up/asked"))},
		Limits: []gateway.Limit{{PerMinute: 1}},
	})
	cs, _ := newClient(t, serveGateway(t, g), aliceToken, statelessProtocol)
	ctx := context.Background()
	for i := range 2 {
		res, err := callRaw(ctx, cs, "up__asked", map[string]any{}, nil, "")
		st := askedApproval(t, res, err, "up__asked")
		res, err = callRaw(ctx, cs, "up__asked", map[string]any{}, accept, st)
		if err != nil {
			t.Fatal(err)
		}
		switch msg := resultText(res); {
		case i == 0 && (res.IsError || msg != "asked done"):
			t.Errorf("the approved call = %q", msg)
		case i == 1 && !strings.Contains(msg, "1 call per minute"):
			t.Errorf("the second approved call = %q, want refused by the limit", msg)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the server ran %d calls, want 1", n)
	}
}

// TestLimitsStoreUnavailable: a call whose limits cannot be counted is
// refused, saying the shared store is unavailable, and nothing is sent;
// it goes through once the store is back.
func TestLimitsStoreUnavailable(t *testing.T) {
	up := newUpstream(t, "up")
	counted := countedTool(up, "counted", "done")
	fs := &countingFails{failingStore: newFailingStore(t)}
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{
		Hub:    &conduit.Options{Policy: conduit.AllowAll(), Store: fs},
		Limits: []gateway.Limit{{PerMinute: 10, AtOnce: 2}},
	})
	cs, _ := connect(t, g, "alice", nil)
	fs.fail.Store(true)
	res := callTool(t, cs, "up__counted", map[string]any{})
	if msg := resultText(res); !res.IsError || !strings.Contains(msg, "shared store is unavailable") {
		t.Errorf("answer = %q", msg)
	}
	if _, err := g.Usage(context.Background(), "alice"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Usage: %v", err)
	}
	fs.fail.Store(false)
	if res := callTool(t, cs, "up__counted", map[string]any{}); res.IsError {
		t.Errorf("after the store is back: %s", resultText(res))
	}
	if n := counted.Load(); n != 1 {
		t.Errorf("sent %d times, want 1", n)
	}
}

func TestLimitsInvalid(t *testing.T) {
	up := newUpstream(t, "up")
	for _, l := range []gateway.Limit{{}, {PerMinute: -1, AtOnce: 1}, {PerMinute: 1, Tools: []string{"a/[x"}}} {
		_, err := gateway.New(context.Background(), []conduit.Server{up.server("up")}, &gateway.Options{
			Hub: &conduit.Options{Policy: conduit.AllowAll()}, Limits: []gateway.Limit{l}})
		if err == nil {
			t.Errorf("limit %+v accepted", l)
		}
	}
}

// A call refused by one of its limits gives back what the others took: a
// limit of one call a minute and one at once refuses the second call for
// its window after its slot was acquired, and the slot is free at once,
// not held until its lease runs out.
func TestLimitsRefusalGivesBack(t *testing.T) {
	up := newUpstream(t, "up")
	counted := countedTool(up, "counted", "done")
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{
		Hub:    &conduit.Options{Policy: conduit.AllowAll()},
		Limits: []gateway.Limit{{Tools: []string{"up/counted"}, PerMinute: 1, AtOnce: 1}},
	})
	alice := httpClient(t, serveGateway(t, g), aliceToken, statelessProtocol)
	ctx := context.Background()
	for i, wantErr := range []bool{false, true} {
		res, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "up__counted", Arguments: map[string]any{}})
		if err != nil || res.IsError != wantErr {
			t.Fatalf("call %d: %v %v %q", i+1, err, res != nil && res.IsError, resultText(res))
		}
	}
	usage, err := g.Usage(ctx, "alice")
	if err != nil || len(usage) != 1 || usage[0].Calls != 1 || usage[0].InFlight != 0 {
		t.Errorf("usage %+v, %v: want 1 call in the window and no slot held", usage, err)
	}
	if counted.Load() != 1 {
		t.Errorf("sent %d", counted.Load())
	}
}
