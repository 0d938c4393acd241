package conduit

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's notifications reach conduit one at a time: the SDK hands each
// to its handler and queues the ones read meanwhile, without bound. A
// handler that waits for the user's callback (a slow Progress, Logging or
// slog handler) would let a flooding server fill that queue, and even
// quick handlers fall behind a server that does nothing but notify, as
// the SDK's dispatch of each costs more than its reading. So conduit's
// handlers only put the notification in a bounded mailbox, whose own
// goroutine calls the callback; and on the connections it can wrap (all
// but Streamable HTTP's), conduit takes progress and log notifications
// off the connection as the SDK reads them, before they reach the SDK's
// queue. Over Streamable HTTP the SDK's queue is bounded only by how far
// the server outpaces its dispatch.

// The bounds of the mailboxes: per call with a Progress callback, and per
// server for log messages. A single notification larger than the bytes
// bound is still held, alone.
const (
	progressQueue      = 16
	progressQueueBytes = 64 << 10
	logQueue           = 256
	logQueueBytes      = 1 << 20
)

// mailbox hands values to deliver, in order, on a goroutine it starts when
// it has some and that ends when it is empty. It holds at most maxItems
// values and about maxBytes of them, dropping the oldest to make room:
// the newest progress and the latest log lines are the ones worth
// keeping.
type mailbox[T any] struct {
	deliver            func(T)
	maxItems, maxBytes int
	// dropped, when set, is told how many values were dropped since it was
	// last told, when the mailbox empties.
	dropped func(n int)

	mu      sync.Mutex
	ring    []sized[T] // allocated on first use
	head, n int
	bytes   int
	running bool
	idle    chan struct{} // closed when the running goroutine ends
	drops   int
}

type sized[T any] struct {
	v    T
	size int
}

// put queues v, of about size bytes.
func (m *mailbox[T]) put(v T, size int) {
	m.mu.Lock()
	if m.ring == nil {
		m.ring = make([]sized[T], m.maxItems)
	}
	for m.n > 0 && (m.n == len(m.ring) || m.bytes+size > m.maxBytes) {
		m.bytes -= m.ring[m.head].size
		m.ring[m.head] = sized[T]{}
		m.head = (m.head + 1) % len(m.ring)
		m.n--
		m.drops++
	}
	m.ring[(m.head+m.n)%len(m.ring)] = sized[T]{v, size}
	m.n++
	m.bytes += size
	start := !m.running
	if start {
		m.running, m.idle = true, make(chan struct{})
	}
	m.mu.Unlock()
	if start {
		go m.run()
	}
}

func (m *mailbox[T]) run() {
	for {
		m.mu.Lock()
		if m.n == 0 {
			m.running = false
			drops := m.drops
			m.drops = 0
			close(m.idle)
			m.idle = nil
			m.mu.Unlock()
			if drops > 0 && m.dropped != nil {
				m.dropped(drops)
			}
			return
		}
		e := m.ring[m.head]
		m.ring[m.head] = sized[T]{}
		m.head = (m.head + 1) % len(m.ring)
		m.n--
		m.bytes -= e.size
		m.mu.Unlock()
		m.deliver(e.v)
	}
}

// flush waits until everything put so far has been delivered, for at most
// d or until ctx ends.
func (m *mailbox[T]) flush(ctx context.Context, d time.Duration) {
	m.mu.Lock()
	idle := m.idle
	m.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-t.C:
	}
}

// progressFlush bounds how long a call's answer waits for its Progress
// callback to be given the notifications that came before the result.
const progressFlush = 2 * time.Second

// newProgress is the mailbox of a call's progress notifications.
func (c *core) newProgress(server string, call *Call, f func(*Call, Progress)) *mailbox[Progress] {
	return &mailbox[Progress]{
		deliver:  func(p Progress) { f(call, p) },
		maxItems: progressQueue, maxBytes: progressQueueBytes,
		dropped: func(n int) {
			c.Logger.Debug("conduit: progress notifications dropped: the Progress callback was slower than the server", "server", server, "tool", call.Tool, "dropped", n)
		},
	}
}

func (c *core) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	if mb, ok := c.progress.Load(req.Params.ProgressToken); ok {
		p := req.Params
		mb.(*mailbox[Progress]).put(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}, len(p.Message)+32)
	}
}

// logged is a server's log message on its way to f, or to the hub's
// Logger when f is nil.
type logged struct {
	f   func(context.Context, *mcp.LoggingMessageRequest)
	ctx context.Context
	req *mcp.LoggingMessageRequest
}

func (cn *conn) newLogs() *mailbox[logged] {
	return &mailbox[logged]{
		deliver:  cn.deliverLog,
		maxItems: logQueue, maxBytes: logQueueBytes,
		dropped: func(n int) {
			cn.core.Logger.Warn("conduit: server log messages dropped: their handler was slower than the server", "server", cn.srv.ID, "dropped", n)
		},
	}
}

func (cn *conn) deliverLog(l logged) {
	if l.f != nil {
		l.f(l.ctx, l.req)
		return
	}
	cn.core.Logger.Debug("conduit: server log", "server", cn.srv.ID, "level", l.req.Params.Level, "logger", l.req.Params.Logger)
}

// logSize is about the bytes a log message holds.
func logSize(p *mcp.LoggingMessageParams) int {
	m := jsonv.Measure{MaxBytes: logQueueBytes}
	m.Value(p.Data, 0)
	return m.Size + len(p.Logger) + len(p.Level) + 32
}

// notesTransport takes progress and log notifications off the connections
// of its Transport, handing them to conduit's handlers as they are read.
type notesTransport struct {
	mcp.Transport
	cn *conn
}

func (t notesTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil || !plainConn(c) {
		return c, err
	}
	return &notesConn{Connection: c, cn: t.cn}, nil
}

