package oauth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// authorizationCode runs the authorization code grant. Servers that
// publish protected resource metadata (MCP 2025-06-18 and later) go to the
// SDK's AuthorizationCodeHandler; servers that do not (2025-03-26) get
// conduit's own flow, for the discovery the SDK does not do.
//
// The grant runs in the context of an interactive step (see
// Handler.interactive). When it fails after Authorize was called, the
// failure is remembered (see Handler.Retry) and returned as a
// [LoginError]: the server needs a login, which asking again at once would
// not give.
func (h *Handler) authorizationCode(ctx context.Context, req *http.Request, resp *http.Response, cs []oauthex.Challenge, forbidden bool) error {
	if h.cfg.Authorize == nil {
		return h.needsLogin(forbidden, cs)
	}
	if err := h.loginFailed(); err != nil {
		return err
	}
	ictx, cancel := h.interactive(ctx)
	defer cancel()
	h.prompted = false
	err := h.authorizationCodeGrant(ictx, req, resp, cs)
	if err == nil || !h.prompted {
		return err
	}
	le := &LoginError{Server: h.server, Reason: "the login did not complete: " + h.red.clean(err.Error()), Err: err}
	h.tsMu.Lock()
	h.failed = le
	h.tsMu.Unlock()
	return le
}

func (h *Handler) authorizationCodeGrant(ctx context.Context, req *http.Request, resp *http.Response, cs []oauthex.Challenge) error {
	prm, err := h.findPRM(ctx, cs)
	if err != nil {
		return err
	}
	if prm == nil {
		return h.legacyAuthorizationCode(ctx, cs)
	}
	h.issuer, h.indicator = prm.AuthorizationServers[0], prm.Resource
	known := h.knownClient(ctx, h.issuer)
	sdk, err := h.sdkHandler(known)
	if err != nil {
		return err
	}
	if err := sdk.Authorize(ctx, req, h.withMetadataURL(resp, cs)); err != nil {
		h.forgetClient(ctx, known)
		return fmt.Errorf("oauth: authorizing with %s: %w", h.issuer, err)
	}
	return nil
}

// redirectURL is the configured redirect URL, or the default.
func (h *Handler) redirectURL() string {
	if h.cfg.RedirectURL != "" {
		return h.cfg.RedirectURL
	}
	return DefaultRedirectURL
}

// credentials returns the configured client id and secret (either may be
// "").
func (h *Handler) credentials() (id, secret string, err error) {
	if id, err = h.cfg.value(h.cfg.ClientID, h.cfg.ClientIDEnv, "client id", false); err != nil {
		return "", "", err
	}
	required := h.cfg.ClientSecretEnv != ""
	if secret, err = h.cfg.value(h.cfg.ClientSecret, h.cfg.ClientSecretEnv, "client secret", required); err != nil {
		return "", "", err
	}
	if h.cfg.ClientIDEnv != "" && id == "" {
		return "", "", fmt.Errorf("oauth: the environment variable %s (client id) is not set", h.cfg.ClientIDEnv)
	}
	h.red.add(secret)
	return id, secret, nil
}

// sdkHandler returns the SDK's handler, made for known, a client
// registered dynamically before (nil for none).
func (h *Handler) sdkHandler(known *client) (*auth.AuthorizationCodeHandler, error) {
	var knownID string
	if known != nil {
		knownID = known.ClientID
	}
	if h.sdk != nil && h.sdkFor == knownID {
		return h.sdk, nil
	}
	id, secret, err := h.credentials()
	if err != nil {
		return nil, err
	}
	redirect := h.redirectURL()
	// The SDK's handler does not keep the client it registered: a client
	// it registered is passed back to it as one registered in advance,
	// bound to its issuer.
	dynamic := id == ""
	c := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: h.fetch,
		// conduit keeps tokens in a store and refreshes them.
		RequestRefreshToken: true,
		Client:              h.hc,
		// Scopes asked for before come along (SEP-2350): the SDK's own
		// union is lost with its handler when a registration changes.
		ScopeFilter: func(discovered []string) []string {
			return union(h.previousScopes(h.issuer), union(discovered, h.cfg.Scopes))
		},
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			rec := &Record{Resource: h.endpoint, Indicator: h.indicator, Issuer: h.issuer, ClientID: oc.ClientID, ClientSecret: oc.ClientSecret,
				TokenURL: oc.Endpoint.TokenURL, AuthStyle: oc.Endpoint.AuthStyle, Scopes: oc.Scopes, Token: tok}
			if dynamic && oc.ClientID != h.cfg.ClientMetadataURL {
				rec.RegisteredRedirect = redirect
			}
			return h.adopt(ctx, rec, true)
		},
	}
	if h.cfg.ClientMetadataURL != "" {
		c.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.cfg.ClientMetadataURL}
	}
	switch {
	case id != "":
		c.PreregisteredClient = &oauthex.ClientCredentials{ClientID: id}
		if secret != "" {
			c.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
	case known != nil:
		c.PreregisteredClient = &oauthex.ClientCredentials{ClientID: known.ClientID, Issuer: h.issuer}
		if known.ClientSecret != "" {
			c.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: known.ClientSecret}
		}
	default:
		c.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: h.registrationMetadata(redirect)}
	}
	sdk, err := auth.NewAuthorizationCodeHandler(c)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	h.sdk, h.sdkFor = sdk, knownID
	return sdk, nil
}

