// Package oauthtest is an OAuth 2.1 authorization server and a protected
// MCP server in one httptest.Server, for conduit's tests: PKCE is checked,
// refresh tokens rotate, and a test can revoke them, expire them, or make
// the server misbehave (wrong issuer, wrong iss, wrong resource). It
// speaks the extensions too: DPoP, the JWT bearer grant,
// and an enterprise identity provider's token exchange for ID-JAGs.
package oauthtest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Options shape the server.
type Options struct {
	// ExpiresIn is the lifetime of access tokens in seconds; 0 is an hour.
	// Below 10 the oauth2 package treats a token as expired at once, so
	// every use refreshes it.
	ExpiresIn int
	// Legacy serves no protected resource metadata (MCP 2025-03-26).
	Legacy bool
	// WrongIssuer makes the metadata name another issuer (mix-up).
	WrongIssuer bool
	// WrongIss puts another issuer in the authorization response's iss,
	// and the metadata promises one.
	WrongIss bool
	// Resource overrides the resource the metadata names.
	Resource string
	// EchoSecrets makes the token endpoint's errors quote the refresh
	// token and client secret it was sent, as a careless server might.
	EchoSecrets bool
	// ClientSecret makes the registration issue this secret.
	ClientSecret string
	// Confidential is a client registered in advance for the client
	// credentials grant; its token requests must authenticate with this
	// id and secret, and in the way ConfidentialAuth names
	// ("client_secret_basic" or "client_secret_post"; "" accepts either).
	// The metadata then advertises the grant and, when ConfidentialAuth is
	// set, that method only.
	Confidential     *Client
	ConfidentialAuth string
	// Scopes makes the protected resource metadata list these scopes in
	// place of "tools".
	Scopes []string
	// Documents, when set, may replace the metadata documents: for the
	// paths of the protected resource metadata and of the authorization
	// server metadata it is asked first, with the server's URL, and what
	// it returns with ok is served as application/json (for fuzzing).
	Documents func(path, url string) (doc []byte, ok bool)
	// DPoP makes the authorization server advertise DPoP and bind the
	// tokens of requests with a proof (token_type DPoP), and the MCP
	// endpoint challenge with the DPoP scheme and check proofs (RFC 9449).
	// DPoPNonce makes both ask for their nonce (ASNonce, RSNonce) first;
	// DPoPUnbound makes the authorization server issue Bearer tokens all
	// the same.
	DPoP, DPoPNonce, DPoPUnbound bool
	// TokenType, when set, is the token_type of the authorization code
	// grant's tokens, whatever they are.
	TokenType string
	// TokenExchange makes the authorization server offer token exchange
	// on behalf of a user (RFC 8693): a JWT access token it
	// issued (AccessToken), for an access token of the MCP endpoint
	// whose subject is the JWT's. Only the Confidential client may ask.
	TokenExchange bool
	// TokenDelay delays every answer of the token endpoint, so that
	// requests that a test sends at once are under way together.
	TokenDelay time.Duration
}

// Client is a client registered with the server in advance.
type Client struct{ ID, Secret string }

// Server is the running server.
type Server struct {
	*httptest.Server
	opts Options

	mu       sync.Mutex
	codes    map[string]codeGrant
	access   map[string]bool
	refresh  map[string]bool
	n        int
	issued   []string        // every secret handed out
	forgot   map[string]bool // client ids whose registration was dropped
	idp      idp
	bound    map[string]string // DPoP-bound tokens (access and refresh) -> key thumbprint
	jtis     map[string]bool   // DPoP proofs seen
	subjects map[string]string // access and refresh tokens -> the user they are for
	keys     []signingKey      // the keys of AccessToken, newest last
	Requests Log
}

type codeGrant struct{ challenge, redirect, resource, user string }

// Log is what the server was asked.
type Log struct {
	Authorize []url.Values // the queries of authorization requests
	Token     []url.Values // the forms of token requests
	MCP       int          // requests to /mcp
	Bearers   []string     // the bearer tokens /mcp received ("" for none)
	// BasicAuth are the client ids of token requests that authenticated
	// with HTTP Basic (client_secret_basic), in order.
	BasicAuth []string
	// Registrations is how many clients registered dynamically.
	Registrations int
	// TokenProofs counts token requests with a DPoP proof; Schemes are the
	// Authorization schemes of /mcp requests under Options.DPoP ("" for
	// none); NonceRefusals counts use_dpop_nonce answers.
	TokenProofs   int
	Schemes       []string
	NonceRefusals int
	// IdP are the forms of the identity provider's token requests.
	IdP []url.Values
	// Exchanges are the forms of token exchange requests; JWKS counts the
	// requests for the keys.
	Exchanges []url.Values
	JWKS      int
}