// plainConn reports whether c is one of the SDK's client connections that
// have no methods beyond mcp.Connection's, which a wrapper would hide: the
// stdio, in-memory and IO transports' and legacy SSE's (Streamable HTTP's
// is told of the session's state by an unexported method).
// TestNotesConnTypes fails if the SDK renames them.
func plainConn(c mcp.Connection) bool {
	switch fmt.Sprintf("%T", c) {
	case "*mcp.ioConn", "*mcp.sseClientConn":
		return true
	}
	return false
}

type notesConn struct {
	mcp.Connection
	cn *conn

	mu    sync.Mutex
	calls map[jsonrpc.ID]struct{} // tools/call requests not answered yet

	// The connection's writes, made by one goroutine (see write).
	writerOnce sync.Once
	writes     chan writeReq
	closeOnce  sync.Once
	closed     chan struct{}
}

type writeReq struct {
	ctx  context.Context
	msg  jsonrpc.Message
	done chan error
}

// Close ends the writer and closes the connection.
func (c *notesConn) Close() error {
	c.closeOnce.Do(func() { close(c.closing()) })
	return c.Connection.Close()
}

func (c *notesConn) closing() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed == nil {
		c.closed = make(chan struct{})
	}
	return c.closed
}

// write writes msg on the connection's writer goroutine, and returns when
// it is written or when ctx ends. The SDK's stdio connection checks ctx
// only before its write, which blocks while a server that stopped reading
// (stalled, SIGSTOPped) has its stdin pipe full, and every later write of
// the session waits for it: the request's own timeout could not fire, nor
// could the call's. Handed to one goroutine, the write goes on there while
// the caller is answered; a message whose ctx ended before the writer took
// it is never written.
func (c *notesConn) write(ctx context.Context, msg jsonrpc.Message) error {
	closed := c.closing()
	c.writerOnce.Do(func() {
		c.writes = make(chan writeReq)
		go c.writer(closed)
	})
	r := writeReq{ctx: ctx, msg: msg, done: make(chan error, 1)}
	select {
	case c.writes <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return errConnClosed
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

var errConnClosed = errors.New("conduit: connection closed")

func (c *notesConn) writer(closed chan struct{}) {
	for {
		select {
		case r := <-c.writes:
			r.done <- c.Connection.Write(r.ctx, r.msg)
		case <-closed:
			return
		}
	}
}

// codeResultTooLarge is the code of the error that stands in for a
// tools/call result whose JSON text is over Limits.MaxResultBytes, refused
// before it is decoded. Its Data is the hub's resultMarker, which holds a
// random nonce: a server that sends the same code cannot pass its error
// off as conduit's refusal.
const codeResultTooLarge = -32099

// newResultMarker returns a hub's resultMarker.
func newResultMarker() json.RawMessage {
	return json.RawMessage(strconv.Quote("conduit: result over the limit " + rand.Text()))
}

// Write notes the ids of tools/call requests, whose results Read bounds,
// and tells a traced request its id.
func (c *notesConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	r, ok := msg.(*jsonrpc.Request)
	if ok && r.IsCall() && c.cn.core.Trace != nil {
		noteRequestID(ctx, r.ID)
	}
	if !ok || c.cn.core.limits.resultBytes == 0 {
		return c.write(ctx, msg)
	}
	switch {
	case r.IsCall() && r.Method == methodCallTool:
		c.mu.Lock()
		if c.calls == nil {
			c.calls = map[jsonrpc.ID]struct{}{}
		}
		c.calls[r.ID] = struct{}{}
		c.mu.Unlock()
	case !r.IsCall() && r.Method == "notifications/cancelled":
		// A canceled request may never be answered.
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(r.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.mu.Lock()
				delete(c.calls, id)
				c.mu.Unlock()
			}
		}
	}
	return c.write(ctx, msg)
}

// bounded returns the error response that stands in for resp when resp is
// a tools/call result whose JSON text is over the limit: JSON decoded into
// Go values can take many times its size.
func (c *notesConn) bounded(resp *jsonrpc.Response) jsonrpc.Message {
	c.mu.Lock()
	_, call := c.calls[resp.ID]
	delete(c.calls, resp.ID)
	c.mu.Unlock()
	limit := c.cn.core.limits.resultBytes
	if !call || limit == 0 || len(resp.Result) <= limit {
		return resp
	}
	return &jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{
		Code:    codeResultTooLarge,
		Message: "is larger than the limit of " + byteSize(limit),
		Data:    c.cn.core.resultMarker,
	}}
}

const (
	methodProgress   = "notifications/progress"
	methodLogMessage = "notifications/message"
)

// Read returns the next message that is not a progress or log
// notification, handling those on the way, as the SDK would (a malformed
// one is dropped), and stands in for a result that is over the limit.
func (c *notesConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		if resp, ok := msg.(*jsonrpc.Response); ok {
			return c.bounded(resp), nil
		}
		r, ok := msg.(*jsonrpc.Request)
		if !ok || r.IsCall() || (r.Method != methodProgress && r.Method != methodLogMessage) {
			return msg, nil
		}
		c.notified(ctx, r)
	}
}

func (c *notesConn) notified(ctx context.Context, r *jsonrpc.Request) {
	sess, _ := c.cn.current()
	switch r.Method {
	case methodProgress:
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(r.Params, &p) == nil {
			c.cn.core.onProgress(ctx, &mcp.ProgressNotificationClientRequest{Session: sess, Params: &p})
		}
	case methodLogMessage:
		var p mcp.LoggingMessageParams
		if json.Unmarshal(r.Params, &p) == nil {
			c.cn.onLog(ctx, &mcp.LoggingMessageRequest{Session: sess, Params: &p})
		}
	}
}
