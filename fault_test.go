package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fastReconnect makes the fault tests' reconnections quick but observable.
var fastReconnect = Backoff{Min: 200 * time.Millisecond, Max: 400 * time.Millisecond}

func callPID(t *testing.T, s Source, name string) int {
	t.Helper()
	res, err := s.CallTool(context.Background(), name, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(resultText(res))
	if err != nil {
		t.Fatalf("pid: %v", err)
	}
	return pid
}

func statusOf(h *Hub, id string) ServerStatus {
	for _, st := range h.Status() {
		if st.ID == id {
			return st
		}
	}
	return ServerStatus{}
}

// events records trace events.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) trace() *Trace {
	add := func(s string) { e.mu.Lock(); e.log = append(e.log, s); e.mu.Unlock() }
	return &Trace{
		ServerUp:     func(i ServerEvent) { add("up " + i.Server) },
		ServerDown:   func(i ServerEvent) { add("down " + i.Server) },
		ToolsChanged: func(i ServerEvent) { add("changed " + i.Server) },
	}
}

func (e *events) count(s string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, l := range e.log {
		if l == s {
			n++
		}
	}
	return n
}

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func TestFaultKilledMidCall(t *testing.T) {
	t.Parallel()
	kid, marker := childServer(t, "kid", "basic")
	mem := newTestServer(t, "mem").echoTools("t")
	ev := &events{}
	h := newHub(t, []Server{kid, mem.server("mem")}, &Options{Reconnect: fastReconnect, Trace: ev.trace()})
	ctx := context.Background()
	pid := callPID(t, h, "kid__pid")

	errc := make(chan error, 1)
	go func() {
		_, err := h.CallTool(ctx, "kid__block", nil, nil)
		errc <- err
	}()
	waitMarker(t, marker, "blocking")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("the call was never answered")
	}
	e := wantKind(t, err, ErrUnavailable)
	if !errors.Is(err, ErrUnavailable) || e.Server != "kid" || e.Tool != "block" {
		t.Fatalf("%+v", e)
	}
	// The SDK reports the lost stdio session as EOF on the child's stdout.
	t.Logf("lost session: %v", e.Err)

	// The hub keeps serving its other server meanwhile.
	if _, err := h.CallTool(ctx, "mem__t", nil, nil); err != nil {
		t.Fatal(err)
	}
	// The server is seen down, then comes back as a new process.
	eventually(t, 10*time.Second, func() bool { return ev.count("down kid") >= 1 }, "kid down")
	if st := statusOf(h, "kid"); st.State == StateDown {
		if st.Err == nil || !strings.Contains(st.Err.Error(), "killed") {
			t.Errorf("down status error: %v", st.Err)
		}
	}
	eventually(t, 10*time.Second, func() bool { return statusOf(h, "kid").State == StateUp && ev.count("up kid") >= 2 }, "kid back up")
	st := statusOf(h, "kid")
	if st.Err != nil || st.Attempts != 0 {
		t.Fatalf("status after reconnection: %+v", st)
	}
	if !alive(pid) && callPID(t, h, "kid__pid") == pid {
		t.Fatal("the same process answered")
	}
	ts, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ts.Lookup("kid__echo"); !ok {
		t.Fatalf("kid's tools are not listed again: %v", exposed(ts))
	}
	if alive(pid) {
		t.Fatal("the killed child was not reaped")
	}
}

