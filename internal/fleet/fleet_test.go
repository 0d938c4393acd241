package fleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/internal/testenv"
)

// TestFleet runs three replicas of conduit serve behind HAProxy with a
// shared Redis, and checks, in order, what replicas must share and what
// they must survive. No call reaches a server twice in the whole run.
func TestFleet(t *testing.T) {
	f := startFleet(t, 3, drainDelay)
	t.Cleanup(func() {
		if twice := f.down.twice(); len(twice) > 0 {
			t.Errorf("calls that reached a server twice: %v", twice)
		}
	})
	t.Run("taint", func(t *testing.T) { fleetTaint(t, f) })
	t.Run("approval", func(t *testing.T) { fleetApproval(t, f) })
	t.Run("limits", func(t *testing.T) { fleetLimits(t, f) })
	t.Run("sticky", func(t *testing.T) { fleetSticky(t, f) })
	t.Run("drain", func(t *testing.T) { fleetDrain(t, f) })
	t.Run("kill", func(t *testing.T) { fleetKill(t, f) })
	t.Run("redis", func(t *testing.T) { fleetRedis(t, f) })
}

// fleetTaint: alice's taint, set through replica 1 by web's output,
// denies fs/write through replica 2 and hides it through replica 3; bob,
// untainted, writes.
func fleetTaint(t *testing.T, f *fleet) {
	a1, a2, a3 := client(t, f.direct[0], "alice"), client(t, f.direct[1], "alice"), client(t, f.direct[2], "alice")
	if out, text, err := classify(a2, "fs__write", "taint-before", 0); out != answered {
		t.Fatalf("alice's write before the taint: %v %q %v", out, text, err)
	}
	if out, text, err := classify(a1, "web__fetch", "taint-fetch", 0); out != answered {
		t.Fatalf("alice's fetch through replica 1: %v %q %v", out, text, err)
	}
	// Denied, the tool is not listed: a call of it is refused as unknown.
	out, text, err := classify(a2, "fs__write", "taint-after", 0)
	if denied := out == refusedElse || (out == failed && strings.Contains(err.Error(), "unknown tool")); !denied || f.down.count("taint-after") != 0 {
		t.Errorf("alice's write through replica 2 after the taint: %v %q %v, %d calls; want it denied, none sent",
			out, text, err, f.down.count("taint-after"))
	}
	res, err := a3.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "fs__write" {
			t.Error("replica 3 lists fs__write to tainted alice")
		}
	}
	if out, text, err := classify(client(t, f.direct[1], "bob"), "fs__write", "taint-bob", 0); out != answered {
		t.Errorf("bob's write: %v %q %v; taint is alice's alone", out, text, err)
	}
}

var accept = mcp.InputResponseMap{"conduit_approval": &mcp.ElicitResult{Action: "accept"}}

// fleetApproval: erin's call of fs/approve, asked through replica 1, is
// answered through replica 2, which runs it; the same requestState again,
// through any replica and at once, gets the recorded answer: one call.
func fleetApproval(t *testing.T, f *fleet) {
	ctx := context.Background()
	args := callArgs{ID: "approval-1"}
	res, err := client(t, f.direct[0], "erin").CallTool(ctx, &mcp.CallToolParams{Name: "fs__approve", Arguments: args})
	if err != nil || !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("first call: %+v, %v; want an input-required result", res, err)
	}
	state := res.RequestState
	if n := f.down.count("approval-1"); n != 0 {
		t.Fatalf("called %d times before the approval", n)
	}
	retry := func(cs *mcp.ClientSession) (string, error) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__approve", Arguments: args, InputResponses: accept, RequestState: state})
		if err != nil {
			return "", err
		}
		return resultText(res), nil
	}
	if text, err := retry(client(t, f.direct[1], "erin")); err != nil || text != "approved approval-1" {
		t.Fatalf("approved through replica 2: %q, %v", text, err)
	}
	var wg sync.WaitGroup
	for i := range 6 {
		cs := client(t, f.direct[i%3], "erin")
		wg.Go(func() {
			if text, err := retry(cs); err != nil || text != "approved approval-1" {
				t.Errorf("the same state again through replica %d: %q, %v; want the recorded answer", i%3+1, text, err)
			}
		})
	}
	wg.Wait()
	if n := f.down.count("approval-1"); n != 1 {
		t.Errorf("the approved call reached the server %d times, want 1", n)
	}
}

