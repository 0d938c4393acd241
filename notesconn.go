package conduit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/conduitmcp/conduit/internal/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The connection conduit wraps around a server's (stdio, in-memory, SSE).
// It does three things:
//
//   - It takes progress and log notifications off the wire as they are
//     read.
//   - It writes on one goroutine, so a stalled server cannot block a
//     call's timeout.
//   - It refuses a tools/call result over Limits.MaxResultBytes before it
//     is decoded.

// notesTransport takes progress and log notifications off the connections
// of its Transport. It hands them to conduit's handlers as they are read.
type notesTransport struct {
	mcp.Transport
	cn *conn
}

func (t notesTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil || !plainConn(c) {
		return c, err
	}
	nc := &notesConn{Connection: c, cn: t.cn}
	t.cn.mu.Lock()
	t.cn.notes = nc
	t.cn.mu.Unlock()
	return nc, nil
}

// plainConn reports whether c is one of the SDK's plain client
// connections. Those have no methods beyond mcp.Connection's, which a
// wrapper would hide. They are the stdio, in-memory and IO transports'
// and legacy SSE's. Streamable HTTP's is not: an unexported method tells
// it of the session's state. TestNotesConnTypes fails if the SDK renames
// them.
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
	// ext holds the extension requests not answered yet (see call).
	ext map[jsonrpc.ID]chan *jsonrpc.Response
	// taskCalls holds the params of tools/call requests not answered yet:
	// an answer that is a task is followed with their _meta (taskAnswer).
	taskCalls map[jsonrpc.ID]json.RawMessage

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

// write writes msg on the connection's writer goroutine. It returns when
// msg is written or when ctx ends. The SDK's stdio connection checks ctx
// only before its write. A server may stop reading (stalled,
// SIGSTOPped), and its stdin pipe fills. The write then blocks, and every
// later write of the session waits for it. Neither the request's own
// timeout nor the call's could fire. Handed to one goroutine, the write
// goes on there while the caller is answered. A message whose ctx ended
// before the writer took it is never written.
func (c *notesConn) write(ctx context.Context, msg jsonrpc.Message) error {
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
		return errConnClosed
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

// codeResultTooLarge is the code of the error that stands in for an
// oversized tools/call result. Its JSON text is over
// Limits.MaxResultBytes, and it is refused before it is decoded. The
// error's Data is the hub's resultMarker, which holds a random nonce. So
// a server that sends the same code cannot pass its error off as
// conduit's refusal.
const codeResultTooLarge = transport.CodeResultTooLarge

// newResultMarker returns a hub's resultMarker.
func newResultMarker() json.RawMessage {
	return json.RawMessage(strconv.Quote("conduit: result over the limit " + rand.Text()))
}

// Write notes the ids of tools/call requests, whose results Read bounds.
// It tells a traced request its id.
func (c *notesConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	r, ok := msg.(*jsonrpc.Request)
	if ok && r.IsCall() && c.cn.core.Trace != nil {
		noteRequestID(ctx, r.ID)
	}
	if ok {
		c.noteTaskCall(r)
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
// a tools/call result whose JSON text is over the limit. JSON decoded into
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
		Message: "is larger than the limit of " + transport.ByteSize(limit),
		Data:    c.cn.core.resultMarker,
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
func (c *notesConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		if resp, ok := msg.(*jsonrpc.Response); ok {
			if c.extAnswer(resp) {
				continue
			}
			c.taskAnswer(resp)
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

// noteTaskCall keeps the params of r, a tools/call, until it is answered,
// and forgets a request that r, a cancellation, gives up. They are read
// only for an answer that is a task.
func (c *notesConn) noteTaskCall(r *jsonrpc.Request) {
	switch {
	case r.IsCall() && r.Method == methodCallTool:
		c.mu.Lock()
		if c.taskCalls == nil {
			c.taskCalls = map[jsonrpc.ID]json.RawMessage{}
		}
		c.taskCalls[r.ID] = r.Params
		c.mu.Unlock()
	case !r.IsCall() && r.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(r.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.mu.Lock()
				delete(c.taskCalls, id)
				c.mu.Unlock()
			}
		}
	}
}

// taskAnswer replaces the result of resp, a tools/call's answered with a
// task, by one that names the task, for taskMiddleware to follow.
func (c *notesConn) taskAnswer(resp *jsonrpc.Response) {
	c.mu.Lock()
	params, call := c.taskCalls[resp.ID]
	delete(c.taskCalls, resp.ID)
	c.mu.Unlock()
	if !call || resp.Error != nil || !bytes.Contains(resp.Result, []byte(`"task"`)) {
		return
	}
	c.cn.mu.Lock()
	p := c.cn.tasks
	c.cn.mu.Unlock()
	if p == nil {
		return
	}
	var req struct {
		Meta json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(params, &req)
	if res, ok := p.taskResult(resp.Result, &taskRoute{meta: req.Meta}); ok {
		resp.Result = res
	}
}
