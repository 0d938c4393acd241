// The connection conduit wraps around a server's (stdio, in-memory, SSE).
// It does three things:
//
//   - It takes progress and log notifications off the wire as they are
//     read.
//   - It writes on one goroutine, so a stalled server cannot block a
//     call's timeout.
//   - It refuses a tools/call result over a bound before it is decoded.
//
// It also carries the requests the SDK has no method for (an extension's).

package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hooks are what a [Conn] tells its owner, and the bound it applies.
type Hooks struct {
	// ResultBytes bounds a tools/call result's JSON text. Zero means none.
	ResultBytes int
	// Marker is the Data of the error that stands in for a result over
	// ResultBytes. It holds a nonce, so a server cannot forge the refusal.
	Marker json.RawMessage
	// CallID, when set, is told the id of each request written.
	CallID func(ctx context.Context, id jsonrpc.ID)
	// Progress and Log get the notifications taken off the wire.
	Progress func(ctx context.Context, p *mcp.ProgressNotificationParams)
	Log      func(ctx context.Context, p *mcp.LoggingMessageParams)
	// TaskAnswer, when set, may replace the result of a tools/call the
	// server answered with a task. It gets the call's params, kept until
	// the answer, and returns the result to hand the SDK.
	TaskAnswer func(params, result json.RawMessage) (json.RawMessage, bool)
}

// Wrap returns c wrapped, or nil when c is not a plain connection.
func Wrap(c mcp.Connection, h Hooks) *Conn {
	if !PlainConn(c) {
		return nil
	}
	return &Conn{Connection: c, h: h}
}

// PlainConn reports whether c is one of the SDK's plain client
// connections. Those have no methods beyond mcp.Connection's, which a
// wrapper would hide. They are the stdio, in-memory and IO transports'
// and legacy SSE's. Streamable HTTP's is not: an unexported method tells
// it of the session's state. TestPlainConnTypes fails if the SDK renames
// them.
func PlainConn(c mcp.Connection) bool {
	switch fmt.Sprintf("%T", c) {
	case "*mcp.ioConn", "*mcp.sseClientConn":
		return true
	}
	return false
}

// Conn is a plain connection wrapped (see [Wrap]).
type Conn struct {
	mcp.Connection
	h Hooks

	mu sync.Mutex
	// calls holds the params of tools/call requests not answered yet:
	// their results are bounded, and read for a task (Hooks.TaskAnswer).
	calls map[jsonrpc.ID]json.RawMessage
	// ext holds the extension requests not answered yet (see call).
	ext map[jsonrpc.ID]chan *jsonrpc.Response

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
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { close(c.closing()) })
	return c.Connection.Close()
}

func (c *Conn) closing() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed == nil {
		c.closed = make(chan struct{})
	}
	return c.closed
}

// write writes msg on the connection's writer goroutine. It returns when
// msg is written or when ctx ends. The SDK's stdio connection checks ctx
// only before its write. A server may stop reading (stalled,
// SIGSTOPped), and its stdin pipe fills. The write then blocks, and every
// later write of the session waits for it. Neither the request's own
// timeout nor the call's could fire. Handed to one goroutine, the write
// goes on there while the caller is answered. A message whose ctx ended
// before the writer took it is never written.
func (c *Conn) write(ctx context.Context, msg jsonrpc.Message) error {
	closed := c.closing()
	c.writerOnce.Do(func() {
		c.writes = make(chan writeReq)
		go c.writer(closed)
	})
	done := writeDone.Get().(chan error)
	r := writeReq{ctx: ctx, msg: msg, done: done}
	select {
	case c.writes <- r:
	case <-ctx.Done():
		writeDone.Put(done)
		return ctx.Err()
	case <-closed:
		writeDone.Put(done)
		return ErrConnClosed
	}
	select {
	case err := <-done:
		writeDone.Put(done)
		return err
	case <-ctx.Done():
		// The writer still answers on done: it is not reused.
		return ctx.Err()
	}
}

// writeDone holds the empty channels that writes wait on.
var writeDone = sync.Pool{New: func() any { return make(chan error, 1) }}

// ErrConnClosed is the error of a write or call on a closed connection.
var ErrConnClosed = errors.New("conduit: connection closed")

func (c *Conn) writer(closed chan struct{}) {
	for {
		select {
		case r := <-c.writes:
			r.done <- c.Connection.Write(r.ctx, r.msg)
		case <-closed:
			return
		}
	}
}

// Write notes the ids of tools/call requests, whose results Read bounds.
// It tells a traced request its id.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	r, ok := msg.(*jsonrpc.Request)
	if ok && r.IsCall() && c.h.CallID != nil {
		c.h.CallID(ctx, r.ID)
	}
	if ok && (c.h.ResultBytes != 0 || c.h.TaskAnswer != nil) {
		c.track(r)
	}
	return c.write(ctx, msg)
}

