package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conduitmcp/conduit/internal/mailbox"
	"github.com/conduitmcp/conduit/internal/mrtr"
	"github.com/conduitmcp/conduit/internal/taskpoll"
	"github.com/conduitmcp/conduit/internal/transport"
	"github.com/conduitmcp/conduit/oauth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// conn keeps one persistent session with one server for the life of its
// hub or client. It reconnects with backoff after the session is lost.
type conn struct {
	core *core
	srv  Server
	// principal is whose session this is, for a server of
	// IdentityPrincipal; "" for a shared one.
	principal string
	oauth     *oauth.Handler // nil without an OAuth setting
	peer      RequestInfo    // how srv is reached, for Trace
	client    *mcp.Client
	// streamable is the server's Streamable HTTP transport, nil for
	// another. Requests the SDK has no method for go through it.
	streamable *mcp.StreamableClientTransport
	// rounds answers a server's multi-round-trip input requests. It does
	// so through the client's receiving handlers.
	rounds mrtr.Rounds
	stderr tailBuffer
	ready  chan struct{} // closed after the first connection attempt
	wake   chan struct{} // ends a backoff sleep (reconnect)

	mu       sync.Mutex
	session  *mcp.ClientSession
	notes    *transport.Conn // the current session's connection, if conduit wraps it
	state    ServerState
	lastErr  error
	since    time.Time
	attempts int
	closed   bool
	tools    []*mcp.Tool
	listed   bool     // tools holds a listing of the current session
	stale    bool     // the tool list must be fetched again
	hint     listHint // the cache hint: how long tools stay fresh, and for whom
	changes  uint64   // list_changed notifications seen
	gen      uint64   // a new core.nextGen whenever tools or session change
	// dropped is why the current session was dropped. A failed call or
	// keepalive ping showed it unusable. The SDK had not noticed, as with
	// an HTTP server gone away.
	dropped error

	listMu sync.Mutex // one tools/list in flight per server

	calls calls                // requests in flight, to route what the server sends
	feats features             // prompts and resources, listed and cached
	logs  *mailbox.Box[logged] // log messages on their way to the handler

	keepAlive time.Duration    // the ping interval while idle; 0: none
	heard     atomic.Int64     // when the server last answered, in UnixNano
	tasks     *taskpoll.Poller // the current session's, over Streamable HTTP
}

func newConn(c *core, srv Server, principal string) *conn {
	cn := &conn{core: c, srv: srv, principal: principal, ready: make(chan struct{}), wake: make(chan struct{}, 1),
		state: StateConnecting, since: time.Now(), peer: peerInfo(srv)}
	cn.logs = cn.newLogs()
	cn.rounds = mrtr.Rounds{Roots: c.Handlers != nil && c.Handlers.Roots != nil, Deferred: deferredInput}
	opts := &mcp.ClientOptions{
		Logger: c.sdkLogger,
		// No roots: conduit has none to offer, and a server that asks for
		// them right after initialize may not exit promptly on stdin EOF.
		Capabilities:                &mcp.ClientCapabilities{},
		ToolListChangedHandler:      func(_ context.Context, req *mcp.ToolListChangedRequest) { cn.toolsChanged(req) },
		ProgressNotificationHandler: c.onProgress,
	}
	if srv.Transport == nil && !srv.SSE {
		// conduit follows the tasks a stdio or Streamable HTTP server
		// answers with.
		opts.Capabilities.AddExtension(tasksExtension, map[string]any{})
	}
	cn.clientHandlers(opts) // server requests, log messages, list changes
	// conduit's own loop answers multi-round-trip requests.
	opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	cn.client = mcp.NewClient(c.Implementation, opts)
	cn.client.AddReceivingMiddleware(cn.requestsMiddleware)
	cn.client.AddReceivingMiddleware(cn.rounds.Keep) // last: it keeps them all
	if cn.keepAlive = keepAliveOf(c.KeepAlive, srv); cn.keepAlive > 0 {
		cn.client.AddSendingMiddleware(cn.heardMiddleware)
	}
	cn.client.AddSendingMiddleware(cn.taskMiddleware) // innermost: what the wire said
	cn.client.AddSendingMiddleware(hintMiddleware)
	cn.client.AddSendingMiddleware(cn.inputMiddleware) // outermost: each round is heard
	return cn
}

