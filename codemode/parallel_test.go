// Tests of the calls a run makes concurrently.
package codemode_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/codemode"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// gate is a server whose tool "wait" holds each call until two are in
// flight at once, or a second has passed. It reports the most calls it
// saw in flight together.
type gate struct {
	mu      sync.Mutex
	now     int
	most    int
	arrived chan struct{}
}

func (g *gate) wait(ctx context.Context, _ *mcp.CallToolRequest, a idArgs) (*mcp.CallToolResult, any, error) {
	g.mu.Lock()
	g.now++
	g.most = max(g.most, g.now)
	both := g.now >= 2
	g.mu.Unlock()
	if both {
		close(g.arrived)
	}
	select {
	case <-g.arrived:
	case <-time.After(time.Second):
	case <-ctx.Done():
	}
	g.mu.Lock()
	g.now--
	g.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("done ", a.ID)}}}, nil, nil
}

// TestParallelCalls: the calls of Promise.all are in flight at once, as
// the server sees them. Their outcomes reach the code in its order.
func TestParallelCalls(t *testing.T) {
	g := &gate{arrived: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Wait."}, g.wait)
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(context.Background(), st) }()
	hub, err := conduit.NewHub(context.Background(), []conduit.Server{{ID: "slow", Transport: ct}}, &conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	res, err := execute(t, hub, `return await Promise.all([slow.wait({id: 1}), slow.wait({id: 2})])`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `["done 1","done 2"]` {
		t.Errorf("answer %s", res.Value)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.most != 2 {
		t.Errorf("the server saw at most %d calls in flight, want both", g.most)
	}
}

// TestParallelDeferral: a call that waits for a decision among calls in
// flight. The others end and are recorded by the order the code made
// them. The resumed run replays them, unsent, and sends the approved one
// once.
func TestParallelDeferral(t *testing.T) {
	// The approver defers once both reads reached the server, so the read
	// the code made after the write is in flight when the run stops.
	var c *corpus
	hub, c := newCorpusHub(t, 3, &conduit.Options{
		Policy: conduit.NewPolicy(conduit.Ask("corpus/write_note"), conduit.Allow("*")),
		Approver: func(context.Context, conduit.ApprovalRequest) conduit.Approval {
			for deadline := time.Now().Add(5 * time.Second); c.sent("read_doc") < 2 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			return conduit.Defer("a person decides")
		},
	})
	code := `const [a, w, b] = await Promise.all([corpus.read_doc({id: 1}), corpus.write_note({text: "n"}), corpus.read_doc({id: 2})]);
return [a.length, w, b.length]`
	_, err := execute(t, hub, code, nil)
	var de *codemode.DeferredError
	if !errors.As(err, &de) || !errors.Is(err, conduit.ErrDeferred) {
		t.Fatalf("first run: %v", err)
	}
	if de.Index != 1 || de.Call.Tool != "write_note" || len(de.Records) != 3 || !de.Records[1].Skipped || de.Made() != 2 {
		t.Fatalf("deferred %s at %d, %d records, %d made", de.Call.Tool, de.Index, len(de.Records), de.Made())
	}
	if c.sent("read_doc") != 2 || c.sent("write_note") != 0 {
		t.Fatalf("sent %v", c.calls)
	}
	allow := conduit.Approve()
	again, err := execute(t, hub, code, &codemode.Run{Replay: de.Records, Approval: &allow})
	if err != nil {
		t.Fatalf("resumed: %v", err)
	}
	if c.sent("read_doc") != 2 || c.sent("write_note") != 1 {
		t.Fatalf("the resumed run sent %v, want the write alone", c.calls)
	}
	if want := fmt.Sprintf(`[%d,"ok",%d]`, len(doc(1)), len(doc(2))); string(again.Value) != want {
		t.Errorf("answer %s, want %s", again.Value, want)
	}
}

// counter is a server whose tool "hold" counts the calls in flight and
// holds each a moment.
type counter struct {
	mu        sync.Mutex
	now, most int
}

func (c *counter) hold(ctx context.Context, _ *mcp.CallToolRequest, a idArgs) (*mcp.CallToolResult, any, error) {
	c.mu.Lock()
	c.now++
	c.most = max(c.most, c.now)
	c.mu.Unlock()
	select {
	case <-time.After(20 * time.Millisecond):
	case <-ctx.Done():
	}
	c.mu.Lock()
	c.now--
	c.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(a.ID)}}}, nil, nil
}

// TestParallelBounded: Promise.all over a long list does not flood the
// server. A careless configuration (no limits) gets DefaultMaxParallel
// calls in flight at most, and every call is still answered, in order.
func TestParallelBounded(t *testing.T) {
	for _, tc := range []struct {
		limits codemode.Limits
		want   int
	}{{codemode.Limits{}, codemode.DefaultMaxParallel}, {codemode.Limits{MaxParallel: 3}, 3}} {
		t.Run(fmt.Sprint(tc.want), func(t *testing.T) {
			c := &counter{}
			srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
			mcp.AddTool(srv, &mcp.Tool{Name: "hold", Description: "Hold."}, c.hold)
			st, ct := mcp.NewInMemoryTransports()
			go func() { _ = srv.Run(context.Background(), st) }()
			hub, err := conduit.NewHub(context.Background(), []conduit.Server{{ID: "slow", Transport: ct}}, &conduit.Options{Policy: conduit.AllowAll()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { hub.Close() })
			res, err := execute(t, hub, `const r = await Promise.all(Array.from({length: 100}, (_, i) => slow.hold({id: i})));
return r.length + " " + r[0] + " " + r[99];`, &codemode.Run{Options: &codemode.Options{Limits: tc.limits}})
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Value) != `"100 0 99"` {
				t.Errorf("answer %s", res.Value)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.most > tc.want || c.most < 2 {
				t.Errorf("the server saw at most %d calls in flight, want between 2 and %d", c.most, tc.want)
			}
		})
	}
}