// New starts the server; t's cleanup stops it.
func New(t testing.TB, opts Options) *Server {
	s := &Server{opts: opts, codes: map[string]codeGrant{}, access: map[string]bool{}, refresh: map[string]bool{},
		idp: newIdP(), bound: map[string]string{}, jtis: map[string]bool{}, subjects: map[string]string{}}
	s.keys = []signingKey{newSigningKey(1)}
	if opts.Confidential != nil {
		s.issued = append(s.issued, opts.Confidential.Secret)
	}
	mux := http.NewServeMux()
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)

	mux.HandleFunc("/.well-known/oauth-authorization-server", s.override(s.metadata))
	if !opts.Legacy {
		mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", s.override(func(w http.ResponseWriter, r *http.Request) {
			res := s.URL + "/mcp"
			if opts.Resource != "" {
				res = opts.Resource
			}
			scopes := []string{"tools"}
			if opts.Scopes != nil {
				scopes = opts.Scopes
			}
			writeJSON(w, http.StatusOK, &oauthex.ProtectedResourceMetadata{Resource: res, AuthorizationServers: []string{s.URL}, ScopesSupported: scopes})
		}))
	}
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("/token", s.token)
	mux.HandleFunc("/register", s.register)
	mux.HandleFunc("/idp/token", s.idpToken)
	mux.HandleFunc("/jwks", s.jwks)

	mcpServer := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(mcpServer, &mcp.Tool{Name: "whoami", Description: "says hello, to the user of the token when it knows one"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		text := "hello"
		if req.Extra != nil && req.Extra.TokenInfo != nil && req.Extra.TokenInfo.UserID != "" {
			text += " " + req.Extra.TokenInfo.UserID
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	var rmURL string
	if !opts.Legacy {
		rmURL = s.URL + "/.well-known/oauth-protected-resource/mcp"
	}
	protected := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: rmURL})(handler)
	if opts.DPoP {
		protected = s.dpopGuard(handler)
	}
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.Requests.MCP++
		b, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.Requests.Bearers = append(s.Requests.Bearers, b)
		s.mu.Unlock()
		protected.ServeHTTP(w, r)
	}))
	return s
}

// override serves Options.Documents' document for the request's path in
// place of next's, when there is one.
func (s *Server) override(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Documents != nil {
			if doc, ok := s.opts.Documents(r.URL.Path, s.URL); ok {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(doc)
				return
			}
		}
		next(w, r)
	}
}

// MCPURL is the protected MCP endpoint.
func (s *Server) MCPURL() string { return s.URL + "/mcp" }

