package conduit

import (
	"context"
	"maps"
	"net/url"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The info structs of the Trace events that observe a call step by step
// and the requests a hub sends, and the little the pipeline does for them.
// Nothing here runs unless its Trace field is set.

// CallStartInfo is the argument of [Trace.CallStart].
type CallStartInfo struct {
	// Context is the context the call was made with.
	Context context.Context
	// Call is the call as it came in: ID, Exposed (the name as the model
	// wrote it), Principal, Assigns and Taint. The pipeline fills in the
	// rest of the same *Call once the name resolves; it must not be
	// modified.
	Call *Call
}

// ApprovedInfo is the argument of [Trace.Approved].
type ApprovedInfo struct {
	Context  context.Context // the call's context
	Call     *Call           // the call; it must not be modified
	Rule     Rule            // the rule that asked
	Approval Approval        // the approver's answer
	Elapsed  time.Duration   // how long the approver took
}

// HookDeniedInfo is the argument of [Trace.HookDenied].
type HookDeniedInfo struct {
	Context context.Context // the call's context
	Call    *Call           // the call; it must not be modified
	Hook    string          // the hook's Name
	After   bool            // an after-hook withheld the result
	Err     error           // what the hook returned
}

// ValidationFailedInfo is the argument of [Trace.ValidationFailed].
type ValidationFailedInfo struct {
	Context context.Context // the call's context
	Call    *Call           // the call; it must not be modified
	// Err says what does not match. It may quote the arguments.
	Err error
}

// ListStartInfo is the argument of [Trace.ListStart].
type ListStartInfo struct {
	Context context.Context // the context of the listing
	Server  string          // the server's id
}

// ListDoneInfo is the argument of [Trace.ListDone].
type ListDoneInfo struct {
	Context context.Context // the context ListStart returned
	Server  string          // the server's id
	Tools   int             // how many tools the server listed
	Err     error           // why the listing failed, if it did
	Request *RequestInfo    // the request (pages, when the server pages)
}

// RequestMetaInfo is the argument of [Trace.RequestMeta].
type RequestMetaInfo struct {
	Context context.Context // the request's context
	Method  string          // "tools/call" or "tools/list"
	Server  string          // the server's id
	Call    *Call           // the call, for tools/call; it must not be modified
}

// RequestInfo describes a request sent to a server: how the server is
// reached, over which session, and how long the answer took. It holds no
// URL, header or credential: only what telemetry may record.
type RequestInfo struct {
	// Transport is "stdio", "streamable-http", "sse", "in-memory", or ""
	// for a transport of the caller's own.
	Transport string
	// Address and Port are the server's host and port, for the HTTP
	// transports (Port is the scheme's default when the URL has none).
	Address string
	Port    int
	// SessionID is the session's id, for transports that have one
	// (Streamable HTTP's Mcp-Session-Id).
	SessionID string
	// ProtocolVersion is the MCP version the session negotiated.
	ProtocolVersion string
	// Elapsed is from sending the request to its answer.
	Elapsed time.Duration
	// Err is the request's own failure (the *Error of a timeout, a lost
	// session, a server's JSON-RPC error, ...); nil when the server
	// answered with a result, which an after-hook may still withhold.
	Err error

	sent bool
}

// peerInfo is what a RequestInfo says of s before any session exists.
func peerInfo(s Server) RequestInfo {
	var r RequestInfo
	switch t := s.Transport.(type) {
	case nil:
	case *mcp.CommandTransport:
		r.Transport = "stdio"
	case *mcp.StreamableClientTransport:
		r.Transport = "streamable-http"
		r.Address, r.Port = hostPort(t.Endpoint)
	case *mcp.SSEClientTransport:
		r.Transport = "sse"
		r.Address, r.Port = hostPort(t.Endpoint)
	case *mcp.InMemoryTransport:
		r.Transport = "in-memory"
	}
	switch {
	case s.Command != "":
		r.Transport = "stdio"
	case s.URL != "":
		r.Transport = "streamable-http"
		if s.SSE {
			r.Transport = "sse"
		}
		r.Address, r.Port = hostPort(s.URL)
	}
	return r
}

// hostPort is the host and port of an endpoint URL, and nothing else of
// it: a URL may carry credentials.
func hostPort(raw string) (string, int) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", 0
	}
	host := u.Hostname()
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return host, 0
		}
		return host, n
	}
	switch u.Scheme {
	case "http":
		return host, 80
	case "https":
		return host, 443
	}
	return host, 0
}

// start fills in r for a request about to be sent over sess.
func (r *RequestInfo) start(peer RequestInfo, sess *mcp.ClientSession) time.Time {
	*r = peer
	r.SessionID = sess.ID()
	if ir := sess.InitializeResult(); ir != nil {
		r.ProtocolVersion = ir.ProtocolVersion
	}
	r.sent = true
	return time.Now()
}

// ifSent is r, or nil when no request was sent.
func (r *RequestInfo) ifSent() *RequestInfo {
	if r == nil || !r.sent {
		return nil
	}
	return r
}

// requestMeta is meta with what Trace.RequestMeta contributes for a
// request in ctx, the caller's keys kept; meta itself is not modified.
func (c *core) requestMeta(ctx context.Context, method, server string, call *Call, meta mcp.Meta) mcp.Meta {
	t := c.Trace
	if t == nil || t.RequestMeta == nil {
		return meta
	}
	add := t.RequestMeta(RequestMetaInfo{Context: ctx, Method: method, Server: server, Call: call})
	switch {
	case len(add) == 0:
		return meta
	case len(meta) == 0:
		return add
	}
	out := make(mcp.Meta, len(meta)+len(add))
	maps.Copy(out, add)
	maps.Copy(out, meta)
	return out
}

// traceList begins the Trace events of a tools/list request to cn over
// sess. It returns the request's context and parameters, and the function
// that ends the request, nil when no ListDone is set.
func (cn *conn) traceList(ctx context.Context, sess *mcp.ClientSession) (context.Context, *mcp.ListToolsParams, func(tools int, err error)) {
	t := cn.core.Trace
	if t.ListStart != nil {
		if lctx := t.ListStart(ListStartInfo{Context: ctx, Server: cn.srv.ID}); lctx != nil {
			ctx = lctx
		}
	}
	var params *mcp.ListToolsParams
	if meta := cn.core.requestMeta(ctx, "tools/list", cn.srv.ID, nil, nil); len(meta) > 0 {
		params = &mcp.ListToolsParams{Meta: meta}
	}
	if t.ListDone == nil {
		return ctx, params, nil
	}
	req := new(RequestInfo)
	start := req.start(cn.peer, sess)
	return ctx, params, func(n int, err error) {
		req.Elapsed, req.Err = time.Since(start), err
		t.ListDone(ListDoneInfo{Context: ctx, Server: cn.srv.ID, Tools: n, Err: err, Request: req})
	}
}