func (h *Handler) registrationMetadata(redirect string) *oauthex.ClientRegistrationMetadata {
	return &oauthex.ClientRegistrationMetadata{
		ClientName:    "conduit",
		RedirectURIs:  []string{redirect},
		GrantTypes:    []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
	}
}

// fetch is the interactive step, and where a login that was asked for is
// noted.
func (h *Handler) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	h.prompted = true
	res, err := h.cfg.Authorize(ctx, args)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errors.New("oauth: the Authorize callback returned no result")
	}
	if u, err := url.Parse(args.URL); err != nil || res.State != u.Query().Get("state") {
		// The SDK checks this too; checking here gives both flows one error.
		return nil, ErrStateMismatch
	}
	h.red.add(res.Code)
	h.tsMu.Lock()
	h.asked = true
	h.tsMu.Unlock()
	return res, nil
}

// prmCandidate is a URL where protected resource metadata may be, and the
// resource it must then name.
type prmCandidate struct{ url, resource string }

// prmCandidates lists the places the MCP specification says to look, in
// its order, after the configured URL and the one the challenge names.
func (h *Handler) prmCandidates(cs []oauthex.Challenge) []prmCandidate {
	var out []prmCandidate
	if h.cfg.MetadataURL != "" {
		out = append(out, prmCandidate{h.cfg.MetadataURL, h.endpoint})
	}
	if u := challengeParam(cs, "resource_metadata"); u != "" {
		out = append(out, prmCandidate{u, h.endpoint})
	}
	u, err := url.Parse(h.endpoint)
	if err != nil {
		return out
	}
	base := url.URL{Scheme: u.Scheme, Host: u.Host}
	if p := u.EscapedPath(); p != "" && p != "/" {
		out = append(out, prmCandidate{base.String() + "/.well-known/oauth-protected-resource" + p, h.endpoint})
	}
	out = append(out, prmCandidate{base.String() + "/.well-known/oauth-protected-resource", base.String()})
	return out
}

// findPRM returns the server's protected resource metadata, or nil when
// it publishes none. Metadata that the SDK refuses (it names another
// resource, or an authorization server that is not HTTPS) ends discovery:
// the server is not a 2025-03-26 one to fall back for, and no token is
// asked for on the strength of metadata that is not the server's.
func (h *Handler) findPRM(ctx context.Context, cs []oauthex.Challenge) (*oauthex.ProtectedResourceMetadata, error) {
	for _, c := range h.prmCandidates(cs) {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, h.hc)
		if err != nil || prm == nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err != nil && h.peek(ctx, c.url, nil) {
				return nil, fmt.Errorf("oauth: the protected resource metadata of %s is refused: %w", h.endpoint, err)
			}
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("oauth: the protected resource metadata of %s names no authorization server", h.endpoint)
		}
		return prm, nil
	}
	return nil, nil
}