func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.access[token] {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Scopes: []string{"tools"}, Expiration: time.Now().Add(time.Hour), UserID: s.subjects[token]}, nil
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	issuer := s.URL
	if s.opts.WrongIssuer {
		issuer = "https://attacker.example"
	}
	grants := []string{"authorization_code", "refresh_token", grantJWTBearer}
	methods := []string{"none", "client_secret_post"}
	if s.opts.Confidential != nil {
		grants = append(grants, "client_credentials")
		if a := s.opts.ConfidentialAuth; a != "" {
			methods = []string{a}
		} else {
			methods = []string{"client_secret_post", "client_secret_basic"}
		}
	}
	if s.opts.TokenExchange {
		grants = append(grants, grantTokenExchange)
	}
	meta := &oauthex.AuthServerMeta{
		JWKSURI:                           s.URL + "/jwks",
		Issuer:                            issuer,
		AuthorizationEndpoint:             s.URL + "/authorize",
		TokenEndpoint:                     s.URL + "/token",
		RegistrationEndpoint:              s.URL + "/register",
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               grants,
		CodeChallengeMethodsSupported:     []string{"S256"},
		TokenEndpointAuthMethodsSupported: methods,
		ScopesSupported:                   []string{"tools", "offline_access"},
		AuthorizationResponseIssParameterSupported: s.opts.WrongIss,
	}
	if !s.opts.DPoP {
		writeJSON(w, http.StatusOK, meta)
		return
	}
	// oauthex has no field for it (RFC 9449 §5.1).
	var doc map[string]any
	b, _ := json.Marshal(meta)
	_ = json.Unmarshal(b, &doc)
	doc["dpop_signing_alg_values_supported"] = []string{"ES256"}
	writeJSON(w, http.StatusOK, doc)
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	s.Requests.Authorize = append(s.Requests.Authorize, q)
	if s.forgot[q.Get("client_id")] {
		s.mu.Unlock()
		// RFC 6749 §4.1.2.1: an unknown client is told to the user, not
		// redirected.
		http.Error(w, "invalid_client: unknown client", http.StatusBadRequest)
		return
	}
	s.n++
	code := fmt.Sprintf("code-%d-%d", s.n, time.Now().UnixNano())
	if q.Get("code_challenge_method") == "S256" && q.Get("code_challenge") != "" {
		s.codes[code] = codeGrant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), resource: q.Get("resource"), user: q.Get(userParam)}
	}
	s.issued = append(s.issued, code)
	s.mu.Unlock()
	to, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || to.Scheme == "" {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	v := to.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	if s.opts.WrongIss {
		v.Set("iss", "https://attacker.example")
	}
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	time.Sleep(s.opts.TokenDelay)
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Requests.Token = append(s.Requests.Token, f)
	if id, secret, ok := r.BasicAuth(); ok {
		s.Requests.BasicAuth = append(s.Requests.BasicAuth, id)
		f = cloneValues(f)
		f.Set("client_id", id)
		f.Set("client_secret", secret)
		f.Set("client_auth", "client_secret_basic")
	} else if f.Has("client_secret") {
		f = cloneValues(f)
		f.Set("client_auth", "client_secret_post")
	}
	fail := func(code, desc string) {
		if s.opts.EchoSecrets {
			desc += fmt.Sprintf(" (refresh_token=%s client_secret=%s)", f.Get("refresh_token"), f.Get("client_secret"))
		}
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": desc})
	}
	jkt, ok := s.tokenProof(w, r)
	if !ok {
		return
	}
	if f.Get("grant_type") == grantTokenExchange {
		s.exchange(w, f, jkt)
		return
	}
	if f.Get("grant_type") == grantJWTBearer && len(f["resource"]) == 0 {
		// An ID-JAG names the resource itself.
		s.jwtBearer(w, f, jkt)
		return
	}
	// Every token is for the MCP endpoint, and every token request must
	// say so (RFC 8707 §2): the code exchange, each refresh and each
	// client credentials request.
	if res := f["resource"]; len(res) != 1 || res[0] != s.MCPURL() {
		fail("invalid_target", fmt.Sprintf("the resource must be %s, not %q", s.MCPURL(), res))
		return
	}
	if s.forgot[f.Get("client_id")] {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "unknown client"})
		return
	}
	var user string
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := s.codes[f.Get("code")]
		user = g.user
		delete(s.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok:
			fail("invalid_grant", "unknown code, or one sent without PKCE")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			fail("invalid_grant", "PKCE verifier does not match")
			return
		case f.Get("redirect_uri") != g.redirect:
			fail("invalid_grant", "redirect_uri differs")
			return
		}
	case grantJWTBearer:
		s.jwtBearer(w, f, jkt)
		return
	case "refresh_token":
		if !s.refresh[f.Get("refresh_token")] {
			fail("invalid_grant", "refresh token expired or revoked")
			return
		}
		if want, ok := s.bound[f.Get("refresh_token")]; ok && want != jkt {
			// RFC 9449 §5: a public client's refresh token is bound too.
			fail("invalid_grant", "the refresh token is bound to another DPoP key")
			return
		}
		delete(s.refresh, f.Get("refresh_token")) // rotation: one use each
		user = s.subjects[f.Get("refresh_token")]
	case "client_credentials":
		c := s.opts.Confidential
		switch {
		case c == nil:
			fail("unauthorized_client", "no client may use the client credentials grant")
			return
		case f.Get("client_id") != c.ID || f.Get("client_secret") != c.Secret:
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "wrong client id or secret"})
			return
		case s.opts.ConfidentialAuth != "" && f.Get("client_auth") != s.opts.ConfidentialAuth:
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "the client must authenticate with " + s.opts.ConfidentialAuth})
			return
		}
		s.grantAccess(w, "cc", f, jkt)
		return
	default:
		fail("unsupported_grant_type", f.Get("grant_type"))
		return
	}
	s.n++
	at, rt := fmt.Sprintf("at-%d-%x", s.n, time.Now().UnixNano()), fmt.Sprintf("rt-%d-%x", s.n, time.Now().UnixNano())
	s.access[at], s.refresh[rt] = true, true
	if user != "" {
		s.subjects[at], s.subjects[rt] = user, user
	}
	s.issued = append(s.issued, at, rt)
	exp := s.opts.ExpiresIn
	if exp == 0 {
		exp = 3600
	}
	typ := "Bearer"
	if jkt != "" {
		s.bound[at], s.bound[rt], typ = jkt, jkt, "DPoP"
	}
	if s.opts.TokenType != "" {
		typ = s.opts.TokenType
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": at, "token_type": typ, "expires_in": exp, "refresh_token": rt, "scope": "tools"})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var meta oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(r.Body).Decode(&meta); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	s.mu.Lock()
	s.n++
	s.Requests.Registrations++
	id := fmt.Sprintf("client-%d", s.n)
	s.mu.Unlock()
	resp := map[string]any{"client_id": id, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"}
	if s.opts.ClientSecret != "" {
		resp["client_secret"] = s.opts.ClientSecret
		resp["token_endpoint_auth_method"] = "client_secret_post"
		s.mu.Lock()
		s.issued = append(s.issued, s.opts.ClientSecret)
		s.mu.Unlock()
	}
	writeJSON(w, http.StatusCreated, resp)
}

// ForgetClients drops every dynamic registration so far, as an
// authorization server that expires or deletes clients does: their
// authorization and token requests are refused as from an unknown client.
func (s *Server) ForgetClients() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forgot == nil {
		s.forgot = map[string]bool{}
	}
	for i := 1; i <= s.n; i++ {
		s.forgot[fmt.Sprintf("client-%d", i)] = true
	}
}