// fleetLimits: carol's perMinute through three replicas in turn: exactly
// that many calls reach the server, the rest are refused saying when to
// retry.
func fleetLimits(t *testing.T, f *fleet) {
	var cs []*mcp.ClientSession
	for _, url := range f.direct {
		cs = append(cs, client(t, url, "carol"))
	}
	allowed, sent := 0, 0
	for i := range 3 * perMinute {
		id := fmt.Sprintf("limit-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		res, text, err := call(ctx, cs[i%3], "fs__write", id, 0)
		cancel()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		sent += f.down.count(id)
		if !res.IsError {
			allowed++
			continue
		}
		wait, ok := res.Meta[gateway.MetaRetryAfter].(float64)
		if !ok || wait <= 0 || wait > 60 || !strings.Contains(text, "retry in") {
			t.Errorf("call %d refused with %q, _meta %v; want the seconds to wait", i, text, res.Meta)
		}
	}
	if allowed != perMinute || sent != perMinute {
		t.Errorf("%d calls allowed, %d reached the server, through 3 replicas; want %d", allowed, sent, perMinute)
	}
}

// stickySaw is what testdata/sticky.mjs prints.
type stickySaw struct {
	ProtocolVersion, SessionID string
	Tools, ToolsAgain          []string
	Writes                     []string
	Approve                    string
	Elicitations               []string
}

// fleetSticky: the TypeScript SDK's client on 2025-11-25 keeps its
// session through HAProxy (sticky on Mcp-Session-Id): its calls, and the
// elicitation of an approval, which only the session's replica can
// answer, all go through.
func fleetSticky(t *testing.T, f *fleet) {
	node := testenv.Node(t)
	testenv.Package(t, testenv.TypeScriptSDKPkg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(testenv.RepoRoot(), "internal", "fleet", "testdata", "sticky.mjs"), f.url, "sticky")
	cmd.Env = append(os.Environ(), "CONDUIT_TOKEN="+token("gina"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("the TypeScript client failed: %v\nstderr:\n%s", err, stderr.String())
	}
	var saw stickySaw
	if err := json.Unmarshal(stdout.Bytes(), &saw); err != nil {
		t.Fatalf("the TypeScript client printed %q: %v", stdout.String(), err)
	}
	if saw.ProtocolVersion != "2025-11-25" || saw.SessionID == "" {
		t.Errorf("protocol %q, session %q: want 2025-11-25 with a session", saw.ProtocolVersion, saw.SessionID)
	}
	if !slices.Contains(saw.Tools, "fs__write") || !slices.Equal(saw.Tools, saw.ToolsAgain) {
		t.Errorf("tools %v, then %v", saw.Tools, saw.ToolsAgain)
	}
	for i, w := range saw.Writes {
		if id := fmt.Sprintf("sticky-%d", i); w != "wrote "+id || f.down.count(id) != 1 {
			t.Errorf("write %d: %q, %d calls", i, w, f.down.count(id))
		}
	}
	if len(saw.Writes) != 10 {
		t.Errorf("%d writes, want 10", len(saw.Writes))
	}
	if saw.Approve != "approved sticky-approve" || len(saw.Elicitations) != 1 || f.down.count("sticky-approve") != 1 {
		t.Errorf("approval: %q after %d elicitations, %d calls", saw.Approve, len(saw.Elicitations), f.down.count("sticky-approve"))
	}
}

// loadCall is one call of a load, for the checks after it.
type loadCall struct {
	id         string
	start, end time.Time
	out        outcome
	text       string
	err        error
}

// drive makes calls of tool (ids prefix-0, prefix-1, ...) through
// HAProxy as principal from callers goroutines while more(i) says call i
// is to be made; a caller whose connection fails opens another, as a
// real client would.
func drive(f *fleet, principal, prefix, tool string, ms, callers int, more func(i int64) bool) []loadCall {
	var next atomic.Int64
	var mu sync.Mutex
	var calls []loadCall
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			var cs *mcp.ClientSession
			defer func() {
				if cs != nil {
					cs.Close()
				}
			}()
			for {
				if cs == nil {
					ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
					var err error
					cs, err = connect(ctx, f.url, principal, nil)
					cancel()
					if err != nil {
						time.Sleep(50 * time.Millisecond)
						continue
					}
				}
				i := next.Add(1) - 1
				if !more(i) {
					return
				}
				lc := loadCall{id: fmt.Sprintf("%s-%d", prefix, i), start: time.Now()}
				lc.out, lc.text, lc.err = classify(cs, tool, lc.id, ms)
				lc.end = time.Now()
				if lc.out == failed || lc.out == hung {
					cs.Close()
					cs = nil
				}
				mu.Lock()
				calls = append(calls, lc)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return calls
}

// drainDelay is the replicas' --drain-delay: longer than HAProxy takes
// to see a replica not ready (inter 1s, fall 2 in docs/fleet/haproxy.cfg),
// with room for a loaded machine.
const drainDelay = 4 * time.Second

// fleetDrain: replica 3 is stopped with SIGTERM under load through
// HAProxy: it says it is not ready, HAProxy stops sending it requests
// within the drain delay, it finishes those it took and exits 0: every
// call is answered. It is started again for what follows.
func fleetDrain(t *testing.T, f *fleet) {
	var stop atomic.Bool
	var calls []loadCall
	done := make(chan struct{})
	go func() {
		defer close(done)
		calls = drive(f, "dave", "drain", "fs__slow", 100, 8, func(int64) bool { return !stop.Load() })
	}()
	time.Sleep(time.Second)
	err := f.replicas[2].Terminate(drainDelay + 10*time.Second)
	time.Sleep(time.Second)
	stop.Store(true)
	<-done
	if err != nil {
		t.Errorf("the replica's exit after SIGTERM: %v", err)
	}
	for _, c := range calls {
		if c.out != answered || f.down.count(c.id) != 1 {
			t.Errorf("call %s: %v %q %v, %d calls at the server; want every call answered", c.id, c.out, c.text, c.err, f.down.count(c.id))
		}
	}
	t.Logf("%d calls, all answered, while replica 3 drained and exited", len(calls))
	f.replicas[2].Start()
}

// fleetKill: replica 2 is killed (SIGKILL) under load through HAProxy:
// the calls that fail are the ones in flight when it died, none hangs,
// every other call is answered; it is started again for what follows.
func fleetKill(t *testing.T, f *fleet) {
	var stop atomic.Bool
	var calls []loadCall
	done := make(chan struct{})
	go func() {
		defer close(done)
		calls = drive(f, "dave", "kill", "fs__slow", 100, 8, func(int64) bool { return !stop.Load() })
	}()
	time.Sleep(1500 * time.Millisecond)
	killStart := time.Now()
	f.replicas[1].Kill()
	killEnd := time.Now()
	time.Sleep(2 * time.Second)
	stop.Store(true)
	<-done
	var ok, inFlight, afterKill int
	for _, c := range calls {
		switch {
		case c.out == answered:
			ok++
			if c.start.After(killEnd) {
				afterKill++
			}
		case c.out == failed && c.start.Before(killEnd) && c.end.After(killStart):
			inFlight++
		default:
			t.Errorf("call %s (%v to %v; kill %v to %v): outcome %v, %v", c.id,
				c.start.Format(time.StampMicro), c.end.Format(time.StampMicro),
				killStart.Format(time.StampMicro), killEnd.Format(time.StampMicro), c.out, c.err)
		}
		if c.out == answered && f.down.count(c.id) != 1 {
			t.Errorf("call %s answered, and reached the server %d times", c.id, f.down.count(c.id))
		}
	}
	t.Logf("%d calls: %d answered (%d started after the kill), %d failed in flight on the killed replica", len(calls), ok, afterKill, inFlight)
	if afterKill == 0 {
		t.Error("no call was answered after the kill")
	}
	f.replicas[1].Start()
}

// fleetRedis: Redis stopped: every call is refused saying the shared
// store is unavailable, none sent, and listing goes on; Redis started
// again (its append-only file kept): calls go through again.
func fleetRedis(t *testing.T, f *fleet) {
	cs := client(t, f.url, "frank")
	if out, text, err := classify(cs, "fs__write", "redis-before", 0); out != answered {
		t.Fatalf("before: %v %q %v", out, text, err)
	}
	f.redis.Stop()
	for i := range 6 {
		id := fmt.Sprintf("redis-down-%d", i)
		out, text, err := classify(cs, "fs__write", id, 0)
		if out != refusedDown || f.down.count(id) != 0 {
			t.Errorf("call %d while Redis is down: %v %q %v, %d calls; want it refused saying %q, none sent",
				i, out, text, err, f.down.count(id), storeDown)
		}
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Errorf("listing while Redis is down: %v", err)
	}
	f.redis.Start()
	// Each replica finds Redis again at its own pace (its pool's broken
	// connections are dropped as they are tried): wait for each.
	deadline := time.Now().Add(20 * time.Second)
	for r, url := range f.direct {
		rc := client(t, url, "frank")
		for i := 0; ; i++ {
			id := fmt.Sprintf("redis-back-%d-%d", r, i)
			out, text, err := classify(rc, "fs__write", id, 0)
			if out == answered {
				break
			}
			if out != refusedDown || f.down.count(id) != 0 || time.Now().After(deadline) {
				t.Fatalf("replica %d after Redis came back: %v %q %v, %d calls", r+1, out, text, err, f.down.count(id))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i := range 6 {
		id := fmt.Sprintf("redis-after-%d", i)
		if out, text, err := classify(cs, "fs__write", id, 0); out != answered || f.down.count(id) != 1 {
			t.Errorf("call %d after the recovery: %v %q %v", i, out, text, err)
		}
	}
}

// TestGuideHAProxy: the excerpt of the HAProxy configuration in the fleet
// guide is docs/fleet/haproxy.cfg's, line for line, so that what readers
// copy is what TestFleet runs.
func TestGuideHAProxy(t *testing.T) {
	guide, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "fleet.md"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "fleet", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for l := range strings.Lines(string(cfg)) {
		lines[strings.TrimSpace(l)] = true
	}
	_, rest, ok := strings.Cut(string(guide), "```haproxy\n")
	if !ok {
		t.Fatal("docs/fleet.md has no ```haproxy block")
	}
	block, _, _ := strings.Cut(rest, "```")
	for l := range strings.Lines(block) {
		if l = strings.TrimSpace(l); l != "" && !lines[l] {
			t.Errorf("docs/fleet.md shows %q, which docs/fleet/haproxy.cfg does not have", l)
		}
	}
}