// track keeps the params of r, a tools/call, until it is answered, and
// forgets a request that r, a cancellation, gives up: a canceled request
// may never be answered.
func (c *Conn) track(r *jsonrpc.Request) {
	switch {
	case r.IsCall() && r.Method == "tools/call":
		c.mu.Lock()
		if c.calls == nil {
			c.calls = map[jsonrpc.ID]json.RawMessage{}
		}
		c.calls[r.ID] = r.Params
		c.mu.Unlock()
	case !r.IsCall() && r.Method == "notifications/cancelled":
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
}

// answered takes the tools/call that resp answers, if it is one.
func (c *Conn) answered(resp *jsonrpc.Response) (params json.RawMessage, call bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	params, call = c.calls[resp.ID]
	delete(c.calls, resp.ID)
	return params, call
}

// bounded returns the error response that stands in for resp when resp is
// a tools/call result whose JSON text is over the limit. JSON decoded into
// Go values can take many times its size.
func (c *Conn) bounded(resp *jsonrpc.Response, call bool) jsonrpc.Message {
	limit := c.h.ResultBytes
	if !call || limit == 0 || len(resp.Result) <= limit {
		return resp
	}
	return &jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{
		Code:    CodeResultTooLarge,
		Message: "is larger than the limit of " + ByteSize(limit),
		Data:    c.h.Marker,
	}}
}

const (
	methodProgress   = "notifications/progress"
	methodLogMessage = "notifications/message"
)

// Read returns the next message that is not a progress or log
// notification. It handles those on the way, as the SDK would. A
// malformed one is dropped. It stands in for a result that is over the
// limit. An answer to an extension's request goes to its caller, not the
// SDK.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		if resp, ok := msg.(*jsonrpc.Response); ok {
			if c.extAnswer(resp) {
				continue
			}
			params, call := c.answered(resp)
			if call {
				c.taskAnswer(resp, params)
			}
			return c.bounded(resp, call), nil
		}
		r, ok := msg.(*jsonrpc.Request)
		if !ok || r.IsCall() || (r.Method != methodProgress && r.Method != methodLogMessage) {
			return msg, nil
		}
		c.notified(ctx, r)
	}
}

func (c *Conn) notified(ctx context.Context, r *jsonrpc.Request) {
	switch r.Method {
	case methodProgress:
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(r.Params, &p) == nil && c.h.Progress != nil {
			c.h.Progress(ctx, &p)
		}
	case methodLogMessage:
		var p mcp.LoggingMessageParams
		if json.Unmarshal(r.Params, &p) == nil && c.h.Log != nil {
			c.h.Log(ctx, &p)
		}
	}
}

// Call writes req on the session's connection and waits for its answer,
// which Read hands here instead of to the SDK.
func (c *Conn) Call(ctx context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error) {
	ch := make(chan *jsonrpc.Response, 1)
	c.mu.Lock()
	if c.ext == nil {
		c.ext = map[jsonrpc.ID]chan *jsonrpc.Response{}
	}
	c.ext[req.ID] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.ext, req.ID)
		c.mu.Unlock()
	}()
	if err := c.write(ctx, req); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		// Tell the server, as the SDK does for its own requests, and
		// within its bound: a server that stopped reading must not hold
		// the call past its end.
		if p, err := json.Marshal(map[string]any{"requestId": req.ID.Raw()}); err == nil {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelNoticeTimeout)
			c.write(wctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: p})
			cancel()
		}
		return nil, ctx.Err()
	case <-c.closing():
		return nil, ErrConnClosed
	}
}

// cancelNoticeTimeout bounds the write of a cancellation notice, as the
// SDK bounds its own.
const cancelNoticeTimeout = 5 * time.Second

// taskAnswer lets Hooks.TaskAnswer replace the result of resp, a
// tools/call's answer that may be a task.
func (c *Conn) taskAnswer(resp *jsonrpc.Response, params json.RawMessage) {
	if c.h.TaskAnswer == nil || resp.Error != nil || !bytes.Contains(resp.Result, []byte(`"task"`)) {
		return
	}
	if res, ok := c.h.TaskAnswer(params, resp.Result); ok {
		resp.Result = res
	}
}

// extAnswer hands resp to the extension request waiting for it, if any.
func (c *Conn) extAnswer(resp *jsonrpc.Response) bool {
	c.mu.Lock()
	ch, ok := c.ext[resp.ID]
	c.mu.Unlock()
	if ok {
		select {
		case ch <- resp:
		default: // a second answer to one request is dropped
		}
	}
	return ok
}

// StreamableCall writes req on a new connection of st's, made for it
// alone, and reads the answer. A stateful session's id and version go
// on its HTTP requests; the stateless protocol's are in req's _meta,
// which the SDK turns into headers itself.
func StreamableCall(ctx context.Context, st *mcp.StreamableClientTransport, sess *mcp.ClientSession, version string, req *jsonrpc.Request) (*jsonrpc.Response, error) {
	t := *st
	if sid := sess.ID(); sid != "" {
		hc := t.HTTPClient
		if hc == nil {
			hc = http.DefaultClient
		}
		c := *hc
		base := c.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c.Transport = sessionHeaders{base: base, id: sid, version: version}
		t.HTTPClient = &c
	}
	c, err := t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.Write(ctx, req); err != nil {
		return nil, err
	}
	for {
		msg, err := c.Read(ctx)
		if err != nil {
			return nil, err
		}
		if r, ok := msg.(*jsonrpc.Response); ok && r.ID == req.ID {
			return r, nil
		}
	}
}

// sessionHeaders puts a stateful session's id and version on the
// requests of an extension's connection. It hides the id in answers:
// a connection that learned it would end the session when it closes.
type sessionHeaders struct {
	base    http.RoundTripper
	id      string
	version string
}

func (s sessionHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Mcp-Session-Id", s.id)
	if s.version != "" && r.Header.Get("Mcp-Protocol-Version") == "" {
		r.Header.Set("Mcp-Protocol-Version", s.version)
	}
	resp, err := s.base.RoundTrip(r)
	if resp != nil {
		resp.Header.Del("Mcp-Session-Id")
	}
	return resp, err
}
