package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Clients of protocol 2026-07-28, which have no session. Each request
// stands alone (Streamable HTTP in the SDK's stateless mode). It carries
// its protocol version, the client's capabilities and log level in
// _meta. Nothing of such a client lives in one replica's memory between
// its requests, except a call in flight in a round. Its taint is its
// principal's and its conversation's, as every client's. What it was
// asked travels in the sealed requestState it sends back.
//
// A request is served by a view: an MCP server, as a session's is. Its
// tools, prompts and resources are what the hub offers one principal
// with one taint. That is the taint of the conversation the request
// names. Views are a cache, rebuilt from the hub by any replica. At most
// maxViews are kept, and the least recently used is dropped. The
// refresher keeps them up to date as it keeps sessions.

// newProtocol is the first protocol version without sessions.
const newProtocol = "2026-07-28"

// maxViews bounds the views kept.
const maxViews = 256

// viewKey names a view in the request's context, for the stateless
// handler's getServer.
type viewKey struct{}

// readTaint is the taint viewHandler read for a request, in its context.
// The request's options take it rather than read the store again. That
// saves a round trip to Redis on each call. And the request's view and
// its decisions are of one reading.
type readTaint struct {
	principal, conversation string
	taint                   []string
}

// readTaintKey names a readTaint in the request's context.
type readTaintKey struct{}

// usesNewProtocol reports whether r is a request of protocol 2026-07-28
// or later. When it is, it returns the method and _meta of its message.
// Its MCP-Protocol-Version header says so. Without one, a POST that names
// no session says so in its _meta. The SDK then answers with the header
// mismatch the protocol asks for. The _meta names the request's
// conversation (MetaConversation), whose taint chooses its view. r's body
// is left as it was.
func usesNewProtocol(r *http.Request) (bool, peeked) {
	v := r.Header.Get("Mcp-Protocol-Version")
	if v != "" && v < newProtocol {
		return false, peeked{}
	}
	var p peeked
	if r.Method == http.MethodPost && r.Body != nil && (v != "" || r.Header.Get("Mcp-Session-Id") == "") {
		p = peek(r)
	}
	if v != "" {
		return true, p
	}
	if pv, _ := p.meta[mcp.MetaKeyProtocolVersion].(string); pv >= newProtocol {
		return true, p
	}
	return false, peeked{}
}

// peeked is what peek read of a request's message.
type peeked struct {
	method string
	meta   map[string]any
}

// peek returns the method and _meta of the JSON-RPC message in r's body.
// It returns nothing when the body is no one message. It leaves the body
// as it was, its read error included, for the SDK to answer.
func peek(r *http.Request) peeked {
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
	if err != nil {
		return peeked{}
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return peeked{} // a batch, or not JSON: the SDK answers it
	}
	return peeked{method: msg.Method, meta: msg.Params.Meta}
}

// errReader fails with err, or ends (nil), after the body read ahead.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// view returns the view of what the hub offers principal with taint as
// it is now, made on first use. Views are by taint, not by conversation.
// The conversations of one principal with the same taint share one. An
// unread view lists for a taint that could not be read (listTaint). Its
// lists are not to be kept by clients (ttlMs 0).
func (g *Gateway) view(ctx context.Context, principal string, taint []string, unread bool) (*session, error) {
	taint = slices.Sorted(slices.Values(taint))
	// Quoted, so that no principal's name reads as another's with a taint.
	key := fmt.Sprintf("%q %v", append([]string{principal}, taint...), unread)
	g.mu.Lock()
	if v := g.views[key]; v != nil {
		v.used = time.Now()
		g.mu.Unlock()
		return v.s, nil
	}
	g.mu.Unlock()
	s, err := g.newSession(ctx, principal, taint, true)
	if err != nil {
		return nil, err
	}
	s.unread = unread
	g.mu.Lock()
	defer g.mu.Unlock()
	if v := g.views[key]; v != nil { // made meanwhile by another request
		v.used = time.Now()
		return v.s, nil
	}
	if len(g.views) >= maxViews {
		var oldest string
		var at time.Time
		for k, v := range g.views {
			if oldest == "" || v.used.Before(at) {
				oldest, at = k, v.used
			}
		}
		delete(g.views, oldest)
	}
	g.views[key] = &cachedView{s: s, used: time.Now()}
	return s, nil
}

// cachedView is a view and when it was last used.
type cachedView struct {
	s    *session
	used time.Time
}

// viewList returns the views kept, for the refresher.
func (g *Gateway) viewList() []*session {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*session, 0, len(g.views))
	for _, v := range g.views {
		out = append(out, v.s)
	}
	return out
}