// RevokeRefreshTokens makes every refresh token issued so far invalid, as
// an expired or revoked one is.
func (s *Server) RevokeRefreshTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.refresh)
}

// RevokeAccessTokens makes every access token issued so far invalid.
func (s *Server) RevokeAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

// Secrets returns every code, token and client secret the server issued.
func (s *Server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// Snapshot returns a copy of what the server was asked.
func (s *Server) Snapshot() Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.Requests
	l.Authorize = slices.Clone(l.Authorize)
	l.Token = slices.Clone(l.Token)
	l.Bearers = slices.Clone(l.Bearers)
	l.BasicAuth = slices.Clone(l.BasicAuth)
	l.Schemes = slices.Clone(l.Schemes)
	l.IdP = slices.Clone(l.IdP)
	l.Exchanges = slices.Clone(l.Exchanges)
	return l
}

// Grants returns the grant types of the token requests, in order.
func (s *Server) Grants() []string {
	var out []string
	for _, f := range s.Snapshot().Token {
		out = append(out, f.Get("grant_type"))
	}
	return out
}

// FollowRedirect is an interactive step without a person: it sends the
// authorization request and takes code, state and iss from the redirect.
func FollowRedirect(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	return follow(ctx, args.URL)
}

// userParam is the authorization request's parameter by which LoginAs
// says who signs in.
const userParam = "oauthtest_user"

// LoginAs is the interactive step of user signing in: FollowRedirect,
// with the server told who the person at the browser is. The tokens of
// that login are user's: whoami answers "hello USER".
func LoginAs(user string) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		u, err := url.Parse(args.URL)
		if err != nil {
			return nil, err
		}
		q := u.Query()
		q.Set(userParam, user)
		u.RawQuery = q.Encode()
		return follow(ctx, u.String())
	}
}

func follow(ctx context.Context, authURL string) (*auth.AuthorizationResult, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 3 {
		return nil, fmt.Errorf("oauthtest: the authorization endpoint answered %s, not a redirect", resp.Status)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, err
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
