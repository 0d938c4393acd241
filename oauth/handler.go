package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Handler is the [auth.OAuthHandler] of one server: give it to
// mcp.StreamableClientTransport's OAuthHandler field (conduit does this for
// every Server with an OAuth setting). It sends the stored token, refreshes
// it (saving rotated refresh tokens), and on a 401 or a 403
// insufficient_scope runs the configured grant. Authorize calls are
// serialized, so parallel requests that fail together cause one login.
type Handler struct {
	server   string
	endpoint string
	cfg      Config
	store    TokenStore
	key      Key
	hc       *http.Client
	red      redactor

	mu  sync.Mutex // serializes Authorize
	sdk *auth.AuthorizationCodeHandler
	// The issuer and resource indicator of the authorization under way,
	// for the SDK's token hook.
	issuer, indicator string
	stepUps           []time.Time // recent step-up authorizations
	sdkFor            string      // the reused client h.sdk was made for ("" for none)

	tsMu   sync.Mutex
	loaded bool // the store was read
	// dcr is the client registered dynamically that a login reuses
	// (dynamic client registration); dcrLoaded, that the store was read for it.
	dcr       *dynClient
	dcrLoaded bool
	fresh     bool // stored tokens are not used (Login)
	ts        *tokenSource
	dead      string // the access token whose refresh was refused
	changed   chan struct{}
	asked     bool     // an interactive step obtained tokens
	dpopKey   *dpopKey // nil until DPoP is used
	refused   refusal  // the jwt_bearer assertion refused
	// subjectFailed is the subject token a token exchange could not use
	// (RFC 8693); noSubject when there was none.
	subjectFailed string
	// failed is the outcome of an interactive step that failed or was
	// declined, kept until new tokens come or Retry: a user is asked once,
	// not again on every request or reconnection that meets a 401.
	failed   *LoginError
	prompted bool // the current authorization called Authorize (under mu)

	done  context.Context // ended by Close
	close context.CancelFunc
}

var _ auth.OAuthHandler = (*Handler)(nil)

// authTimeout bounds each request to an authorization server when the
// HTTP client has no timeout of its own.
const authTimeout = 30 * time.Second

// NewHandler returns the handler of the server named server (its conduit
// id, the key of its tokens) at endpoint.
func NewHandler(server, endpoint string, cfg *Config) (*Handler, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if server == "" {
		return nil, errors.New("oauth: no server id")
	}
	if err := cfg.Validate(endpoint); err != nil {
		return nil, err
	}
	h := &Handler{server: server, endpoint: endpoint, cfg: *cfg, changed: make(chan struct{})}
	h.done, h.close = context.WithCancel(context.Background())
	h.cfg.Scopes = slices.Clone(cfg.Scopes)
	h.store = cfg.Store
	if h.store == nil {
		h.store = &MemoryStore{}
	}
	h.key = Key{Server: server, Principal: cfg.Principal}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	cp := *hc
	if cp.Timeout == 0 {
		cp.Timeout = authTimeout
	}
	// Token requests carry DPoP proofs once DPoP is in use.
	cp.Transport = &dpopTransport{h: h, base: hc.Transport}
	h.hc = &cp
	if cfg.DPoP {
		if err := h.useDPoP(); err != nil {
			return nil, err
		}
	}
	h.red.add(cfg.ClientSecret, cfg.PrivateKey)
	if cfg.IdP != nil {
		h.red.add(cfg.IdP.ClientSecret)
	}
	return h, nil
}

// TokenSource returns the source of the token to send, or nil when there
// is none yet; it reads the store the first time.
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	if !h.loaded && !h.fresh {
		rec, err := h.store.Load(ctx, h.key)
		if err != nil {
			return nil, h.red.wrap(err)
		}
		h.loaded = true
		h.rememberLocked(rec)
		if usable(rec, h.endpoint) && rec.Token.AccessToken != h.dead {
			h.installLocked(rec, true)
		}
	}
	if h.ts == nil {
		return nil, nil
	}
	return h.ts, nil
}