// requestCaps are the capabilities a client declared, never nil. A client
// of 2026-07-28 declares them in the _meta of the request of ss. Others
// declare them at initialize.
func requestCaps(ss *mcp.ServerSession) *mcp.ClientCapabilities {
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
			return ip.Capabilities
		}
	}
	return &mcp.ClientCapabilities{}
}

// relayedCaps is the _meta value of the client capabilities a server of
// protocol 2026-07-28 is told a request was made with. They are those of
// caps that the gateway passes on: elicitation, sampling, roots. So the
// server asks only what the client can answer.
func relayedCaps(caps *mcp.ClientCapabilities) map[string]any {
	out := map[string]any{}
	if caps.Elicitation != nil {
		out["elicitation"] = caps.Elicitation
	}
	if caps.Sampling != nil {
		out["sampling"] = caps.Sampling
	}
	if caps.RootsV2 != nil {
		out["roots"] = caps.RootsV2
	}
	return out
}

// clientMeta adds to out what a request of ss says of its client, for the
// servers. That is its capabilities. For a client of 2026-07-28 it is its
// log level too.
func clientMeta(ss *mcp.ServerSession, in, out mcp.Meta) mcp.Meta {
	if out == nil {
		out = mcp.Meta{}
	}
	out[mcp.MetaKeyClientCapabilities] = relayedCaps(requestCaps(ss))
	if l, ok := in[mcp.MetaKeyLogLevel].(string); ok {
		if _, set := out[mcp.MetaKeyLogLevel]; !set {
			out[mcp.MetaKeyLogLevel] = mcp.LoggingLevel(l)
		}
	}
	return out
}

// privateLists reports whether what the gateway lists depends on who
// asks. Then a list result may be kept by the asker's client only
// (cacheScope "private"). It does in two cases:
//
//   - The policy has conditions: a principal, a taint (which is the
//     principal's), or a function of the call.
//   - A server's identity is per principal. Its lists, resources and
//     prompts are the principal's own session's, read with their
//     credentials.
//
// This is the one predicate of it.
func (g *Gateway) privateLists() bool {
	return g.policy.Conditional() || len(g.perP) > 0
}

// setCacheable is the cache hint of the gateway's results of protocol
// 2026-07-28 (ServerOptions.SetCacheable). Lists (and server/discover)
// are fresh for ListTTL. A read keeps the server's hint, zero for one that
// passed input. Both are private where lists depend on the principal
// (privateLists). So no shared cache gives one principal what the policy
// gave another.
func (g *Gateway) setCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	if _, read := req.(*mcp.ReadResourceRequest); !read {
		c.TTLMs = int(g.listTTL / time.Millisecond)
	}
	if g.privateLists() {
		c.CacheScope = "private"
	}
}

// viewHandler serves a request of protocol 2026-07-28 for principal. p
// peeked at its message. It is served on the view of its taint: its
// conversation's, else its principal's. next is the SDK's stateless
// handler. A conversation that is not one is left to the request's
// handler to refuse, on the view of the principal's taint.
//
// A taint may not be read because the store is unavailable. A listing
// then still lists, as if tainted by every server (listTaint). Any other
// request is served by the view of no taint. Its handler reads the taint
// again and refuses it with the error that says why. The listing's view
// might not know its tool, prompt or resource at all.
func (g *Gateway) viewHandler(w http.ResponseWriter, r *http.Request, principal string, p peeked, next http.Handler) {
	conv, _ := conversationOf(p.meta)
	taint, ok := g.listTaint(r.Context(), principal, conv)
	read := ok
	if !ok && !listing(p.method) {
		taint, ok = nil, true
	}
	v, err := g.view(r.Context(), principal, taint, !ok)
	if err != nil {
		g.logger.Warn("gateway: serving a request without a session", "principal", principal, "err", err)
		http.Error(w, "the gateway cannot serve this request now: retry shortly", http.StatusServiceUnavailable)
		return
	}
	ctx := context.WithValue(r.Context(), viewKey{}, v)
	if read {
		ctx = context.WithValue(ctx, readTaintKey{}, readTaint{principal, conv, taint})
	}
	next.ServeHTTP(w, r.WithContext(ctx))
}

// listing reports whether method only lists (or discovers) what is
// offered.
func listing(method string) bool {
	return method == "server/discover" || strings.HasSuffix(method, "/list")
}

// serverOfView is the stateless handler's getServer: the view the request
// was given.
func serverOfView(r *http.Request) *mcp.Server {
	if v, ok := r.Context().Value(viewKey{}).(*session); ok {
		return v.server
	}
	return nil
}
