package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionOptions configure one session of [Gateway.Serve].
type SessionOptions struct {
	// Principal is who the session's calls are made for, as policy
	// conditions and approvers see it.
	Principal string
}

// Serve serves one session over t until the client ends it or ctx ends.
// For stdio t is &mcp.StdioTransport{}, as when Claude Desktop starts
// conduit serve. opts may be nil.
func (g *Gateway) Serve(ctx context.Context, t mcp.Transport, opts *SessionOptions) error {
	var o SessionOptions
	if opts != nil {
		o = *opts
	}
	s, err := g.makeSession(ctx, o.Principal, nil, false, true)
	if err != nil {
		return err
	}
	err = s.server.Run(ctx, t)
	if ctx.Err() != nil || clientGone(err) {
		return nil
	}
	return err
}

// clientGone reports whether err says that the client closed the
// connection, perhaps while an answer was being written. That is the end
// of the session, as the client chose it.
func clientGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE)
}

// Limits of the HTTP transport.
const (
	// DefaultMaxBodyBytes bounds a request's body when
	// HTTPOptions.MaxBodyBytes is zero.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultSessionTimeout is how long an idle HTTP session lives when
	// HTTPOptions.SessionTimeout is zero.
	DefaultSessionTimeout = 30 * time.Minute
	// MinTokenLen is the shortest bearer token accepted in HTTPOptions.
	MinTokenLen = 16
	// DefaultHeaderTimeout bounds the reading of a request's headers when
	// HTTPOptions.HeaderTimeout is zero.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout bounds the reading of a request's body when
	// HTTPOptions.BodyTimeout is zero. A JSON-RPC message is small: a
	// body this slow is stalled, not uploading.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection with no request
	// for this long when HTTPOptions.IdleTimeout is zero. It is longer
	// than common balancers' idle timeouts (60 s). So the balancer closes
	// first and never sends on a connection closed under it.
	DefaultIdleTimeout = 2 * time.Minute
)

// HTTPOptions configure the Streamable HTTP transport of [Gateway.Handler].
type HTTPOptions struct {
	// Tokens maps each bearer token to the principal it authenticates.
	// Every request must carry one (Authorization: Bearer ...). Or it must
	// carry a JWT access token that OAuth accepts. A missing or unknown
	// token is answered 401, and nothing is forwarded. Tokens are compared
	// in constant time and are at least MinTokenLen long. A session stays
	// with the principal that opened it.
	Tokens map[string]string
	// OAuth, when set, also accepts the JWT access tokens of an
	// authorization server. Each is for the principal its subject (or
	// OAuthOptions.PrincipalClaim) names. The gateway is then an OAuth 2.1
	// protected resource (RFC 9728), whose metadata ListenAndServe serves.
	// A server of identity principal may have an OAuth grant of token
	// exchange. It exchanges the caller's token for its own
	// (conduit.Options.SubjectToken). A static token of Tokens is never
	// sent anywhere.
	OAuth *OAuthOptions
	// NoAuth serves without tokens, every session for the empty principal.
	// It is for a listener on a loopback address only. Requests that
	// arrive on another address are refused (403).
	NoAuth bool
	// Hosts are the host names (with or without a port) that requests may
	// name in their Host header besides localhost, 127.0.0.1 and [::1].
	// They serve when the gateway is reached under a name of its own. Any
	// other Host is refused (403). So a page that rebinds its DNS name to
	// this address cannot reach the gateway.
	Hosts []string
	// Origins are the origins (scheme://host[:port]) that may send
	// requests from a browser. Those whose host Hosts or loopback allows
	// may too. A request with any other Origin is refused (403).
	Origins []string
	// MaxBodyBytes bounds each request's body (default
	// DefaultMaxBodyBytes). A larger one is answered 413.
	MaxBodyBytes int64
	// BodyTimeout bounds the reading of a request's body, from the
	// moment its headers are read. The default is DefaultBodyTimeout.
	// Negative is none. A body not read by then ends its connection. Once
	// the body is read the bound is lifted. So a response streamed as
	// server-sent events lasts as long as it needs.
	BodyTimeout time.Duration
	// HeaderTimeout bounds the reading of a request's headers (default
	// DefaultHeaderTimeout). IdleTimeout bounds how long a keep-alive
	// connection waits for its next request (default DefaultIdleTimeout).
	// They are the server's, so ListenAndServe applies them. A caller of
	// Handler sets them on its own http.Server (ReadHeaderTimeout,
	// IdleTimeout). No bound is set on writing a response: it would cut
	// event streams.
	HeaderTimeout, IdleTimeout time.Duration
	// SessionTimeout closes a session that has had no request for this
	// long. The default is DefaultSessionTimeout. Negative is never.
	SessionTimeout time.Duration

	// DrainDelay and ShutdownTimeout shape ListenAndServe's graceful
	// shutdown, when its context ends. It goes so:
	//
	//   - Readiness turns false at once (ReadyPath answers 503).
	//   - Requests are still taken for DrainDelay (default none), for a
	//     balancer to notice.
	//   - Then the listener closes. The requests in flight are finished,
	//     and sessions closed.
	//   - That happens within ShutdownTimeout of the context's end
	//     (default DefaultShutdownTimeout). After it, what is left is cut
	//     off.
	DrainDelay, ShutdownTimeout time.Duration
}

