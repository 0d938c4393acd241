package conduit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// freeAddr returns a loopback address nothing listens on (just now).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// serveHTTP serves srv over Streamable HTTP at addr until the test ends.
func serveHTTP(t *testing.T, addr string, srv *mcp.Server) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Error(err)
		return
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
}

// TestAllServersDown: a hub whose servers are all down starts, and its
// tool set says why it offers nothing; with RequireServers it fails, naming
// each server, and keeps nothing running, unless the servers come up
// within ConnectTimeout.
func TestAllServersDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dead, _ := childServer(t, "dead", "exit")
	web := Server{ID: "web", URL: "http://" + freeAddr(t) + "/mcp"}
	servers := []Server{dead, web}

	h := newHub(t, servers, &Options{ConnectTimeout: 5 * time.Second})
	ts, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws := ts.Warnings()
	if ts.Len() != 0 || len(ws) != 3 || ws[0] != "no tools are offered: the servers are down (dead, web)" ||
		!strings.HasPrefix(ws[1], "server dead is down, so its tools are not offered: ") || !strings.Contains(ws[1], "refuses to start") {
		t.Fatalf("warnings %q", ws)
	}

	_, err = NewHub(ctx, servers, &Options{Policy: AllowAll(), RequireServers: true, ConnectTimeout: time.Second,
		Reconnect: Backoff{Min: 50 * time.Millisecond, Max: 100 * time.Millisecond}})
	if !errors.Is(err, ErrServersDown) || !strings.Contains(err.Error(), "server dead is") || !strings.Contains(err.Error(), "server web is") {
		t.Fatalf("RequireServers with the servers down: %v", err)
	}
	// A client is the same.
	_, err = NewClient(ctx, web, &Options{RequireServers: true, ConnectTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrServersDown) {
		t.Fatalf("client: %v", err)
	}
	// Nothing is retried, nothing to wait for.
	_, err = NewClient(ctx, dead, &Options{RequireServers: true, ConnectTimeout: time.Hour, Reconnect: Backoff{Disabled: true}})
	if !errors.Is(err, ErrServersDown) {
		t.Fatalf("client without reconnection: %v", err)
	}

	// A server that comes up after the first attempt, within the
	// timeout, is waited for.
	late := freeAddr(t)
	srv := newTestServer(t, "late").echoTools("t")
	time.AfterFunc(300*time.Millisecond, func() { serveHTTP(t, late, srv.Server) })
	h2, err := NewHub(ctx, []Server{{ID: "late", URL: "http://" + late + "/mcp"}}, &Options{Policy: AllowAll(), RequireServers: true,
		ConnectTimeout: 30 * time.Second, Reconnect: Backoff{Min: 50 * time.Millisecond, Max: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if st := h2.Status()[0]; st.State != StateUp {
		t.Fatalf("status %+v", st)
	}
	if _, err := h2.CallTool(ctx, "late__t", nil, nil); err != nil {
		t.Fatal(err)
	}
}

// TestToolOfDownServer: a call of a tool offered before its server went
// down is answered ErrUnavailable (the model may try again later), both
// against the tool set it was offered and against the current one, where
// the tool is missing; a name no server offers is still an unknown tool.
func TestToolOfDownServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kid, _ := childServer(t, "kid", "basic")
	up := newTestServer(t, "up").echoTools("t")
	for _, prefix := range []string{"", "x_"} {
		h := newHub(t, []Server{kid, up.server("up")}, &Options{Prefix: prefix, Reconnect: Backoff{Min: time.Hour}})
		offered, err := h.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Kill(callPID(t, h, prefix+"kid__pid"), syscall.SIGKILL)
		eventually(t, 15*time.Second, func() bool { return h.Status()[0].State != StateUp }, "the server down")

		for _, ts := range []*ToolSet{offered, nil} {
			_, err := h.CallTool(ctx, prefix+"kid__echo", nil, &CallOptions{ToolSet: ts})
			e := wantKind(t, err, ErrUnavailable)
			if e.Server != "kid" || e.Message != "The server of "+prefix+"kid__echo is unavailable; try again later." {
				t.Errorf("offered %v: %+v", ts != nil, e)
			}
		}
		for _, name := range []string{prefix + "up__nope", prefix + "other__echo", "kid"} {
			_, err := h.CallTool(ctx, name, nil, nil)
			wantKind(t, err, ErrUnknownTool)
		}
		// The listing says why the tools are missing.
		ts, _ := h.ListTools(ctx)
		if ws := ts.Warnings(); len(ws) != 1 || !strings.HasPrefix(ws[0], "server kid is down") {
			t.Errorf("warnings %q", ws)
		}
	}

	// A client's tools have no server part: with its server down, any
	// name is the down server's.
	kid2, _ := childServer(t, "kid", "basic")
	cl := newClient(t, kid2, &Options{Reconnect: Backoff{Disabled: true}})
	syscall.Kill(callPID(t, cl, "pid"), syscall.SIGKILL)
	eventually(t, 15*time.Second, func() bool { return cl.Status()[0].State != StateUp }, "the server down")
	_, err := cl.CallTool(ctx, "echo", nil, nil)
	wantKind(t, err, ErrUnavailable)
}