// discover finds the authorization server of the server: from its
// protected resource metadata, or for a 2025-03-26 server from its own
// origin. resource is what tokens are asked for (RFC 8707).
func (h *Handler) discover(ctx context.Context, cs []oauthex.Challenge) (asm *oauthex.AuthServerMeta, prm *oauthex.ProtectedResourceMetadata, resource string, err error) {
	prm, err = h.findPRM(ctx, cs)
	if err != nil {
		return nil, nil, "", err
	}
	if prm == nil {
		asm, err = h.legacyMetadata(ctx)
		return asm, nil, h.endpoint, err
	}
	issuer := prm.AuthorizationServers[0]
	asm, err = auth.GetAuthServerMetadata(ctx, issuer, h.hc)
	if err != nil {
		return nil, nil, "", fmt.Errorf("oauth: the metadata of authorization server %s: %w", issuer, err)
	}
	if asm == nil {
		asm = fallbackMetadata(issuer)
	}
	return asm, prm, prm.Resource, nil
}

// fallbackMetadata is the endpoints a 2025-03-26 server without metadata
// has (its "fallbacks for servers without metadata discovery").
func fallbackMetadata(base string) *oauthex.AuthServerMeta {
	return &oauthex.AuthServerMeta{
		Issuer:                base,
		AuthorizationEndpoint: base + "/authorize",
		TokenEndpoint:         base + "/token",
		RegistrationEndpoint:  base + "/register",
	}
}

// legacyMetadata is the authorization server of a 2025-03-26 server: the
// metadata at its origin, or the fallback endpoints there.
//
// RFC 8414 wants the metadata's issuer to be the URL the metadata was
// fetched for, and the SDK refuses any other. A 2025-03-26 server has no
// issuer to expect: its origin is its authorization server, which may
// name a path of that origin as its issuer (the conformance suite's
// auth/2025-03-26-oauth-metadata-backcompat does). conduit accepts that
// issuer only when it is on the server's own origin, so the document still
// cannot send the client to another party, and the issuer it names is then
// held to exactly (RFC 8414 §3.3 through the SDK, and the authorization
// response's iss, RFC 9207).
func (h *Handler) legacyMetadata(ctx context.Context) (*oauthex.AuthServerMeta, error) {
	base := origin(h.endpoint)
	asm, err := auth.GetAuthServerMetadata(ctx, base, h.hc)
	if err == nil {
		if asm == nil {
			return fallbackMetadata(base), nil
		}
		return asm, nil
	}
	metaURL := base + "/.well-known/oauth-authorization-server"
	claimed := h.peekIssuer(ctx, metaURL)
	if claimed == "" || claimed == base || origin(claimed) != base {
		return nil, fmt.Errorf("oauth: the authorization server metadata of %s: %w", base, err)
	}
	asm, err = oauthex.GetAuthServerMeta(ctx, metaURL, claimed, h.hc)
	if err != nil {
		return nil, fmt.Errorf("oauth: the authorization server metadata of %s: %w", base, err)
	}
	return asm, nil
}

// peekIssuer returns the issuer a metadata document claims, or "".
func (h *Handler) peekIssuer(ctx context.Context, metaURL string) string {
	var doc struct {
		Issuer string `json:"issuer"`
	}
	h.peek(ctx, metaURL, &doc)
	return doc.Issuer
}