// usable reports whether rec holds tokens for endpoint: tokens go only to
// the resource they were issued for.
func usable(rec *Record, endpoint string) bool {
	return rec != nil && rec.Token != nil && rec.Token.AccessToken != "" && sameResource(rec.Resource, endpoint)
}

func sameResource(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// installLocked makes rec the current tokens. With persist, new tokens
// (refreshed, rotated) are saved to the store.
func (h *Handler) installLocked(rec *Record, persist bool) *tokenSource {
	tok := *rec.Token
	var base oauth2.TokenSource
	static := false
	if rec.TokenURL != "" && tok.RefreshToken != "" {
		// The refresh outlives any one request: a background context that
		// carries the HTTP client, as the SDK does for its own.
		r := &refresher{
			h:        h,
			persist:  persist,
			ctx:      context.WithValue(context.Background(), oauth2.HTTPClient, h.hc),
			conf:     clientcredentials.Config{ClientID: rec.ClientID, ClientSecret: rec.ClientSecret, TokenURL: rec.TokenURL, AuthStyle: rec.AuthStyle},
			resource: rec.indicator(), rec: *rec, refreshToken: tok.RefreshToken, access: tok.AccessToken,
		}
		r.rec.Token = &tok
		base = oauth2.ReuseTokenSource(&tok, r)
	} else {
		base, static = oauth2.StaticTokenSource(&tok), true
	}
	h.red.add(tok.AccessToken, tok.RefreshToken, rec.ClientSecret)
	if rec.DPoPKey != "" {
		// Tokens bound to a key go with that key; one that cannot be
		// read leaves them to be refused and authorized anew.
		if d, err := parseDPoPKey(rec.DPoPKey); err == nil {
			h.dpopKey = d
		}
	}
	ts := &tokenSource{h: h, base: base, rec: *rec, static: static, saved: tok.AccessToken}
	ts.rec.Token = &tok
	h.ts = ts
	h.dead = ""
	h.failed = nil
	return ts
}

// adopt saves rec and makes it current; it is the token hook of the SDK's
// handler and the end of conduit's own grants.
func (h *Handler) adopt(ctx context.Context, rec *Record, persist bool) (*tokenSource, error) {
	if err := h.withDPoPKey(rec); err != nil {
		return nil, err
	}
	if persist {
		if err := h.store.Save(ctx, h.key, rec); err != nil {
			return nil, h.red.wrap(fmt.Errorf("oauth: saving the tokens of %s: %w", h.server, err))
		}
	}
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	ts := h.installLocked(rec, persist)
	h.loaded = true
	h.rememberLocked(rec)
	h.signalLocked()
	return ts, nil
}

func (h *Handler) signalLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// refresher refreshes tokens with the resource indicator they were asked
// for, which RFC 8707 §2.2 wants on a refresh as on the code exchange and
// oauth2.Config's own refresh cannot send. clientcredentials.Config sends
// the request: it lets grant_type be replaced, and parses the answer and
// its errors (an *oauth2.RetrieveError) as oauth2.Config does.
//
// With persist, a refresh holds the lock of its tokens (Locker) from
// before it reads the store until the new tokens are saved: a process that
// waited for it takes the tokens it saved, instead of sending a refresh
// token that the authorization server may have rotated, and refuse (or
// take for a stolen one, and revoke every token of its family).
type refresher struct {
	h        *Handler
	persist  bool
	ctx      context.Context
	conf     clientcredentials.Config
	resource string

	mu           sync.Mutex
	rec          Record // the latest tokens, as saved
	refreshToken string
	access       string // the access token this refresher last had
}

// lockWait bounds the wait for the lock of a refresh that another process
// holds, which its own request to the authorization server bounds.
const lockWait = authTimeout + 15*time.Second

func (r *refresher) Token() (*oauth2.Token, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.persist {
		return r.refresh()
	}
	ctx, cancel := context.WithTimeout(r.ctx, lockWait)
	defer cancel()
	unlock, err := r.h.lockTokens(ctx)
	if err != nil {
		return nil, fmt.Errorf("oauth: the tokens of %s cannot be locked for a refresh: %w", r.h.server, err)
	}
	defer unlock()
	// Another process may have refreshed them while this one waited.
	if rec, err := r.h.store.Load(ctx, r.h.key); err == nil && usable(rec, r.h.endpoint) && rec.Token.AccessToken != r.access {
		if rec.Token.RefreshToken != "" {
			r.refreshToken = rec.Token.RefreshToken
		}
		if rec.Token.Valid() {
			r.h.red.add(rec.Token.AccessToken, rec.Token.RefreshToken)
			r.rec, r.access = *rec, rec.Token.AccessToken
			return rec.Token, nil
		}
	}
	tok, err := r.refresh()
	if err != nil {
		return nil, err
	}
	r.h.red.add(tok.AccessToken, tok.RefreshToken)
	rec := r.rec
	rec.Token = tok
	if err := r.h.store.Save(ctx, r.h.key, &rec); err != nil {
		// The token is not used until it is saved: a rotated refresh
		// token that was not saved would be lost.
		return nil, fmt.Errorf("oauth: saving the refreshed tokens of %s: %w", r.h.server, err)
	}
	r.rec, r.access = rec, tok.AccessToken
	return tok, nil
}

// refresh sends the refresh request.
func (r *refresher) refresh() (*oauth2.Token, error) {
	cc := r.conf
	cc.EndpointParams = url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.refreshToken}}
	if r.resource != "" {
		cc.EndpointParams.Set("resource", r.resource)
	}
	tok, err := cc.Token(r.ctx)
	if err != nil {
		return nil, err
	}
	if tok.RefreshToken == "" {
		// No rotation: the refresh token stays valid (RFC 6749 §6).
		tok.RefreshToken = r.refreshToken
	}
	r.refreshToken = tok.RefreshToken
	return tok, nil
}