// keepAliveOf is the ping interval of srv's sessions given
// Options.KeepAlive d; 0 for none.
func keepAliveOf(d time.Duration, srv Server) time.Duration {
	switch {
	case d > 0:
		return d
	case d == 0 && srv.URL != "":
		return defaultKeepAlive
	}
	return 0
}

// heardMiddleware notes when the server answers a request. So only a
// session idle for a keepalive interval is pinged.
func (cn *conn) heardMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		// A notification has no answer: its nil result proves nothing.
		if (err == nil && res != nil) || (err != nil && answered(err)) {
			cn.heard.Store(time.Now().UnixNano())
		}
		return res, err
	}
}

// answered reports whether err, a request's error, is the server's
// answer. That is a JSON-RPC error. The exception is the one the SDK's
// reader makes of a line of stdout that is not a message. A stateless
// server on protocol 2026-07-28 refuses the SDK's ping so. The ping lacks
// the per-request _meta that protocol asks for. A server of that protocol
// may also refuse ping as a method it no longer has. Either is still
// there.
func answered(err error) bool {
	if err == nil {
		return true
	}
	rpcErr, _ := wireErrors(err)
	return rpcErr != nil && rpcErr.Code != jsonrpc.CodeInvalidRequest
}

// minPingWait is the least time a keepalive ping is given to be answered,
// however short the interval. So a live server slow to answer on a loaded
// machine is not dropped. A dead one refuses the connection at once.
const minPingWait = 10 * time.Second

// pings pings sess whenever it has been idle for cn.keepAlive, until stop
// is closed. It drops sess when a ping goes unanswered for as long (at
// least minPingWait).
func (cn *conn) pings(ctx context.Context, sess *mcp.ClientSession, stop <-chan struct{}) {
	every := cn.keepAlive
	wait := max(every, minPingWait)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if idle := time.Since(time.Unix(0, cn.heard.Load())); idle < every {
			t.Reset(every - idle)
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		err := sess.Ping(pctx, nil)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if !answered(err) {
			cn.drop(sess, fmt.Errorf("a keepalive ping failed: %w", err))
			return
		}
		t.Reset(every)
	}
}

func (cn *conn) toolsChanged(req *mcp.ToolListChangedRequest) {
	cn.mu.Lock()
	if req != nil && req.Session != nil && req.Session != cn.session {
		cn.mu.Unlock() // a late notification of a session already replaced
		return
	}
	cn.stale = true
	cn.changes++
	cn.mu.Unlock()
	if t := cn.core.Trace; t != nil && t.ToolsChanged != nil {
		t.ToolsChanged(ServerEvent{Server: cn.srv.ID, Principal: cn.principal})
	}
}

// run connects and reconnects until ctx ends.
func (cn *conn) run(ctx context.Context) {
	lo, hi := cn.core.Reconnect.bounds()
	delay := lo
	first := true
	for {
		sess, release, err := cn.connect(ctx)
		if err != nil {
			cn.down(nil, err)
		}
		if first {
			// After down: NewHub and NewClient read the first attempt's
			// outcome from the status.
			close(cn.ready)
			first = false
		}
		if err == nil {
			delay = lo
			cn.restoreLevel(ctx)
			stopPings := func() {}
			if cn.keepAlive > 0 {
				stop, done := make(chan struct{}), make(chan struct{})
				go func() { defer close(done); cn.pings(ctx, sess, stop) }()
				stopPings = func() { close(stop); <-done }
			}
			werr := cn.await(sess)
			stopPings()
			// Close even a session that ended on its own: the SDK keeps a
			// goroutine per subscriptions/listen stream until Close.
			sess.Close()
			release()
			cn.down(sess, werr)
		}
		if ctx.Err() != nil || !cn.retried() || !cn.awaitLogin(ctx) {
			return
		}
		// Jitter keeps many hubs from reconnecting in step.
		sleep := delay/2 + rand.N(delay/2+1)
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-cn.wake:
			t.Stop()
		}
		delay = min(2*delay, hi)
		cn.mu.Lock()
		if !cn.closed {
			cn.state, cn.since = StateReconnecting, time.Now()
		}
		cn.mu.Unlock()
	}
}