type httpSessionKey struct{}

// Handler returns the gateway's Streamable HTTP endpoint. It serves a
// session per client. Requests pass the Host and Origin checks, the body
// bound and the bearer token, in that order. Only then does anything
// reach the MCP handler.
func (g *Gateway) Handler(opts *HTTPOptions) (http.Handler, error) {
	h, err := g.httpHandlers(opts)
	if err != nil {
		return nil, err
	}
	return h.mcp, nil
}

// handlers are the gateway's HTTP endpoints, behind one guard.
type handlers struct {
	mcp     http.Handler // Streamable HTTP
	status  http.Handler // the caller's status (/status)
	console http.Handler // the operator console; nil without one
	o       HTTPOptions  // with the defaults
	flight  *flight      // requests in flight on mcp, for a graceful shutdown
}

// httpHandlers makes the gateway's HTTP endpoints with opts. They are the
// MCP handler and the status, behind the same checks.
func (g *Gateway) httpHandlers(opts *HTTPOptions) (*handlers, error) {
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.NoAuth && (len(o.Tokens) > 0 || o.OAuth != nil) {
		return nil, errors.New("gateway: NoAuth excludes Tokens and OAuth")
	}
	if !o.NoAuth && len(o.Tokens) == 0 && o.OAuth == nil {
		return nil, errors.New("gateway: HTTP needs Tokens or OAuth, or NoAuth for a loopback listener")
	}
	var jwts *verifier
	var scopes []string
	if o.OAuth != nil {
		var err error
		if jwts, err = newVerifier(*o.OAuth); err != nil {
			return nil, err
		}
		scopes = o.OAuth.Scopes
	}
	var tokens []hashed
	for tok, principal := range o.Tokens {
		if principal == "" {
			// A session of the empty principal is bound to no one: the
			// SDK would let any token ride it.
			return nil, errors.New("gateway: a token is for the empty principal: every token needs a principal's name")
		}
		if len(tok) < MinTokenLen {
			// The principal names which one without showing it.
			return nil, fmt.Errorf("gateway: the token of principal %q is shorter than %d characters", principal, MinTokenLen)
		}
		tokens = append(tokens, hashed{sha256.Sum256([]byte(tok)), principal})
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	switch {
	case o.BodyTimeout == 0:
		o.BodyTimeout = DefaultBodyTimeout
	case o.BodyTimeout < 0:
		o.BodyTimeout = 0
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.SessionTimeout < 0 {
		o.SessionTimeout = 0
	}
	for _, origin := range o.Origins {
		if u, err := url.Parse(origin); err != nil || u.Scheme == "" || u.Host == "" || u.Path != "" {
			return nil, fmt.Errorf("gateway: origin %q is not scheme://host[:port]", origin)
		}
	}

	// The SDK's handler asks for a server on every request, to check the
	// protocol version. It asks for a session's server on the request that
	// opens it. That one comes from the request's context. The others get
	// a server that is only asked which versions it speaks.
	versions := mcp.NewServer(g.impl, &mcp.ServerOptions{SupportedProtocolVersions: protocolVersions})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if s, ok := r.Context().Value(httpSessionKey{}).(*session); ok {
			return s.server
		}
		return versions
	}, &mcp.StreamableHTTPOptions{
		Logger:              g.sdkLogger,
		MaxRequestBodyBytes: o.MaxBodyBytes,
		SessionTimeout:      o.SessionTimeout,
		// The SDK's own check allows loopback names only; the gateway's,
		// which runs first, allows Hosts too.
		DisableLocalhostProtection: len(o.Hosts) > 0,
	})

	// Clients of protocol 2026-07-28 have no session: each request is
	// served on its own, by the view of its principal.
	stateless := mcp.NewStreamableHTTPHandler(serverOfView, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		Logger:                       g.sdkLogger,
		MaxRequestBodyBytes:          o.MaxBodyBytes,
		DisableLocalhostProtection:   len(o.Hosts) > 0,
		PropagateRequestCancellation: true,
	})

	open := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var principal string
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			principal = ti.UserID
		}
		if principal == "" && !o.NoAuth {
			// Whatever authenticated the request named no one: a session
			// for nobody would let any caller ride it.
			refuseAnonymous(w)
			return
		}
		if ok, p := usesNewProtocol(r); ok {
			if isTaskMethod(p.method) {
				g.serveTask(w, r, principal, p)
				return
			}
			g.viewHandler(w, r, principal, p, stateless)
			return
		}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			s, err := g.newSession(r.Context(), principal, nil, false)
			if err != nil {
				http.Error(w, "the gateway is unavailable", http.StatusServiceUnavailable)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), httpSessionKey{}, s))
		}
		mcpHandler.ServeHTTP(w, r)
	})
	guard := func(h http.Handler) http.Handler { return g.guarded(o, tokens, jwts, scopes, h) }
	fl := &flight{}
	h := &handlers{
		mcp:    guard(fl.track(open)),
		status: guard(http.HandlerFunc(g.serveStatus)),
		o:      o,
		flight: fl,
	}
	if g.console != nil {
		var err error
		if h.console, err = g.consoleHandler(o, guard); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// hashed is a static token, by its digest, and its principal.
type hashed struct {
	sum       [sha256.Size]byte
	principal string
}

// guarded is open behind the checks of each endpoint of the gateway. They
// are the Host and Origin checks, the body bound and the bearer token, in
// that order.
func (g *Gateway) guarded(o HTTPOptions, tokens []hashed, jwts *verifier, scopes []string, open http.Handler) http.Handler {
	var authed http.Handler = open
	if !o.NoAuth {
		verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			sum := sha256.Sum256([]byte(token))
			found := -1
			for i := range tokens {
				// Every token is compared, so the time taken tells nothing.
				if subtle.ConstantTimeCompare(sum[:], tokens[i].sum[:]) == 1 {
					found = i
				}
			}
			if found >= 0 {
				// UserID binds the session to its principal: the SDK
				// refuses a request for it with another principal's
				// token. A static token is trusted with every scope.
				return &auth.TokenInfo{UserID: tokens[found].principal, Scopes: scopes}, nil
			}
			if jwts == nil {
				return nil, auth.ErrInvalidToken
			}
			ti, err := jwts.verify(ctx, token)
			if err != nil && !errors.Is(err, auth.ErrInvalidToken) {
				// The issuer's keys could not be fetched: the details
				// (its addresses) are the operator's, not the caller's.
				g.logger.Warn("gateway: a bearer token cannot be checked", "err", err)
				return nil, errKeysUnavailable
			}
			if err != nil {
				g.logger.Debug("gateway: a bearer token was refused", "err", err)
				return nil, err
			}
			g.subjects.note(ti.UserID, token, ti.Expiration)
			return ti, nil
		}
		// The challenge is for the middleware's own refusals. A 403 of the
		// MCP handler (a session opened by another principal) is not about
		// scopes.
		inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c, ok := w.(*challenge); ok {
				w = c.ResponseWriter
			}
			open.ServeHTTP(w, r)
		})
		var skew time.Duration
		if jwts != nil {
			skew = jwts.o.Leeway
		}
		bearer := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true, Scopes: scopes, ClockSkew: skew})(inner)
		ch := challenger{scopes: scopes}
		if o.OAuth != nil {
			ch.metadata = o.OAuth.MetadataURL()
		}
		authed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			bearer.ServeHTTP(&challenge{ResponseWriter: w, c: ch, token: r.Header.Get("Authorization") != ""}, r)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hasBody := r.Body != nil && r.Body != http.NoBody
		raw := w
		w = &refusing{ResponseWriter: w, body: hasBody}
		if hasBody && o.BodyTimeout > 0 {
			// The server lifts it once the body is read to its end, to
			// watch for a client that hangs up. So an event stream that
			// answers the request lasts as long as it needs.
			http.NewResponseController(raw).SetReadDeadline(time.Now().Add(o.BodyTimeout))
		}
		if o.NoAuth && !loopbackListener(r) {
			http.Error(w, "Forbidden: this gateway serves without authentication on loopback only", http.StatusForbidden)
			return
		}
		if !allowedHost(r.Host, o.Hosts) {
			http.Error(w, "Forbidden: the Host header names no host this gateway serves", http.StatusForbidden)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !allowedOrigin(origin, o.Hosts, o.Origins) {
			http.Error(w, "Forbidden: requests from this Origin are not allowed", http.StatusForbidden)
			return
		}
		if r.ContentLength > o.MaxBodyBytes {
			http.Error(w, fmt.Sprintf("the request body exceeds %d bytes", o.MaxBodyBytes), http.StatusRequestEntityTooLarge)
			return
		}
		if r.Body != nil {
			// The server's own writer: past the bound, it closes the
			// connection.
			r.Body = http.MaxBytesReader(raw, r.Body, o.MaxBodyBytes)
		}
		authed.ServeHTTP(w, r)
	})
}