func TestFaultChildExitsMidCall(t *testing.T) {
	t.Parallel()
	kid, _ := childServer(t, "kid", "basic")
	h := newHub(t, []Server{kid}, &Options{Reconnect: Backoff{Disabled: true}})
	offered, err := h.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.CallTool(context.Background(), "kid__exit", nil, nil)
	wantKind(t, err, ErrUnavailable)
	eventually(t, 10*time.Second, func() bool { return statusOf(h, "kid").State == StateDown }, "kid down")
	st := statusOf(h, "kid")
	// The error says how the child ended, and what it said on stderr.
	if st.Err == nil || !strings.Contains(st.Err.Error(), "exit status 4") || !strings.Contains(st.Err.Error(), "exiting on request") {
		t.Fatalf("status error: %v", st.Err)
	}
	// Without reconnection it stays down; calls are answered at once.
	_, err = h.CallTool(context.Background(), "kid__echo", nil, &CallOptions{ToolSet: offered})
	if e := wantKind(t, err, ErrUnavailable); !strings.Contains(e.Err.Error(), "exit status 4") {
		t.Fatalf("%v", e.Err)
	}
	ts, _ := h.ListTools(context.Background())
	if ts.Len() != 0 || len(ts.Skipped()) != 1 || ts.Skipped()[0].Reason != SkipServerDown {
		t.Fatalf("listing of a down server: %v %v", exposed(ts), skipped(ts))
	}
}

