package conduit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pingCounter counts the keepalive pings that reach an HTTP handler.
type pingCounter struct {
	next  http.Handler
	pings atomic.Int64
}

func (p *pingCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"ping"`)) {
			p.pings.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	p.next.ServeHTTP(w, r)
}

// killableHTTP serves h on a loopback port until kill closes its listener
// and every connection, as a server that dies does.
type killableHTTP struct {
	URL  string
	srv  *http.Server
	once sync.Once
}

func newKillableHTTP(t *testing.T, h http.Handler) *killableHTTP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k := &killableHTTP{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h}}
	go k.srv.Serve(ln)
	t.Cleanup(k.kill)
	return k
}

func (k *killableHTTP) kill() { k.once.Do(func() { k.srv.Close() }) }

// liveServers are the HTTP servers the keepalive tests run against: both
// protocols (a stateless server speaks 2026-07-28, and refuses the SDK's
// ping with a JSON-RPC error: an answer all the same) and the legacy SSE
// transport.
var liveServers = []struct {
	name     string
	versions []string
	handler  func(*mcp.Server) http.Handler
	sse      bool
}{
	{"streamable", nil, func(s *mcp.Server) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}, false},
	{"streamable 2025-11-25", []string{"2025-11-25"}, func(s *mcp.Server) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}, false},
	{"stateless", nil, func(s *mcp.Server) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	}, false},
	{"sse", []string{"2025-11-25"}, func(s *mcp.Server) http.Handler {
		return mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	}, true},
}

func liveServer(t *testing.T, versions []string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	addTool(s, "fetch", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("fetched"), nil
	})
	return s
}

// TestKeepAliveNoticesDeadServer kills an idle HTTP server: with no call
// made, the keepalive finds it gone, the status and the trace say so, and
// the next listing leaves its tools out (the other server's stay).
func TestKeepAliveNoticesDeadServer(t *testing.T) {
	t.Parallel()
	for _, tt := range liveServers {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			web := newKillableHTTP(t, tt.handler(liveServer(t, tt.versions)))
			mem := newTestServer(t, "mem").echoTools("t")
			var mu sync.Mutex
			var downErr error
			downs := make(chan struct{}, 1)
			tr := &Trace{ServerDown: func(i ServerEvent) {
				if i.Server != "web" {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if downErr == nil {
					downErr = i.Err
					close(downs)
				}
			}}
			h := newHub(t, []Server{{ID: "web", URL: web.URL, SSE: tt.sse}, mem.server("mem")}, &Options{KeepAlive: 200 * time.Millisecond, Trace: tr})
			ctx := context.Background()
			ts, err := h.ListTools(ctx)
			if err != nil || ts.Len() != 2 {
				t.Fatalf("%v, %d tools", err, ts.Len())
			}
			web.kill()
			select {
			case <-downs:
			case <-time.After(30 * time.Second):
				t.Fatalf("no ServerDown 30s after the server died; status %+v", statusOf(h, "web"))
			}
			if st := statusOf(h, "web"); st.State == StateUp || st.Err == nil {
				t.Fatalf("status %+v", st)
			}
			mu.Lock()
			err = downErr
			mu.Unlock()
			// The SSE stream ends with the server, which the SDK notices
			// itself; the others are found by a ping.
			if !tt.sse && !strings.Contains(err.Error(), "keepalive ping") {
				t.Errorf("down: %v", err)
			}
			ts, err = h.ListTools(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := ts.Lookup("web__fetch"); ok || ts.Len() != 1 {
				t.Fatalf("the dead server's tools are listed: %d tools", ts.Len())
			}
		})
	}
}

// TestKeepAliveHealthyServerStaysUp: an idle server that answers its
// pings keeps its one session over many intervals.
func TestKeepAliveHealthyServerStaysUp(t *testing.T) {
	t.Parallel()
	for _, tt := range liveServers {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pc := &pingCounter{next: tt.handler(liveServer(t, tt.versions))}
			web := newKillableHTTP(t, pc)
			var mu sync.Mutex
			var ups int
			var downs []error
			tr := &Trace{
				ServerUp: func(ServerEvent) { mu.Lock(); ups++; mu.Unlock() },
				ServerDown: func(i ServerEvent) {
					mu.Lock()
					downs = append(downs, i.Err)
					mu.Unlock()
				},
			}
			// A ping must be answered within the interval: one that a
			// loaded machine's loopback does not miss.
			h := newHub(t, []Server{{ID: "web", URL: web.URL, SSE: tt.sse}}, &Options{KeepAlive: time.Second, Trace: tr})
			since := statusOf(h, "web").Since
			// The SSE transport sends its messages as POSTs too.
			eventually(t, 60*time.Second, func() bool { return pc.pings.Load() >= 4 }, "4 pings (%d so far)", pc.pings.Load())
			st := statusOf(h, "web")
			mu.Lock()
			n, d := ups, downs
			mu.Unlock()
			if st.State != StateUp || !st.Since.Equal(since) || len(d) != 0 || n != 1 {
				t.Fatalf("status %+v, %d ups, downs %v", st, n, d)
			}
			if _, err := h.CallTool(context.Background(), "web__fetch", nil, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestKeepAliveStalledServer: a server that takes a ping but never
// answers it is down once the ping's wait is over.
func TestKeepAliveStalledServer(t *testing.T) {
	t.Parallel()
	stall := make(chan struct{})
	defer close(stall)
	var stalled atomic.Bool
	inner := liveServers[1].handler(liveServer(t, []string{"2025-11-25"}))
	web := newKillableHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && stalled.Load() {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"method":"ping"`)) {
				<-stall
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		inner.ServeHTTP(w, r)
	}))
	ev := &events{}
	h := newHub(t, []Server{{ID: "web", URL: web.URL}}, &Options{KeepAlive: 200 * time.Millisecond, Reconnect: Backoff{Disabled: true}, Trace: ev.trace()})
	stalled.Store(true)
	start := time.Now()
	eventually(t, minPingWait+30*time.Second, func() bool { return ev.count("down web") == 1 }, "web down")
	if d := time.Since(start); d < minPingWait {
		t.Errorf("down after %v: a ping is given %v", d, minPingWait)
	}
	if st := statusOf(h, "web"); st.State != StateDown || !strings.Contains(st.Err.Error(), "keepalive ping") {
		t.Fatalf("status %+v", st)
	}
}