// await returns when sess ends, or when a call found it unusable.
func (cn *conn) await(sess *mcp.ClientSession) error {
	err := sess.Wait()
	cn.mu.Lock()
	dropped := cn.dropped
	if cn.session != sess {
		dropped = nil
	}
	cn.mu.Unlock()
	switch {
	case dropped != nil && err != nil:
		// Closing a dropped session may end it with an error of its own,
		// which can say more (a child's exit status): both are told.
		return fmt.Errorf("the session was dropped: %w (it ended with: %w)", dropped, err)
	case err != nil:
		return err
	case dropped != nil:
		return fmt.Errorf("the session was dropped: %w", dropped)
	}
	return errors.New("the session was closed by the server")
}

// connect makes one connection attempt. release must be called once the
// session is over.
//
// An OAuth login (a person in a browser) may finish after ConnectTimeout
// ended the attempt that asked for it. The attempt then fails, but the
// tokens are there. One more attempt at once brings the server up with
// them. Otherwise it would come up a backoff later, after NewHub returned.
func (cn *conn) connect(ctx context.Context) (*mcp.ClientSession, func(), error) {
	var changed <-chan struct{}
	if cn.oauth != nil {
		changed = cn.oauth.Changed()
	}
	sess, release, timedOut, err := cn.connectOnce(ctx)
	if err == nil || !timedOut || ctx.Err() != nil || changed == nil || !isClosed(changed) {
		return sess, release, err
	}
	cn.core.Logger.Debug("conduit: a login finished after the connect timeout: connecting again", "server", cn.srv.ID)
	sess, release, _, err = cn.connectOnce(ctx)
	return sess, release, err
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// connectOnce is one attempt; timedOut reports whether ConnectTimeout
// ended it.
func (cn *conn) connectOnce(ctx context.Context) (_ *mcp.ClientSession, release func(), timedOut bool, _ error) {
	cn.stderr.reset()
	// The connect timeout bounds Connect only. It must not be a context
	// that is canceled when Connect returns: the legacy SSE transport keeps
	// the context of Connect for its event stream, which would then end.
	// The timer cancels with a deadline as the cause: an OAuth login under
	// way (a person in a browser) outlives a deadline, not a cancellation
	// (see oauth.Config.AuthorizeTimeout).
	sctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	var fired atomic.Bool
	timer := time.AfterFunc(cn.core.ConnectTimeout, func() { fired.Store(true); cancelCause(errConnectTimeout) })
	tr := cn.srv.transport(&cn.stderr, cn.core.httpClient, cn.core.bounds(cn.srv.ID))
	if st, ok := tr.(*mcp.StreamableClientTransport); ok {
		hc := st.HTTPClient
		if hc == nil {
			hc = http.DefaultClient
		}
		p := taskpoll.New(hc.Transport)
		cp := *hc
		cp.Transport = p
		st.HTTPClient = &cp
		if cn.oauth != nil {
			cn.oauth.Attach(st)
		}
		p.Client = st.HTTPClient // its own requests go through auth too
		cn.mu.Lock()
		cn.tasks = p
		cn.streamable = st
		cn.mu.Unlock()
	} else {
		tr = notesTransport{tr, cn} // notifications off the wire, results bounded
		// The tasks methods share the session's connection (extCall).
		p := taskpoll.New(nil)
		p.Ext = func(ctx context.Context, method string, params map[string]any, out any) error {
			sess, err := cn.current()
			if err != nil {
				return err
			}
			if out == nil {
				out = new(json.RawMessage)
			}
			return cn.extCall(ctx, sess, method, params, out)
		}
		cn.mu.Lock()
		cn.tasks = p
		cn.mu.Unlock()
	}
	sess, err := cn.client.Connect(sctx, tr, nil)
	if !timer.Stop() && err == nil {
		// The timer fired just as Connect succeeded: the session's context
		// is gone, so the session cannot be trusted.
		sess.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		cancel()
		if login, _ := needsLogin(err); fired.Load() && ctx.Err() == nil && !login {
			// The timer cancels rather than expires the context: say what
			// happened.
			err = fmt.Errorf("no answer to initialize within %v: %w", cn.core.ConnectTimeout, context.DeadlineExceeded)
		}
		return nil, nil, fired.Load(), errServerStderr(err, cn.stderr.String())
	}
	cn.mu.Lock()
	if cn.closed {
		cn.mu.Unlock()
		sess.Close()
		cancel()
		return nil, nil, false, errClosed
	}
	cn.session = sess
	cn.state, cn.since, cn.lastErr, cn.attempts = StateUp, time.Now(), nil, 0
	cn.tools, cn.stale, cn.listed, cn.dropped = nil, true, false, nil
	cn.gen = cn.core.nextGen()
	cn.mu.Unlock()
	cn.heard.Store(time.Now().UnixNano())
	cn.core.stateChanged()
	if t := cn.core.Trace; t != nil && t.ServerUp != nil {
		t.ServerUp(ServerEvent{Server: cn.srv.ID, Principal: cn.principal})
	}
	cn.core.Logger.Debug("conduit: server up", "server", cn.srv.ID, "principal", cn.principal)
	return sess, cancel, false, nil
}

// errConnectTimeout is the cause of a connection attempt's cancellation by
// ConnectTimeout.
var errConnectTimeout = fmt.Errorf("conduit: connect timeout: %w", context.DeadlineExceeded)

// down records that sess (or, when nil, a connection attempt) ended.
func (cn *conn) down(sess *mcp.ClientSession, err error) {
	cn.mu.Lock()
	if cn.closed {
		cn.mu.Unlock()
		return
	}
	if sess != nil && cn.session != sess {
		cn.mu.Unlock()
		return
	}
	if sess != nil {
		err = errServerStderr(err, cn.stderr.String())
	}
	err = cn.srv.redact(err)
	cn.session = nil
	cn.state, cn.since, cn.lastErr = StateDown, time.Now(), err
	if login, lerr := needsLogin(err); login {
		lerr = cn.srv.redact(lerr)
		cn.state, cn.lastErr, err = StateNeedsLogin, lerr, lerr
	}
	cn.attempts++
	cn.tools, cn.stale, cn.listed, cn.dropped = nil, true, false, nil
	cn.gen = cn.core.nextGen()
	cn.mu.Unlock()
	cn.core.stateChanged()
	if t := cn.core.Trace; t != nil && t.ServerDown != nil {
		t.ServerDown(ServerEvent{Server: cn.srv.ID, Principal: cn.principal, Err: err})
	}
	cn.core.Logger.Warn("conduit: server down", "server", cn.srv.ID, "principal", cn.principal, "err", err)
}

// retried reports whether the server is reconnected after it is lost or
// could not be reached.
func (cn *conn) retried() bool {
	return cn.srv.reconnectable() && !cn.core.Reconnect.Disabled
}

// drop asks run to end sess, which a request found unusable.
func (cn *conn) drop(sess *mcp.ClientSession, err error) {
	cn.mu.Lock()
	if cn.session != sess || cn.dropped != nil {
		cn.mu.Unlock()
		return
	}
	cn.dropped = err
	cn.mu.Unlock()
	// Closing may wait out a child's TerminateDuration; the failed call is
	// answered meanwhile. run's await then sees the session end.
	go sess.Close()
}

func (cn *conn) close() {
	cn.mu.Lock()
	cn.closed = true
	sess := cn.session
	cn.session = nil
	cn.state, cn.since = StateClosed, time.Now()
	cn.mu.Unlock()
	if cn.oauth != nil {
		// A login under way has outlived its connection attempt's
		// deadline; closing ends it.
		cn.oauth.Close()
	}
	if sess != nil {
		sess.Close()
	}
}

// reconnect ends the wait of a server that is down or needs a login. It
// lets an OAuth login that failed ask the user again.
func (cn *conn) reconnect() {
	cn.mu.Lock()
	waiting := cn.state == StateDown || cn.state == StateNeedsLogin
	cn.mu.Unlock()
	if !waiting {
		return
	}
	if cn.oauth != nil {
		cn.oauth.Retry() // wakes awaitLogin
	}
	select {
	case cn.wake <- struct{}{}:
	default:
	}
}

func (cn *conn) current() (*mcp.ClientSession, error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.session == nil {
		return nil, cn.downErr()
	}
	return cn.session, nil
}

// live reports whether sess is still the server's current session.
func (cn *conn) live(sess *mcp.ClientSession) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return cn.session == sess && sess != nil
}