// peek reports whether u serves a JSON document, decoding it into v when v
// is not nil. It runs on URLs the SDK has just fetched, to tell a missing
// document from one the SDK refused, and only on the server's own origin
// or the configured metadata URL: the SDK's discovery client refuses
// private addresses, which this plain request would not.
func (h *Handler) peek(ctx context.Context, u string, v any) bool {
	if origin(u) != origin(h.endpoint) && u != h.cfg.MetadataURL {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != "application/json" {
		return false
	}
	var doc any = &json.RawMessage{}
	if v != nil {
		doc = v
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(doc) == nil
}

// legacyAuthorizationCode is the authorization code grant with PKCE for a
// 2025-03-26 server, built from the SDK's oauthex and golang.org/x/oauth2
// like the SDK's own handler.
func (h *Handler) legacyAuthorizationCode(ctx context.Context, cs []oauthex.Challenge) (err error) {
	asm, err := h.legacyMetadata(ctx)
	if err != nil {
		return err
	}
	for _, e := range []struct{ what, u string }{{"authorization endpoint", asm.AuthorizationEndpoint}, {"token endpoint", asm.TokenEndpoint}} {
		if err := CheckEndpoint("the "+e.what, e.u); err != nil {
			return err
		}
	}
	if m := asm.CodeChallengeMethodsSupported; len(m) > 0 && !slices.Contains(m, "S256") {
		return fmt.Errorf("oauth: authorization server %s does not support PKCE with S256", asm.Issuer)
	}
	known := h.knownClient(ctx, asm.Issuer)
	client, err := h.register(ctx, asm, known)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			h.forgetClient(ctx, known)
		}
	}()
	scopes := union(h.previousScopes(asm.Issuer), union(scopesFrom(cs), h.cfg.Scopes))
	if slices.Contains(asm.ScopesSupported, "offline_access") {
		scopes = union(scopes, []string{"offline_access"})
	}
	oc := &oauth2.Config{
		ClientID:     client.ClientID,
		ClientSecret: client.ClientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: client.AuthStyle},
		RedirectURL:  h.redirectURL(),
		Scopes:       scopes,
	}
	verifier, state := oauth2.GenerateVerifier(), rand.Text()
	resource := oauth2.SetAuthURLParam("resource", h.endpoint)
	res, err := h.fetch(ctx, &auth.AuthorizationArgs{URL: oc.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), resource)})
	if err != nil {
		return err
	}
	if res.State != state {
		return ErrStateMismatch
	}
	if err := checkIss(res.Iss, asm); err != nil {
		return err
	}
	tok, err := oc.Exchange(context.WithValue(ctx, oauth2.HTTPClient, h.hc), res.Code, oauth2.VerifierOption(verifier), resource)
	if err != nil {
		return fmt.Errorf("oauth: exchanging the authorization code: %w", err)
	}
	rec := &Record{Resource: h.endpoint, Issuer: asm.Issuer, ClientID: client.ClientID, ClientSecret: client.ClientSecret,
		TokenURL: asm.TokenEndpoint, AuthStyle: client.AuthStyle, Scopes: scopes, Token: tok}
	if client.dynamic {
		rec.RegisteredRedirect = oc.RedirectURL
	}
	_, err = h.adopt(ctx, rec, true)
	return err
}

type client struct {
	ClientID, ClientSecret string
	AuthStyle              oauth2.AuthStyle
	dynamic                bool // registered dynamically (RFC 7591)
}

// register picks the client in the MCP specification's order: a client
// metadata document, a client registered in advance, dynamic registration
// (known, when a client was registered before).
func (h *Handler) register(ctx context.Context, asm *oauthex.AuthServerMeta, known *client) (*client, error) {
	if h.cfg.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported {
		return &client{ClientID: h.cfg.ClientMetadataURL, AuthStyle: oauth2.AuthStyleInParams}, nil
	}
	id, secret, err := h.credentials()
	if err != nil {
		return nil, err
	}
	if id != "" {
		return &client{ClientID: id, ClientSecret: secret, AuthStyle: authStyle(asm.TokenEndpointAuthMethodsSupported)}, nil
	}
	if asm.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("oauth: authorization server %s offers no registration: configure a client id", asm.Issuer)
	}
	if known != nil {
		return known, nil
	}
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, h.registrationMetadata(h.redirectURL()), h.hc)
	if err != nil {
		return nil, fmt.Errorf("oauth: registering with %s: %w", asm.Issuer, err)
	}
	h.red.add(reg.ClientSecret)
	style := oauth2.AuthStyleInHeader // client_secret_basic is RFC 7591's default
	switch reg.TokenEndpointAuthMethod {
	case "client_secret_post", "none":
		style = oauth2.AuthStyleInParams
	}
	c := client{ClientID: reg.ClientID, ClientSecret: reg.ClientSecret, AuthStyle: style, dynamic: true}
	h.noteRegistered(asm.Issuer, c)
	return &c, nil
}

// authStyle is how to send a client secret, given the methods an
// authorization server supports: client_secret_post first (OAuth 2.1),
// then client_secret_basic, as the SDK chooses.
func authStyle(supported []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams
	case slices.Contains(supported, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}

// checkIss checks the authorization response's iss (RFC 9207) as the SDK
// does: required and equal when the server says it sends one, and never
// different from the issuer.
func checkIss(iss string, asm *oauthex.AuthServerMeta) error {
	switch {
	case asm.AuthorizationResponseIssParameterSupported && iss == "":
		return errors.New("oauth: the authorization server promises an iss in its response and sent none")
	case iss != "" && iss != asm.Issuer:
		return fmt.Errorf("oauth: the authorization response comes from issuer %q, not %q (mix-up)", iss, asm.Issuer)
	case iss != "" && !asm.AuthorizationResponseIssParameterSupported:
		return errors.New("oauth: the authorization response has an iss the authorization server does not advertise")
	}
	return nil
}
