package conduit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goroutines returns the stacks of all goroutines by id.
func goroutines() map[int]string { return testenv.Goroutines() }

// TestNoGoroutineOutlivesClose works a hub over stdio children, an
// in-memory server and a Streamable HTTP server, with a reconnection and a
// timed-out call, and checks that after Close none of the goroutines that
// conduit or the SDK started remain and the children are gone. It is not
// parallel, so no other test's goroutines come and go meanwhile.
func TestNoGoroutineOutlivesClose(t *testing.T) {
	baseline := goroutines()

	kid1, marker := childServer(t, "kid1", "basic")
	kid2, _ := childServer(t, "kid2", "basic")
	mem := newTestServer(t, "mem").echoTools("t")
	web := newTestServer(t, "web").echoTools("fetch")
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return web.Server }, nil))
	memT, memS := mcp.NewInMemoryTransports()
	ss, err := mem.Connect(context.Background(), memS, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	h, err := NewHub(context.Background(), []Server{kid1, kid2, {ID: "mem", Transport: memT}, {ID: "web", URL: hs.URL}}, &Options{Policy: AllowAll(),
		Reconnect: fastReconnect,
		Trace:     ev.trace(),
		Hooks:     []Hook{{Before: func(context.Context, *Call) error { return nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := h.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kid1__echo", "kid2__echo", "mem__t", "web__fetch"} {
		if _, err := h.CallTool(ctx, name, nil, &CallOptions{Progress: func(*Call, Progress) {}}); err != nil {
			t.Fatal(name, err)
		}
	}
	// A call that times out (the SDK sends notifications/cancelled from a
	// goroutine of its own).
	if _, err := h.CallTool(ctx, "kid1__block", nil, &CallOptions{RequestTimeout: 50 * time.Millisecond}); err == nil {
		t.Fatal("block returned")
	}
	waitMarker(t, marker, "canceled")
	// A reconnection: the lost session's goroutines must go too.
	pids := []int{callPID(t, h, "kid1__pid")}
	pid2 := callPID(t, h, "kid2__pid")
	syscall.Kill(pid2, syscall.SIGKILL)
	eventually(t, 10*time.Second, func() bool { return ev.count("up kid2") == 2 && statusOf(h, "kid2").State == StateUp }, "kid2 back")
	pids = append(pids, pid2, callPID(t, h, "kid2__pid"))

	start := time.Now()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %v", time.Since(start))
	ss.Wait() // the in-memory server's session ends with the hub's
	hs.Close()

	checkNothingLeft(t, baseline, pids)
}

// TestNoGoroutineOutlivesClosePrincipals works the sessions of servers of
// IdentityPrincipal, a child per principal and HTTP sessions, with
// sessions closed for the bound and for idleness and one still opening,
// and checks that after Close no goroutine and no child remains.
func TestNoGoroutineOutlivesClosePrincipals(t *testing.T) {
	baseline := goroutines()
	kid, _ := childServer(t, "kid", "basic")
	kid.Identity = IdentityPrincipal
	kid.Principals = map[string]Credentials{}
	web := newTestServer(t, "web").echoTools("fetch")
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return web.Server }, nil))
	remote := Server{ID: "web", URL: hs.URL, Identity: IdentityPrincipal, Principals: map[string]Credentials{}}
	for _, p := range []string{"p1", "p2", "p3", "p4"} {
		kid.Principals[p] = Credentials{Env: map[string]string{"PRINCIPAL_TOKEN": p}}
		remote.Principals[p] = Credentials{Headers: map[string]string{"Authorization": "Bearer " + p}}
	}
	h, err := NewHub(context.Background(), []Server{kid, remote}, &Options{Policy: AllowAll(),
		MaxPrincipalSessions: 2, PrincipalIdleTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range []string{"p1", "p2", "p3", "p1"} { // p3 evicts p1's, p1 then p2's
		pids = append(pids, callPIDFor(t, h, "kid__pid", p))
		if _, err := h.CallTool(context.Background(), "web__fetch", nil, &CallOptions{Principal: p}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, func() bool { return len(principalsOf(h, "kid")) == 0 }, "idle sessions closed")
	pids = append(pids, callPIDFor(t, h, "kid__pid", "p4"))
	// One opening while Close runs.
	go h.CallTool(context.Background(), "kid__pid", nil, &CallOptions{Principal: "p2"})
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	hs.Close()

	checkNothingLeft(t, baseline, pids)
}

// checkNothingLeft fails t when a goroutine of conduit, the SDK or os/exec
// that is not in baseline (nor the test's own) remains, or a child of
// pids still runs.
func checkNothingLeft(t *testing.T, baseline map[int]string, pids []int) {
	t.Helper()
	var leaked []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		leaked = leaked[:0]
		for id, stack := range goroutines() {
			if _, ok := baseline[id]; ok || strings.Contains(stack, t.Name()) {
				continue
			}
			if strings.Contains(stack, "conduitmcp/conduit.") || strings.Contains(stack, "go-sdk") || strings.Contains(stack, "os/exec") {
				leaked = append(leaked, stack)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(leaked) > 0 {
		t.Fatalf("%d goroutines outlived Close:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
			t.Errorf("child %d outlived Close (signal 0: %v)", pid, err)
		}
	}
}