// TestKeepAliveDefaults: servers reached by URL are pinged unless told
// not to; children and other transports only when asked.
func TestKeepAliveDefaults(t *testing.T) {
	for _, tt := range []struct {
		srv  Server
		opt  time.Duration
		want time.Duration
	}{
		{Server{ID: "u", URL: "http://127.0.0.1:1"}, 0, defaultKeepAlive},
		{Server{ID: "u", URL: "http://127.0.0.1:1"}, time.Second, time.Second},
		{Server{ID: "u", URL: "http://127.0.0.1:1"}, -1, 0},
		{Server{ID: "c", Command: "true"}, 0, 0},
		{Server{ID: "c", Command: "true"}, time.Minute, time.Minute},
		{Server{ID: "m", Transport: &mcp.InMemoryTransport{}}, 0, 0},
		{Server{ID: "m", Transport: &mcp.InMemoryTransport{}}, -1, 0},
	} {
		if got := keepAliveOf(tt.opt, tt.srv); got != tt.want {
			t.Errorf("%+v with KeepAlive %v: %v, want %v", tt.srv, tt.opt, got, tt.want)
		}
	}
}

// TestKeepAliveSkipsBusySession: a session whose server keeps answering
// is not pinged.
func TestKeepAliveSkipsBusySession(t *testing.T) {
	t.Parallel()
	pc := &pingCounter{next: liveServers[0].handler(liveServer(t, nil))}
	web := newKillableHTTP(t, pc)
	const every = 3 * time.Second
	h := newHub(t, []Server{{ID: "web", URL: web.URL}}, &Options{KeepAlive: every})
	last := time.Now()
	var gap time.Duration // the longest time without an answer
	for deadline := last.Add(every + time.Second); time.Now().Before(deadline); {
		if _, err := h.CallTool(context.Background(), "web__fetch", nil, nil); err != nil {
			t.Fatal(err)
		}
		gap, last = max(gap, time.Since(last)), time.Now()
		time.Sleep(20 * time.Millisecond)
	}
	if n := pc.pings.Load(); n != 0 {
		if gap >= every {
			// A machine that stalled for an interval let the session idle.
			t.Skipf("%d pings after a %v gap between answers", n, gap)
		}
		t.Fatalf("%d pings to a session that was never idle for more than %v", n, gap)
	}
}

// TestAnswered: a JSON-RPC error is the server's answer (a stateless
// server on protocol 2026-07-28 refuses a ping with one), a transport's
// failure is not.
func TestAnswered(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{jsonRPCError(jsonrpc.CodeMethodNotFound, `"ping" is not supported in the new protocol`), true},
		{fmt.Errorf("calling %q: %w", "ping", jsonRPCError(-32000, "busy")), true},
		// As the SDK reports a stateless server's HTTP 400 to a ping.
		{errors.Join(jsonRPCError(jsonrpc.CodeInvalidParams, `missing or invalid _meta field "io.modelcontextprotocol/protocolVersion"`), jsonRPCError(codeRejected, "Bad Request")), true},
		{jsonRPCError(jsonrpc.CodeInvalidRequest, "not a message"), false}, // the SDK's reader, of garbage on stdout
		{jsonRPCError(codeRejected, "rejected"), false},
		{io.EOF, false},
		{mcp.ErrConnectionClosed, false},
		{context.DeadlineExceeded, false},
		{errors.New(`Post "http://127.0.0.1:1": connection refused`), false},
	} {
		if got := answered(tt.err); got != tt.want {
			t.Errorf("answered(%v) = %v", tt.err, got)
		}
	}
}