// downErr must be called with mu held.
func (cn *conn) downErr() error {
	switch {
	case cn.closed:
		return errClosed
	case cn.state == StateNeedsLogin && cn.lastErr != nil:
		return cn.lastErr // it names the server and the reason
	case cn.lastErr != nil:
		return fmt.Errorf("server %s is %s: %w", cn.srv.ID, cn.state, cn.lastErr)
	}
	return fmt.Errorf("server %s is %s", cn.srv.ID, cn.state)
}

func (cn *conn) status() ServerStatus {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	st := ServerStatus{ID: cn.srv.ID, State: cn.state, Err: cn.lastErr, Tools: -1, Since: cn.since, Attempts: cn.attempts}
	// A list_changed keeps the last count until the next listing.
	if cn.session != nil && cn.listed {
		st.Tools = len(cn.tools)
	}
	return st
}

// snapshot returns the tool list cached for lf, or ok false when it must
// be fetched.
func (cn *conn) snapshot(lf listFor) (tools []*mcp.Tool, gen uint64, err error, ok bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.session == nil {
		return nil, cn.gen, cn.downErr(), true
	}
	if cn.stale || !cn.hint.fresh(lf, time.Now()) {
		return nil, cn.gen, nil, false
	}
	return cn.tools, cn.gen, nil, true
}