// tokenSource is the current tokens: it refreshes through base, saves what
// comes back new, and notices a refused refresh token.
type tokenSource struct {
	h      *Handler
	base   oauth2.TokenSource
	static bool // base cannot refresh

	mu    sync.Mutex
	rec   Record // Token is the latest
	saved string
}

func (s *tokenSource) Token() (*oauth2.Token, error) {
	if s.static {
		if tok := s.record().Token; tok != nil && !tok.Valid() {
			// An expired token that cannot be refreshed: say so the way
			// the SDK understands, so the request goes without it and its
			// 401 reaches Authorize.
			s.h.markDead(s)
			return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the access token expired and there is no refresh token"}
		}
	}
	t, err := s.base.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			s.h.markDead(s)
		}
		return nil, s.h.red.wrap(err)
	}
	if err := s.h.usable(t); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.AccessToken != s.saved {
		// New tokens, which the refresher saved (under their lock).
		s.h.red.add(t.AccessToken, t.RefreshToken)
		rec := s.rec
		rec.Token = t
		s.rec, s.saved = rec, t.AccessToken
	}
	return t, nil
}

func (s *tokenSource) access() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saved
}

func (s *tokenSource) record() Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// markDead drops s, whose refresh token was refused: the next request goes
// without a token, and its 401 asks for a login.
func (h *Handler) markDead(s *tokenSource) {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	if h.ts == s {
		h.ts = nil
		h.dead = s.saved
	}
}

func (h *Handler) current() *tokenSource {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	return h.ts
}

// Authorize runs on a 401, or a 403 with insufficient_scope: it refreshes
// the token, or runs the grant. Its errors carry no secret.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.red.wrap(h.authorize(ctx, req, resp))
}

