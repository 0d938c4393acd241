package conduit

import (
	"context"
	"maps"
	"net/url"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The info structs of the Trace events. They observe a call step by step
// and the requests a hub sends. Also the little the pipeline does for
// them. Nothing here runs unless its Trace field is set.

// CallStartInfo is the argument of [Trace.CallStart] and
// [Trace.RequestStart].
type CallStartInfo struct {
	// Context is the context the call was made with.
	Context context.Context
	// Method is "tools/call" for a call. For a request it is
	// "prompts/get", "resources/read", "resources/subscribe",
	// "resources/unsubscribe" or "completion/complete".
	Method string
	// Call is the call as it came in. It has ID, Exposed (the name as the
	// model wrote it, a prompt's exposed name, or a URI), Principal,
	// Assigns and Taint. The pipeline fills in the rest of the same *Call
	// once the name resolves. A request's Tool is then the prompt's own
	// name, or the URI; its Call.Method is the one the policy governs
	// (prompts/get or resources/read, for a completion too). It must not
	// be modified.
	Call *Call
	// Meta is the call's CallOptions.Meta, as the caller gave it; it must
	// not be modified. A trace context in it (a gateway's client's, in
	// params._meta) is the one the call's span continues.
	Meta mcp.Meta
	// Local reports a call of a local tool (CallLocal): no request is
	// sent, the program answers it.
	Local bool
}

// ListInfo is the argument of [Trace.ListStart] and [Trace.ListDone].
type ListInfo struct {
	// Context is the context of the listing. At ListDone, it is the one
	// ListStart returned.
	Context context.Context
	Server  string // the server's id
	// Method is "tools/list", "prompts/list", "resources/list" or
	// "resources/templates/list".
	Method string
	// At ListDone: how many tools (prompts, ...) the server listed, why
	// the listing failed if it did, and the request (pages, when the
	// server pages).
	Items   int
	Err     error
	Request *RequestInfo
}

// RequestMetaInfo is the argument of [Trace.RequestMeta].
type RequestMetaInfo struct {
	Context context.Context // the request's context
	Method  string          // "tools/call", "tools/list", "prompts/get", ...
	Server  string          // the server's id
	// Call is the call or request (not for listings); it must not be
	// modified.
	Call *Call
}

// RequestInfo describes a request sent to a server. It says how the
// server is reached, over which session, and how long the answer took. It
// holds no URL, header or credential, only what telemetry may record.
type RequestInfo struct {
	// Transport is "stdio", "streamable-http", "sse", "in-memory", or ""
	// for a transport of the caller's own.
	Transport string
	// Address and Port are the server's host and port, for the HTTP
	// transports. Port is the scheme's default when the URL has none.
	Address string
	Port    int
	// SessionID is the session's id, for transports that have one
	// (Streamable HTTP's Mcp-Session-Id).
	SessionID string
	// ProtocolVersion is the MCP version the session negotiated.
	ProtocolVersion string
	// RequestID is the JSON-RPC id of the request, as text. It is set for
	// the transports whose connection conduit wraps (stdio, in-memory,
	// SSE). It is "" when it is not known (Streamable HTTP, a transport of
	// the caller's own). A listing of several pages has its first page's.
	RequestID string
	// Elapsed is from sending the request to its answer.
	Elapsed time.Duration
	// Err is the request's own failure. It is the *Error of a timeout, a
	// lost session, a server's JSON-RPC error, and so on. It is nil when
	// the server answered with a result. An after-hook may still withhold
	// that result.
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
// it. A URL may carry credentials.
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

// unsent says that the request r was started for was not sent after all.
// conduit answers for a server without the capability.
func (r *RequestInfo) unsent() {
	if r != nil {
		r.sent = false
	}
}

// ifSent is r, or nil when no request was sent.
func (r *RequestInfo) ifSent() *RequestInfo {
	if r == nil || !r.sent {
		return nil
	}
	return r
}

// requestMeta is meta with what Trace.RequestMeta contributes for a
// request in ctx. That replaces meta's keys of the same names. meta
// itself is not modified.
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
	maps.Copy(out, meta)
	maps.Copy(out, add)
	return out
}

// The listing methods, as in ListInfo.Method.
const (
	methodListTools     = "tools/list"
	methodListPrompts   = "prompts/list"
	methodListResources = "resources/list"
	methodListTemplates = "resources/templates/list"
)

// traceList begins the Trace events of a listing request (method) to cn
// over sess. It returns the request's context and _meta, and the function
// that ends the request, nil when no ListDone is set. With no Trace, it
// returns ctx and nothing else.
func (cn *conn) traceList(ctx context.Context, sess *mcp.ClientSession, method string) (context.Context, mcp.Meta, func(n int, err error)) {
	t := cn.core.Trace
	if t == nil {
		return ctx, nil, nil
	}
	if t.ListStart != nil {
		if lctx := t.ListStart(ListInfo{Context: ctx, Server: cn.srv.ID, Method: method}); lctx != nil {
			ctx = lctx
		}
	}
	meta := cn.core.requestMeta(ctx, method, cn.srv.ID, nil, nil)
	if t.ListDone == nil {
		return ctx, meta, nil
	}
	req := new(RequestInfo)
	start := req.start(cn.peer, sess)
	ctx = withRequestSlot(ctx, req)
	return ctx, meta, func(n int, err error) {
		req.Elapsed, req.Err = time.Since(start), err
		t.ListDone(ListInfo{Context: ctx, Server: cn.srv.ID, Method: method, Items: n, Err: err, Request: req})
	}
}

// requestSlot is the context key of a request's RequestInfo. There it
// waits for the JSON-RPC id its connection gives it (see transport.Conn).
type requestSlot struct{}

// withRequestSlot is ctx with req to be told the request's id, when req
// is not nil.
func withRequestSlot(ctx context.Context, req *RequestInfo) context.Context {
	if req == nil {
		return ctx
	}
	return context.WithValue(ctx, requestSlot{}, req)
}

// noteRequestID tells the RequestInfo waiting in ctx, if any, the id of
// the request being written.
func noteRequestID(ctx context.Context, id jsonrpc.ID) {
	req, ok := ctx.Value(requestSlot{}).(*RequestInfo)
	if !ok || req.RequestID != "" {
		return
	}
	switch v := id.Raw().(type) {
	case int64:
		req.RequestID = strconv.FormatInt(v, 10)
	case string:
		req.RequestID = v
	}
}
