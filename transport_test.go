package conduit

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerCheck counts the requests that lack the Authorization header.
type headerCheck struct {
	next    http.Handler
	missing atomic.Int64
	seen    atomic.Int64
}

func (h *headerCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.seen.Add(1)
	if r.Header.Get("Authorization") != "Bearer secret" {
		h.missing.Add(1)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	h.next.ServeHTTP(w, r)
}

type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestHTTPTransports(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, "web").echoTools("fetch")
	getServer := func(*http.Request) *mcp.Server { return srv.Server }
	for _, tt := range []struct {
		name    string
		handler http.Handler
		sse     bool
	}{
		{"streamable", mcp.NewStreamableHTTPHandler(getServer, nil), false},
		{"stateless streamable", mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{Stateless: true}), false},
		{"sse", mcp.NewSSEHandler(getServer, nil), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			check := &headerCheck{next: tt.handler}
			hs := httptest.NewServer(check)
			defer hs.Close()
			rt := &countingTransport{}
			h := newHub(t, []Server{{ID: "web", URL: hs.URL, SSE: tt.sse, Headers: map[string]string{"Authorization": "Bearer secret"},
				HTTPClient: &http.Client{Transport: rt}}}, &Options{ConnectTimeout: 3 * time.Second})
			defer h.Close() // before hs.Close, which waits for open streams
			ctx := context.Background()
			if st := h.Status()[0]; st.State != StateUp {
				t.Fatalf("%+v", st)
			}
			// Past the connect timeout, the session still works: the
			// timeout's context must not be the session's.
			time.Sleep(3500 * time.Millisecond)
			res, err := h.CallTool(ctx, "web__fetch", map[string]any{"u": 1}, nil)
			if err != nil || !strings.HasPrefix(resultText(res), "fetch ") {
				t.Fatalf("res = %q, err = %v", resultText(res), err)
			}
			if st := h.Status()[0]; st.State != StateUp {
				t.Fatalf("%+v", st)
			}
			if check.missing.Load() != 0 || check.seen.Load() == 0 {
				t.Fatalf("headers: %d of %d requests lacked them", check.missing.Load(), check.seen.Load())
			}
			if rt.n.Load() == 0 {
				t.Fatal("the HTTPClient was not used")
			}
		})
	}
}

func TestHTTPHeadersRequired(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, "web").echoTools("fetch")
	check := &headerCheck{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil)}
	hs := httptest.NewServer(check)
	defer hs.Close()
	// A client starts with its server down, as a hub does.
	cl := newClient(t, Server{ID: "web", URL: hs.URL}, &Options{Reconnect: Backoff{Disabled: true}})
	st := cl.Status()[0]
	if st.State != StateDown || st.Err == nil || (!strings.Contains(st.Err.Error(), "Unauthorized") && !strings.Contains(st.Err.Error(), "401")) {
		t.Fatalf("status %+v", st)
	}
	_, err := cl.CallTool(context.Background(), "fetch", nil, nil)
	wantKind(t, err, ErrUnavailable) // the down server's, not an unknown tool
}

// TestHTTPReconnect stops an HTTP server under a hub and starts it again
// on the same address.
func TestHTTPReconnect(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, "web").echoTools("fetch")
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	hs := &http.Server{Handler: handler}
	go hs.Serve(ln)
	ev := &events{}
	h := newHub(t, []Server{{ID: "web", URL: "http://" + addr}}, &Options{Reconnect: fastReconnect, Trace: ev.trace()})
	ctx := context.Background()
	ts, err := h.ListTools(ctx)
	if err != nil || ts.Len() != 1 {
		t.Fatal(err)
	}
	hs.Close()
	_, err = h.CallTool(ctx, "web__fetch", nil, &CallOptions{ToolSet: ts})
	wantKind(t, err, ErrUnavailable)
	eventually(t, 10*time.Second, func() bool { return ev.count("down web") >= 1 }, "web down")

	var ln2 net.Listener
	eventually(t, 5*time.Second, func() bool { ln2, err = net.Listen("tcp", addr); return err == nil }, "listening again on %s", addr)
	hs2 := &http.Server{Handler: handler}
	go hs2.Serve(ln2)
	defer hs2.Close()
	eventually(t, 10*time.Second, func() bool { return h.Status()[0].State == StateUp }, "web up")
	if _, err := h.CallTool(ctx, "web__fetch", nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestServerValidation(t *testing.T) {
	for _, tt := range []struct {
		s    Server
		want string
	}{
		{Server{ID: "a"}, "exactly one of Command, URL or Transport"},
		{Server{ID: "a", Command: "x", URL: "http://x"}, "exactly one"},
		{Server{ID: "a", Command: "x", SSE: true}, "SSE needs a URL"},
		{Server{ID: "a.b", Command: "x"}, "must match"},
	} {
		_, err := NewHub(context.Background(), []Server{tt.s}, &Options{Policy: AllowAll()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v", tt.s, err)
		}
	}
	_, err := NewHub(context.Background(), []Server{{ID: "a", Command: "x"}, {ID: "a", Command: "y"}}, &Options{Policy: AllowAll()})
	if err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Fatal(err)
	}
	if _, err := NewHub(context.Background(), nil, &Options{Policy: AllowAll()}); err == nil {
		t.Fatal("a hub without servers")
	}
}

func TestStateAndBackoff(t *testing.T) {
	for s, want := range map[ServerState]string{StateConnecting: "connecting", StateUp: "up", StateDown: "down",
		StateReconnecting: "reconnecting", StateClosed: "closed", ServerState(9): "ServerState(9)"} {
		if s.String() != want {
			t.Errorf("%d: %q", s, s.String())
		}
	}
	lo, hi := Backoff{}.bounds()
	if lo != 250*time.Millisecond || hi != 30*time.Second {
		t.Fatal(lo, hi)
	}
	if lo, hi := (Backoff{Min: time.Second, Max: time.Millisecond}).bounds(); lo != time.Second || hi != time.Second {
		t.Fatal(lo, hi)
	}
}

// TestHTTPParallelCallsReuseConnections: the hub's default HTTP client
// keeps the connections a batch of parallel calls opened, so the next
// batches open (nearly) none. http.DefaultClient keeps 2 per host.
func TestHTTPParallelCallsReuseConnections(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, "web")
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			time.Sleep(50 * time.Millisecond)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	var opened atomic.Int64
	hs := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil))
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	hs.Start()
	defer hs.Close()
	h := newHub(t, []Server{{ID: "web", URL: hs.URL}}, &Options{})
	defer h.Close()
	const n = 16
	// A call returns once its answer is read. Its connection goes back
	// to the pool a moment later, when the stream has ended. Each batch
	// waits for that, so that the next finds them idle.
	var got, idle atomic.Int64
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn:     func(httptrace.GotConnInfo) { got.Add(1) },
		PutIdleConn: func(error) { idle.Add(1) },
	})
	batch := func() {
		got.Store(0)
		idle.Store(0)
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				if _, err := h.CallTool(ctx, "web__slow", nil, nil); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for deadline := time.Now().Add(5 * time.Second); idle.Load() < got.Load() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	batch()
	first := opened.Load()
	const more = 4
	for range more {
		batch()
	}
	if again := opened.Load() - first; again >= n {
		t.Fatalf("%d more batches opened %d connections (the first %d)", more, again, first)
	}
}