// refusing closes the connection of a request the gateway refuses (401,
// 403, 413) as soon as the answer is written. The body is not read. So a
// client that sends it slowly, or never, holds nothing.
type refusing struct {
	http.ResponseWriter
	body bool // the request has a body, perhaps still unread
}

func (w *refusing) WriteHeader(code int) {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestEntityTooLarge:
		// The server then neither drains the body nor keeps the
		// connection.
		w.Header().Set("Connection", "close")
		if w.body {
			// Whatever the server still reads of the body fails at once.
			http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now())
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusing) Write(p []byte) (int, error) { return w.ResponseWriter.Write(p) }

// Flush lets the SDK stream events through the wrapper.
func (w *refusing) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *refusing) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// refuseAnonymous answers a request authenticated for no principal.
func refuseAnonymous(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="conduit", error="invalid_token"`)
	http.Error(w, "Unauthorized: the token names no principal", http.StatusUnauthorized)
}

// challenger is what a Bearer challenge says (RFC 6750 §3). That is the
// realm, the protected resource metadata (RFC 9728 §5.1) and the scopes.
// It is set when the gateway is an OAuth protected resource.
type challenger struct {
	metadata string
	scopes   []string
}

// challenge puts the Bearer challenge on a 401 and a 403 (RFC 6750 §3).
// It takes the place of the SDK middleware's own. It says:
//
//   - error="invalid_token" when the request carried a token;
//   - "insufficient_scope" on a 403;
//   - nothing more when it carried none (§3.1).
type challenge struct {
	http.ResponseWriter
	c     challenger
	token bool // the request had an Authorization header
}

func (c *challenge) WriteHeader(code int) {
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		params := []string{`realm="conduit"`}
		if c.c.metadata != "" {
			params = append(params, "resource_metadata="+strconv.Quote(c.c.metadata))
		}
		if len(c.c.scopes) > 0 {
			params = append(params, "scope="+strconv.Quote(strings.Join(c.c.scopes, " ")))
		}
		switch {
		case code == http.StatusForbidden:
			params = append(params, `error="insufficient_scope"`)
		case c.token:
			params = append(params, `error="invalid_token"`)
		}
		c.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	}
	c.ResponseWriter.WriteHeader(code)
}

// Flush lets the SDK stream events through the wrapper.
func (c *challenge) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (c *challenge) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// loopbackListener reports whether r arrived on a loopback address.
func loopbackListener(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || addr == nil {
		return false
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		host = addr.String()
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostName is the host of a Host header or URL host. It is lower-cased,
// without port or IPv6 brackets.
func hostName(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
}

func isLoopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// allowedHost reports whether a request's Host header names loopback or
// one of hosts. A host alone allows any port.
func allowedHost(hostport string, hosts []string) bool {
	if hostport == "" {
		return false
	}
	host := hostName(hostport)
	if isLoopbackName(host) {
		return true
	}
	for _, h := range hosts {
		if _, _, err := net.SplitHostPort(h); err == nil {
			if strings.EqualFold(h, hostport) {
				return true
			}
		} else if hostName(h) == host {
			return true
		}
	}
	return false
}

// allowedOrigin reports whether a browser's Origin may send requests.
func allowedOrigin(origin string, hosts, origins []string) bool {
	if slices.ContainsFunc(origins, func(o string) bool { return strings.EqualFold(strings.TrimSuffix(o, "/"), origin) }) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false // "null", file:, and the like
	}
	return allowedHost(u.Host, hosts)
}

// ListenAndServe serves the gateway's Handler at the path /mcp of addr
// until ctx ends. addr is host:port, and a missing host is 127.0.0.1. It
// serves these too:
//
//   - with HTTPOptions.OAuth, its protected resource metadata at
//     OAuthOptions.MetadataPath;
//   - the operations endpoints HealthPath and ReadyPath, for a load
//     balancer. They need no token and no Host check, as a balancer's
//     probe sends none.
//   - StatusPath, authenticated as /mcp is.
//
// When ctx ends it shuts down gracefully (see HTTPOptions.DrainDelay) and
// returns nil. NoAuth is refused unless addr is a loopback address. ready,
// when not nil, is called with the address listened on.
func (g *Gateway) ListenAndServe(ctx context.Context, addr string, opts *HTTPOptions, ready func(net.Addr)) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("gateway: address %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if opts != nil && opts.NoAuth && !isLoopbackName(strings.ToLower(host)) {
		return fmt.Errorf("gateway: serving without authentication needs a loopback address, not %q", host)
	}
	h, err := g.httpHandlers(opts)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h.mcp)
	mux.Handle(StatusPath, h.status)
	mux.HandleFunc(HealthPath, serveHealth)
	mux.HandleFunc(ReadyPath, g.serveReady)
	if h.console != nil {
		mux.Handle(ConsolePath, h.console)
	}
	if h.o.OAuth != nil {
		mux.Handle(h.o.OAuth.MetadataPath(), h.o.OAuth.Metadata())
	}
	// No ReadTimeout or WriteTimeout: they are per connection and would
	// cut event streams; the body is bounded per request (BodyTimeout).
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: h.o.HeaderTimeout, IdleTimeout: h.o.IdleTimeout, MaxHeaderBytes: 64 << 10}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	if ready != nil {
		ready(l.Addr())
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	g.shutdown(srv, h, done)
	return nil
}

// shutdown ends srv gracefully, all within ShutdownTimeout. It turns not
// ready first. Then it still serves for DrainDelay. Then it takes no new
// connection, finishes the requests in flight, and closes the sessions
// (and their event streams).
func (g *Gateway) shutdown(srv *http.Server, h *handlers, done <-chan error) {
	g.draining.Store(true)
	limit := h.o.ShutdownTimeout
	if limit <= 0 {
		limit = DefaultShutdownTimeout
	}
	sctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if d := h.o.DrainDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-sctx.Done():
			t.Stop()
		}
	}
	// Shutdown closes the listener and the idle connections. It waits for
	// the rest. Event streams keep them busy until their sessions close.
	shut := make(chan struct{})
	go func() {
		srv.Shutdown(sctx)
		close(shut)
	}()
	if err := h.flight.wait(sctx); err != nil {
		g.logger.Warn("gateway: shutting down with requests still in flight", "timeout", limit)
	}
	g.closeSessions()
	select {
	case <-shut:
	case <-sctx.Done():
	}
	srv.Close()
	<-shut
	<-done
}

// closeSessions ends every session, as when the gateway stops serving.
func (g *Gateway) closeSessions() {
	for _, s := range g.sessionList() {
		s.close()
	}
}