// listTools returns the server's tools for lf. It fetches them only when
// the session is new, the server said they changed, or their cache hint
// ran out.
func (cn *conn) listTools(ctx context.Context, lf listFor) ([]*mcp.Tool, uint64, error) {
	if tools, gen, err, ok := cn.snapshot(lf); ok {
		return tools, gen, err
	}
	cn.listMu.Lock()
	defer cn.listMu.Unlock()
	if tools, gen, err, ok := cn.snapshot(lf); ok {
		return tools, gen, err
	}
	cn.mu.Lock()
	sess, changes, prev := cn.session, cn.changes, cn.hint
	if !cn.listed {
		prev = listHint{} // another session's
	}
	cn.mu.Unlock()
	start := time.Now()
	ctx, hints := withHints(ctx)

	var tools []*mcp.Tool
	if ir := sess.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Tools != nil {
		var params *mcp.ListToolsParams
		var done func(int, error)
		if cn.core.Trace != nil {
			var meta mcp.Meta
			ctx, meta, done = cn.traceList(ctx, sess, methodListTools)
			if len(meta) > 0 {
				params = &mcp.ListToolsParams{Meta: meta}
			}
		}
		for t, err := range sess.Tools(ctx, params) {
			if err != nil {
				if done != nil {
					done(len(tools), err)
				}
				if ctx.Err() != nil {
					return nil, 0, ctx.Err()
				}
				if rpcErr, _ := wireErrors(err); rpcErr == nil || rpcErr.Code == jsonrpc.CodeInvalidRequest {
					cn.core.lost(ctx, cn, sess, err) // drops a session that is gone
				}
				// A failed listing is not cached: the next one asks again.
				return nil, 0, fmt.Errorf("listing the tools of %s: %w", cn.srv.ID, err)
			}
			tools = append(tools, t)
		}
		if done != nil {
			done(len(tools), nil)
		}
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.session != sess {
		if cn.session == nil {
			return nil, cn.gen, cn.downErr()
		}
		return nil, 0, fmt.Errorf("the session with %s was replaced during the listing", cn.srv.ID)
	}
	cn.stale = cn.changes != changes // a change during the listing lists again next time
	cn.hint = hints.hint(sess, lf.principal, start, prev)
	if cn.listed && sameTools(cn.tools, tools) {
		// Listed again as it was (a hint ran out): the tool set stays.
		return cn.tools, cn.gen, nil
	}
	cn.tools, cn.listed = tools, true
	cn.gen = cn.core.nextGen()
	return tools, cn.gen, nil
}

// has reports whether the server's current listing still holds tool. ok
// is false when that is not known without asking.
func (cn *conn) has(tool string) (has, ok bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.session == nil || cn.stale {
		return false, false
	}
	for _, t := range cn.tools {
		if t.Name == tool {
			return true, true
		}
	}
	return false, true
}