func (h *Handler) authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if h.done.Err() != nil {
		return errors.New("oauth: the handler is closed")
	}
	// A malformed challenge leaves discovery to the well-known URLs.
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if dpopChallenge(challenges) {
		// The server wants sender-constrained tokens (RFC 9449 §7.1).
		if err := h.useDPoP(); err != nil {
			return err
		}
	}
	if challengeParam(challenges, "error") == "use_dpop_nonce" {
		// The transport has the nonce now; the retry carries it.
		return nil
	}
	forbidden := resp.StatusCode == http.StatusForbidden
	if forbidden && challengeParam(challenges, "error") != "insufficient_scope" {
		// Only insufficient_scope is for authorization to fix; the retried
		// request is answered as it is (as the SDK's handlers do).
		return nil
	}
	if ts := h.current(); ts != nil && ts.access() != bearer(req) {
		// Another request got new tokens meanwhile.
		return nil
	}
	if !forbidden && h.refresh(ctx) {
		return nil
	}
	if forbidden {
		if err := h.allowStepUp(scopesFrom(challenges)); err != nil {
			return err
		}
	}
	switch h.cfg.grant() {
	case GrantClientCredentials:
		return h.clientCredentials(ctx, challenges)
	case GrantCrossApp:
		return h.crossApp(ctx, challenges)
	case GrantJWTBearer:
		return h.jwtBearer(ctx, challenges)
	case GrantTokenExchange:
		return h.tokenExchange(ctx, challenges)
	}
	return h.authorizationCode(ctx, req, resp, challenges, forbidden)
}

func bearer(req *http.Request) string {
	if req == nil {
		return ""
	}
	v, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return v
}

// refresh gets a new access token with the refresh token, or takes newer
// tokens that another process saved; it reports whether there is one.
func (h *Handler) refresh(ctx context.Context) bool {
	if ts := h.current(); ts != nil {
		rec := ts.record()
		if rec.Token != nil && rec.Token.RefreshToken != "" && rec.TokenURL != "" {
			// The server refused the access token before its expiry:
			// refresh it now.
			tok := *rec.Token
			tok.Expiry = time.Unix(1, 0)
			rec.Token = &tok
			h.tsMu.Lock()
			if h.ts == ts {
				ts = h.installLocked(&rec, true)
			}
			h.tsMu.Unlock()
			if _, err := ts.Token(); err == nil {
				return true
			}
		}
	}
	return h.reload(ctx)
}

// reload takes the stored tokens when they are not the ones that failed.
func (h *Handler) reload(ctx context.Context) bool {
	if h.fresh {
		return false
	}
	rec, err := h.store.Load(ctx, h.key)
	if err != nil || !usable(rec, h.endpoint) {
		return false
	}
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	if rec.Token.AccessToken == h.dead || (h.ts != nil && rec.Token.AccessToken == h.ts.access()) {
		return false
	}
	h.installLocked(rec, true)
	return true
}

// maxStepUps is how many step-up authorizations a server may ask for in
// stepUpWindow: a server that keeps answering insufficient_scope is not
// given an endless series of logins.
const (
	maxStepUps   = 3
	stepUpWindow = 10 * time.Minute
)

func (h *Handler) allowStepUp(required []string) error {
	if ts := h.current(); ts != nil && len(required) > 0 {
		rec := ts.record()
		granted := rec.Scopes
		if rec.Token != nil {
			if s, ok := rec.Token.Extra("scope").(string); ok {
				granted = union(granted, strings.Fields(s))
			}
		}
		missing := false
		for _, s := range required {
			missing = missing || !slices.Contains(granted, s)
		}
		if !missing {
			return fmt.Errorf("oauth: server %s refuses a token that was granted the scopes it asks for (%s): not authorizing again", h.server, strings.Join(required, " "))
		}
	}
	now := time.Now()
	h.stepUps = slices.DeleteFunc(h.stepUps, func(t time.Time) bool { return now.Sub(t) > stepUpWindow })
	if len(h.stepUps) >= maxStepUps {
		return fmt.Errorf("oauth: server %s asked for more scopes %d times within %v: not authorizing again", h.server, len(h.stepUps), stepUpWindow)
	}
	h.stepUps = append(h.stepUps, now)
	return nil
}

// needsLogin is the error of a login that cannot be had.
func (h *Handler) needsLogin(forbidden bool, challenges []oauthex.Challenge) error {
	reason := "it asks for an OAuth authorization and nothing here can ask the user for one"
	h.tsMu.Lock()
	dead := h.dead != ""
	h.tsMu.Unlock()
	switch {
	case forbidden:
		reason = "it asks for more scopes (" + strings.Join(scopesFrom(challenges), " ") + ") and nothing here can ask the user for them"
	case dead:
		reason = "its refresh token was refused (expired or revoked)"
	}
	return &LoginError{Server: h.server, Reason: reason}
}