func TestFaultNeverAnswers(t *testing.T) {
	t.Parallel()
	kid, marker := childServer(t, "kid", "basic")
	h := newHub(t, []Server{kid}, &Options{})
	start := time.Now()
	_, err := h.CallTool(context.Background(), "kid__block", nil, &CallOptions{RequestTimeout: 300 * time.Millisecond})
	e := wantKind(t, err, ErrTimeout)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("answered after %v", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(e.Message, "300ms") {
		t.Fatalf("%+v", e)
	}
	// The child saw notifications/cancelled: its handler's ctx ended.
	waitMarker(t, marker, "canceled")
	// The session is still good.
	if _, err := h.CallTool(context.Background(), "kid__echo", map[string]any{"message": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestFaultGarbage: a line on stdout that is not a JSON-RPC message (text,
// JSON that is not a message, a response without an id), inside a call
// or right after the listing, is dropped: the call is answered, the
// session stays up.
func TestFaultGarbage(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"garbage", "jsongarbage", "rpcgarbage"} {
		t.Run("before a response/"+tool, func(t *testing.T) {
			t.Parallel()
			kid, _ := childServer(t, "kid", "basic")
			ev := &events{}
			h := newHub(t, []Server{kid}, &Options{Reconnect: fastReconnect, Trace: ev.trace()})
			res, err := h.CallTool(context.Background(), "kid__"+tool, nil, &CallOptions{RequestTimeout: 20 * time.Second})
			if err != nil || resultText(res) != "after "+tool {
				t.Fatalf("%v, %v", resultText(res), err)
			}
			if _, err := h.CallTool(context.Background(), "kid__echo", nil, nil); err != nil {
				t.Fatal(err)
			}
			if up, down := ev.count("up kid"), ev.count("down kid"); up != 1 || down != 0 {
				t.Errorf("%d up, %d down", up, down)
			}
		})
	}
	t.Run("after the listing", func(t *testing.T) {
		t.Parallel()
		kid, _ := childServer(t, "kid", "garbage-after-list")
		ev := &events{}
		h := newHub(t, []Server{kid}, &Options{Reconnect: fastReconnect, Trace: ev.trace()})
		ts, err := h.ListTools(context.Background())
		if err != nil || ts.Len() == 0 {
			t.Fatalf("ListTools = %v, %v", exposed(ts), err)
		}
		time.Sleep(300 * time.Millisecond) // the garbage comes 50ms after the listing
		if _, err := h.CallTool(context.Background(), "kid__echo", nil, nil); err != nil {
			t.Fatal(err)
		}
		if up, down := ev.count("up kid"), ev.count("down kid"); up != 1 || down != 0 {
			t.Errorf("%d up, %d down", up, down)
		}
	})
}

func TestFaultToolListChanges(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, "s").echoTools("a", "b")
	changed := make(chan string, 10)
	h := newHub(t, []Server{srv.server("s")}, &Options{Trace: &Trace{ToolsChanged: func(i ServerEvent) { changed <- i.Server }}})
	ctx := context.Background()
	ts1, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if srv.method("tools/list") != 1 {
		t.Fatalf("tools/list = %d", srv.method("tools/list"))
	}
	// Nothing changed: no round trip, and the very same tool set.
	for range 5 {
		ts, err := h.ListTools(ctx)
		if err != nil || ts != ts1 {
			t.Fatal("a new tool set with nothing changed")
		}
		if _, err := h.ListToolsFor(ctx, &ListOptions{Principal: "p"}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.CallTool(ctx, "s__a", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.method("tools/list"); n != 1 {
		t.Fatalf("tools/list = %d after unchanged listings", n)
	}
	if st := h.Status()[0]; st.Tools != 2 {
		t.Fatalf("status %+v", st)
	}

	// The tool is removed between the listing and the call. Whichever
	// comes first, the server's error or conduit's own knowledge, the call
	// is answered.
	srv.RemoveTools("b")
	_, err = h.CallTool(ctx, "s__b", nil, &CallOptions{ToolSet: ts1, RequestTimeout: 5 * time.Second})
	if !errors.Is(err, ErrServerError) && !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("removed tool: %v", err)
	}
	select {
	case id := <-changed:
		if id != "s" {
			t.Fatal(id)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
	ts2, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := exposed(ts2); len(got) != 1 || got[0] != "s__a" {
		t.Fatalf("after the change: %v", got)
	}
	if n := srv.method("tools/list"); n != 2 {
		t.Fatalf("tools/list = %d", n)
	}
	// Now conduit knows: the old tool set's name is answered without a
	// round trip.
	calls := srv.called("b")
	_, err = h.CallTool(ctx, "s__b", nil, &CallOptions{ToolSet: ts1})
	if e := wantKind(t, err, ErrUnknownTool); !strings.Contains(e.Message, "no longer offered") {
		t.Fatal(e.Message)
	}
	if srv.called("b") != calls {
		t.Fatal("a call to a removed tool was sent")
	}
	// An added tool shows up after its notification.
	srv.echoTools("c")
	<-changed
	ts3, _ := h.ListTools(ctx)
	if _, ok := ts3.Lookup("s__c"); !ok {
		t.Fatalf("added tool missing: %v", exposed(ts3))
	}
	if n := srv.method("tools/list"); n != 3 {
		t.Fatalf("tools/list = %d", n)
	}
}

func TestFaultServersFailToStart(t *testing.T) {
	t.Parallel()
	quits, _ := childServer(t, "quits", "exit")
	mem := newTestServer(t, "mem").echoTools("t")
	h := newHub(t, []Server{
		{ID: "missing", Command: "/nonexistent/conduit-test-server"},
		quits,
		mem.server("mem"),
	}, &Options{Reconnect: Backoff{Min: 50 * time.Millisecond, Max: 100 * time.Millisecond}})
	ctx := context.Background()
	st := h.Status()
	if st[0].ID != "missing" || st[0].State == StateUp || st[0].Err == nil || !strings.Contains(st[0].Err.Error(), "no such file") {
		t.Fatalf("missing: %+v", st[0])
	}
	if st[1].State == StateUp || st[1].Err == nil || !strings.Contains(st[1].Err.Error(), "fatal: the test server refuses to start") {
		t.Fatalf("quits: %+v (the error must hold the server's stderr)", st[1])
	}
	if st[2].State != StateUp {
		t.Fatalf("mem: %+v", st[2])
	}
	ts, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := exposed(ts); len(got) != 1 || got[0] != "mem__t" {
		t.Fatalf("tools = %v", got)
	}
	if got := skipped(ts); len(got) != 2 || got[0] != "missing/:server_down" || got[1] != "quits/:server_down" {
		t.Fatalf("skipped = %v", got)
	}
	if _, err := h.CallTool(ctx, "mem__t", nil, nil); err != nil {
		t.Fatal(err)
	}
	// They are retried with backoff.
	eventually(t, 10*time.Second, func() bool { return statusOf(h, "quits").Attempts >= 3 }, "retries")

	// A client whose only server cannot start is made, as a hub of one:
	// down, retried, and offering nothing.
	cl := newClient(t, quits, &Options{Reconnect: fastReconnect})
	if st := cl.Status()[0]; st.State == StateUp || st.Err == nil || !strings.Contains(st.Err.Error(), "refuses to start") {
		t.Fatalf("client status %+v", st)
	}
	if ts, err := cl.ListTools(ctx); err != nil || ts.Len() != 0 {
		t.Fatalf("client tools = %v, %v", exposed(ts), err)
	}
	eventually(t, 10*time.Second, func() bool { return cl.Status()[0].Attempts >= 3 }, "client retries")
}

func TestFaultConnectTimeout(t *testing.T) {
	t.Parallel()
	silent, _ := childServer(t, "silent", "silent")
	mem := newTestServer(t, "mem").echoTools("t")
	start := time.Now()
	h := newHub(t, []Server{silent, mem.server("mem")}, &Options{ConnectTimeout: 300 * time.Millisecond, Reconnect: Backoff{Disabled: true}})
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("NewHub took %v", d)
	}
	st := statusOf(h, "silent")
	if st.State != StateDown || !strings.Contains(st.Err.Error(), "no answer to initialize within 300ms") {
		t.Fatalf("%+v", st)
	}
	// NewHub's ctx bounds the first attempt too.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	silent2, _ := childServer(t, "silent", "silent")
	if _, err := NewHub(ctx, []Server{silent2}, &Options{Policy: AllowAll()}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NewHub with an expired ctx: %v", err)
	}
}

// TestStdioCloseIsFast: children that exit on stdin EOF are not waited
// for TerminateDuration. Not parallel: it sets terminateDuration, which a
// minute makes far longer than the generous bound.
func TestStdioCloseIsFast(t *testing.T) {
	defer func(d time.Duration) { terminateDuration = d }(terminateDuration)
	terminateDuration = time.Minute
	var servers []Server
	for _, id := range []string{"a", "b", "c"} {
		s, _ := childServer(t, id, "basic")
		servers = append(servers, s)
	}
	h, err := NewHub(context.Background(), servers, &Options{Policy: AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, id := range []string{"a", "b", "c"} {
		pids = append(pids, callPID(t, h, id+"__pid"))
	}
	start := time.Now()
	h.Close()
	// The children exit on stdin EOF: no TerminateDuration is waited.
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("Close took %v", d)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("child %d outlived Close", pid)
		}
	}
}

func TestSessionOutlivesConnectTimeout(t *testing.T) {
	t.Parallel()
	kid, _ := childServer(t, "kid", "basic")
	// Long enough for a race-built child to start on a loaded machine.
	h := newHub(t, []Server{kid}, &Options{ConnectTimeout: 5 * time.Second})
	time.Sleep(5500 * time.Millisecond) // past the connect timeout
	if st := statusOf(h, "kid"); st.State != StateUp {
		t.Fatalf("%+v", st)
	}
	if _, err := h.CallTool(context.Background(), "kid__echo", nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestStdioServerOptions(t *testing.T) {
	t.Parallel()
	kid, _ := childServer(t, "kid", "basic")
	kid.Args = []string{"one", "two words"}
	kid.Env["CONDUIT_TEST_VALUE"] = "v=1"
	kid.Dir = t.TempDir()
	cl := newClient(t, kid, &Options{})
	ctx := context.Background()
	res, err := cl.CallTool(ctx, "getenv", map[string]any{"name": "CONDUIT_TEST_VALUE"}, nil)
	if err != nil || resultText(res) != "v=1" {
		t.Fatalf("env: %q %v", resultText(res), err)
	}
	// The child gets a variable of this process's only when InheritEnv
	// names it (TestChildEnvironment has the rest).
	os.Setenv("CONDUIT_TEST_INHERITED", "yes") //nolint: the child is started below
	kid2, _ := childServer(t, "kid", "basic")
	kid2.InheritEnv = []string{"CONDUIT_TEST_INHERITED"}
	cl2 := newClient(t, kid2, &Options{})
	if res, _ := cl2.CallTool(ctx, "getenv", map[string]any{"name": "CONDUIT_TEST_INHERITED"}, nil); resultText(res) != "yes" {
		t.Fatalf("inherited env: %q", resultText(res))
	}
	if res, _ := cl.CallTool(ctx, "cwd", nil, nil); resultText(res) != kid.Dir {
		t.Fatalf("dir: %q, want %q", resultText(res), kid.Dir)
	}
	if res, _ := cl.CallTool(ctx, "args", nil, nil); resultText(res) != "one two words" {
		t.Fatalf("args: %q", resultText(res))
	}
	// Reconnection after loss works for a client too.
	pid := callPID(t, cl, "pid")
	syscall.Kill(pid, syscall.SIGKILL)
	eventually(t, 15*time.Second, func() bool {
		res, err := cl.CallTool(ctx, "pid", nil, nil)
		return err == nil && resultText(res) != strconv.Itoa(pid)
	}, "the client reconnecting")
}

// TestUndecodableResult covers an answer the SDK cannot decode on a live
// session: a server error, and the session is kept.
func TestUndecodableResult(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, "s").echoTools("t")
	tr := &tamper{Transport: srv.transport()}
	h := newHub(t, []Server{{ID: "s", Transport: tr}}, &Options{})
	ctx := context.Background()
	tr.set(true, false)
	_, err := h.CallTool(ctx, "s__t", nil, nil)
	if e := wantKind(t, err, ErrServerError); !strings.Contains(e.Message, "could not be read") {
		t.Fatalf("%+v", e)
	}
	tr.set(false, false)
	if _, err := h.CallTool(ctx, "s__t", nil, nil); err != nil {
		t.Fatal(err)
	}
	if st := h.Status()[0]; st.State != StateUp {
		t.Fatalf("%+v", st)
	}
}

// TestUnusableSessionIsDropped covers a session that fails a call and then
// does not answer a ping, while its transport reports nothing wrong (as a
// half-open connection would): the session is dropped.
func TestUnusableSessionIsDropped(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, "s").echoTools("t")
	tr := &tamper{Transport: srv.transport()}
	ev := &events{}
	h := newHub(t, []Server{{ID: "s", Transport: tr}}, &Options{Trace: ev.trace()})
	tr.set(true, true)
	_, err := h.CallTool(context.Background(), "s__t", nil, nil)
	wantKind(t, err, ErrUnavailable)
	eventually(t, 10*time.Second, func() bool { return ev.count("down s") == 1 }, "s dropped")
	if st := h.Status()[0]; st.State != StateDown || !strings.Contains(st.Err.Error(), "dropped: a request failed") {
		t.Fatalf("%+v", st)
	}
}

// tamper is a transport that can corrupt tools/call results and swallow
// pings.
type tamper struct {
	mcp.Transport
	mu               sync.Mutex
	corrupt, noPings bool
	calls            map[jsonrpc.ID]bool
}

func (tr *tamper) set(corrupt, noPings bool) {
	tr.mu.Lock()
	tr.corrupt, tr.noPings = corrupt, noPings
	tr.mu.Unlock()
}

func (tr *tamper) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := tr.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	tr.calls = map[jsonrpc.ID]bool{}
	return &tamperConn{Connection: c, tr: tr}, nil
}

type tamperConn struct {
	mcp.Connection
	tr *tamper
}

func (c *tamperConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.tr.mu.Lock()
		swallow := c.tr.noPings && req.Method == "ping"
		if req.Method == "tools/call" && c.tr.corrupt {
			c.tr.calls[req.ID] = true
		}
		c.tr.mu.Unlock()
		if swallow {
			return nil
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *tamperConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.tr.mu.Lock()
		if c.tr.calls[resp.ID] {
			resp.Result = json.RawMessage(`{"content": 5}`)
		}
		c.tr.mu.Unlock()
	}
	return msg, err
}
