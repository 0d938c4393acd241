// Requests the SDK's ClientSession has no method for (an extension's,
// such as skills/list), sent as the SDK's own jsonrpc.Request through an
// SDK Connection: the JSON-RPC framing and the transport are the SDK's.
package conduit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/conduitmcp/conduit/internal/transport"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxExtResult bounds an extension request's result.
const maxExtResult = 16 << 20

// extIDs numbers extension requests. Their ids are strings, so they can
// never be one of the SDK's own (numbers) on a shared connection.
var extIDs atomic.Uint64

// errNoExtTransport says the session's transport cannot carry a request
// the SDK has no method for.
var errNoExtTransport = errors.New("this transport cannot carry an extension's request")

// extCall sends method with params to cn's server and decodes the result
// into out. Over Streamable HTTP it goes on a connection of its own made
// by the server's SDK transport; over stdio or SSE it shares the
// session's connection, whose reader takes its answer off the wire.
func (cn *conn) extCall(ctx context.Context, sess *mcp.ClientSession, method string, params map[string]any, out any) error {
	// An answer that never comes must not hold the caller for ever.
	if d := cmp.Or(max(cn.core.RequestTimeout, 0), max(cn.core.CallTimeout, 0)); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	version := ""
	if ir := sess.InitializeResult(); ir != nil {
		version = ir.ProtocolVersion
	}
	if version >= "2026-07-28" {
		// The two keys every stateless request carries. No capability is
		// claimed: an extension's listing asks the client for nothing.
		params["_meta"] = map[string]any{mcp.MetaKeyProtocolVersion: version, mcp.MetaKeyClientCapabilities: map[string]any{}}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	id, err := jsonrpc.MakeID(fmt.Sprintf("conduit-ext-%d", extIDs.Add(1)))
	if err != nil {
		return err
	}
	req := &jsonrpc.Request{ID: id, Method: method, Params: raw}
	cn.mu.Lock()
	st, nc := cn.streamable, cn.notes
	cn.mu.Unlock()
	var resp *jsonrpc.Response
	switch {
	case st != nil:
		resp, err = streamableCall(ctx, st, sess, version, req)
	case nc != nil:
		resp, err = nc.call(ctx, req)
	default:
		err = errNoExtTransport
	}
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if resp.Error != nil {
		return resp.Error
	}
	if len(resp.Result) > maxExtResult {
		return fmt.Errorf("%s: the result is larger than %s", method, transport.ByteSize(maxExtResult))
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return fmt.Errorf("%s: the result: %w", method, err)
	}
	return nil
}

// streamableCall writes req on a new connection of st's, made for it
// alone, and reads the answer. A stateful session's id and version go
// on its HTTP requests; the stateless protocol's are in req's _meta,
// which the SDK turns into headers itself.
func streamableCall(ctx context.Context, st *mcp.StreamableClientTransport, sess *mcp.ClientSession, version string, req *jsonrpc.Request) (*jsonrpc.Response, error) {
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

// call writes req on the session's connection and waits for its answer,
// which Read hands here instead of to the SDK.
func (c *notesConn) call(ctx context.Context, req *jsonrpc.Request) (*jsonrpc.Response, error) {
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
		// Tell the server, as the SDK does for its own requests.
		if p, err := json.Marshal(map[string]any{"requestId": req.ID.Raw()}); err == nil {
			c.write(context.WithoutCancel(ctx), &jsonrpc.Request{Method: "notifications/cancelled", Params: p})
		}
		return nil, ctx.Err()
	case <-c.closing():
		return nil, errConnClosed
	}
}

// extAnswer hands resp to the extension request waiting for it, if any.
func (c *notesConn) extAnswer(resp *jsonrpc.Response) bool {
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