// WaitLogin returns once the handler has tokens it did not have when it
// last failed: a login in this process, or new tokens in the store (from
// conduit login in another one, checked every LoginPoll), or, for the
// token exchange grant, a user's token other than the one that could not
// be exchanged (also checked every LoginPoll). It sends nothing to the
// server.
func (h *Handler) WaitLogin(ctx context.Context) error {
	poll := h.cfg.LoginPoll
	if poll <= 0 {
		poll = 10 * time.Second
	}
	h.tsMu.Lock()
	ch := h.changed
	h.tsMu.Unlock()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
			return nil
		case <-t.C:
			if h.reload(ctx) || h.newSubject(ctx) {
				return nil
			}
		}
	}
}

// Changed returns a channel that is closed when the handler next gets
// tokens (a login, here or stored by another process and noticed) or
// Retry is called: a connection that failed while it waited can be tried
// again at once. Each change makes a new channel.
func (h *Handler) Changed() <-chan struct{} {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	return h.changed
}

// Retry forgets an interactive step that failed or was declined, which
// the handler otherwise remembers (answering every 401 with that
// [LoginError] and asking no one), so that the next authorization asks the
// user again; and it ends WaitLogin's wait. Call it when the user asks to
// log in again.
func (h *Handler) Retry() {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	h.failed = nil
	h.signalLocked()
}

// Close ends an interactive step under way (for an owner that is closing,
// such as a hub) and fails every later Authorize.
func (h *Handler) Close() error {
	h.close()
	return nil
}

// loginFailed returns the remembered failure of an interactive step.
func (h *Handler) loginFailed() error {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	if h.failed == nil {
		return nil
	}
	return h.failed
}

// interactive returns the context of an interactive step: ctx without its
// deadline, bounded by AuthorizeTimeout instead, and still ended when ctx
// is canceled for another reason than its deadline, or by Close.
func (h *Handler) interactive(ctx context.Context) (context.Context, context.CancelFunc) {
	d := h.cfg.AuthorizeTimeout
	if d <= 0 {
		d = DefaultAuthorizeTimeout
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	stopCtx := context.AfterFunc(ctx, func() {
		if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			cancel()
		}
	})
	stopDone := context.AfterFunc(h.done, cancel)
	return ictx, func() {
		stopCtx()
		stopDone()
		cancel()
	}
}

// challengeParam returns a parameter of the first Bearer or DPoP challenge
// that has it.
func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if (c.Scheme == "bearer" || c.Scheme == "dpop") && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

func scopesFrom(cs []oauthex.Challenge) []string {
	return strings.Fields(challengeParam(cs, "scope"))
}

// withMetadataURL returns resp with the configured metadata URL in its
// challenge, for a server that names none: the SDK's handlers then find
// the metadata there (and still check it). A DPoP challenge is told to
// them as a Bearer one, the only scheme whose scope they read.
func (h *Handler) withMetadataURL(resp *http.Response, cs []oauthex.Challenge) *http.Response {
	rm := challengeParam(cs, "resource_metadata")
	configured := rm == "" && h.cfg.MetadataURL != ""
	if !configured && !dpopChallenge(cs) {
		return resp
	}
	if configured {
		rm = h.cfg.MetadataURL
	}
	var params []string
	for _, p := range [][2]string{{"resource_metadata", rm}, {"scope", challengeParam(cs, "scope")}, {"error", challengeParam(cs, "error")}} {
		if p[1] != "" {
			params = append(params, p[0]+"="+strconv.Quote(p[1]))
		}
	}
	cp := *resp
	cp.Header = resp.Header.Clone()
	cp.Header.Set("WWW-Authenticate", strings.TrimSpace("Bearer "+strings.Join(params, ", ")))
	return &cp
}

func origin(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}
