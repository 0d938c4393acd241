package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/conduitmcp/conduit/oauth"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// The HTTP transport as an OAuth 2.1 protected resource (RFC 9728). Its
// callers present JWT access tokens (RFC 9068) of an authorization
// server. They are verified against the keys it publishes, with
// github.com/go-jose/go-jose/v4. DPoP uses that library too. It reads a
// JWKS, and checks a token's algorithm against a list before anything
// else. The token's subject, or a configured claim, is the principal.
// Every refusal is a 401 with a Bearer challenge, and nothing is
// forwarded.

// Defaults of OAuthOptions.
const (
	// DefaultLeeway is the clock skew allowed on a token's exp, nbf and
	// iat when OAuthOptions.Leeway is zero.
	DefaultLeeway = 30 * time.Second
	// DefaultKeyRefresh is the least time between two fetches of the
	// issuer's keys for a token whose kid is unknown. It applies when
	// OAuthOptions.KeyRefresh is zero.
	DefaultKeyRefresh = time.Minute
	// keyMaxAge is how long fetched keys are used before they are fetched
	// again.
	keyMaxAge = time.Hour
	// maxTokenBytes bounds a token; maxJWKSBytes the keys document.
	maxTokenBytes = 16 << 10
	maxJWKSBytes  = 1 << 20
)

// OAuthOptions make [Gateway.Handler] accept the JWT access tokens of an
// authorization server, besides HTTPOptions.Tokens. MCP clients that log
// in by OAuth (Claude, VS Code) find it through two things. One is the
// protected resource metadata ([OAuthOptions.Metadata], served by
// ListenAndServe). The other is the challenge of every 401. A token is
// accepted when all of these hold:
//
//   - It is signed by one of the issuer's published keys with an
//     asymmetric algorithm: RS*, PS*, ES*, EdDSA. Never "none" nor an
//     HMAC.
//   - Its typ header names no other kind of token (see
//     RequireTokenType).
//   - Its iss is Issuer.
//   - Its aud names Resource.
//   - It has not expired. exp is required. nbf and iat are checked, with
//     Leeway for clocks.
//   - Its principal claim is a non-empty string. An email must be a
//     verified one.
type OAuthOptions struct {
	// Resource is the gateway's own URL as clients reach it, such as
	// https://mcp.example.com/mcp. It is the audience every token must
	// name, and the resource of the metadata.
	Resource string
	// Issuer is the authorization server whose tokens are accepted, as in
	// its metadata (RFC 8414, or OpenID discovery).
	Issuer string
	// JWKSURL is where the issuer's keys are. "" reads jwks_uri from its
	// metadata.
	JWKSURL string
	// PrincipalClaim is the claim that names the principal, a non-empty
	// string. "" is "sub". An "email" or "preferred_username" claim makes
	// the policy's principal rules readable. With "email", the token must
	// also say email_verified true. An address its owner never proved is
	// not who they are.
	PrincipalClaim string
	// RequireTokenType accepts only tokens whose typ header is at+jwt
	// (RFC 9068 §4). It is for an issuer that types its access tokens so.
	// An ID token or another JWT it signs is then never taken for an
	// access token. Without it, a token that names another type in typ is
	// refused, such as dpop+jwt or id-jag+jwt. One without typ, or with the
	// generic JWT, is accepted. Many issuers (Entra ID, Keycloak, Google)
	// do not type their access tokens.
	RequireTokenType bool
	// Scopes are the scopes every token must have, in its "scope" or
	// "scp" claim. The metadata lists them.
	Scopes []string
	// Leeway is the clock skew allowed (default DefaultLeeway).
	Leeway time.Duration
	// KeyRefresh is the least time between two fetches of the keys for a
	// token with an unknown kid, as after a key rotation. The default is
	// DefaultKeyRefresh. So a flood of forged kids costs one fetch. Keys
	// are fetched again after an hour in any case.
	KeyRefresh time.Duration
	// HTTPClient fetches the metadata and the keys. Nil is a client with
	// a ten-second timeout.
	HTTPClient *http.Client
}

// check validates the options. They must name HTTPS endpoints, or
// loopback HTTP.
func (o *OAuthOptions) check() error {
	if err := oauth.CheckEndpoint("the resource", o.Resource); err != nil {
		return fmt.Errorf("gateway: OAuth: %w", err)
	}
	if err := oauth.CheckEndpoint("the issuer", o.Issuer); err != nil {
		return fmt.Errorf("gateway: OAuth: %w", err)
	}
	if o.JWKSURL != "" {
		if err := oauth.CheckEndpoint("the JWKS URL", o.JWKSURL); err != nil {
			return fmt.Errorf("gateway: OAuth: %w", err)
		}
	}
	if o.Leeway < 0 || o.KeyRefresh < 0 {
		return errors.New("gateway: OAuth: Leeway and KeyRefresh must not be negative")
	}
	return nil
}

// MetadataPath is the path of the resource's protected resource metadata
// (RFC 9728 §3.1). It is /.well-known/oauth-protected-resource followed
// by the resource's path.
func (o *OAuthOptions) MetadataPath() string {
	u, err := url.Parse(o.Resource)
	if err != nil {
		return "/.well-known/oauth-protected-resource"
	}
	return "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.EscapedPath(), "/")
}

// MetadataURL is the metadata's URL, which every 401's challenge names.
func (o *OAuthOptions) MetadataURL() string {
	u, err := url.Parse(o.Resource)
	if err != nil {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String() + o.MetadataPath()
}

// Metadata serves the resource's protected resource metadata (RFC 9728).
// It uses the SDK's handler, at MetadataPath of the resource's origin.
func (o *OAuthOptions) Metadata() http.Handler {
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               o.Resource,
		AuthorizationServers:   []string{o.Issuer},
		ScopesSupported:        o.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "conduit",
	})
}

// The signature algorithms a token may use. They are asymmetric ones
// only, so that a public key can never be taken for an HMAC secret.
var tokenAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// errToken is the cause of every refusal of a token for what it is.
var errToken = fmt.Errorf("%w", auth.ErrInvalidToken)

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errToken}, args...)...)
}

// verifier verifies JWT access tokens against the issuer's keys. It
// fetches and keeps the keys.
type verifier struct {
	o  OAuthOptions
	hc *http.Client

	fetch sync.Mutex // one fetch at a time
	mu    sync.Mutex
	keys  []jose.JSONWebKey
	at    time.Time // when keys were fetched (zero: never)
	tried time.Time // when a fetch was last tried
	// failed is why the last fetch failed, until one succeeds.
	failed error
}

func newVerifier(o OAuthOptions) (*verifier, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Leeway == 0 {
		o.Leeway = DefaultLeeway
	}
	if o.KeyRefresh == 0 {
		o.KeyRefresh = DefaultKeyRefresh
	}
	v := &verifier{o: o, hc: o.HTTPClient}
	if v.hc == nil {
		v.hc = &http.Client{Timeout: 10 * time.Second}
	}
	return v, nil
}

// verify checks token and returns what it says: the principal, its
// expiry and scopes. A token refused for what it is matches
// auth.ErrInvalidToken (a 401). Failing to fetch the keys does not: the
// middleware answers 500. Neither forwards anything.
func (v *verifier) verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	if len(token) > maxTokenBytes {
		return nil, refuse("the token is longer than %d bytes", maxTokenBytes)
	}
	tok, err := jwt.ParseSigned(token, tokenAlgs)
	if err != nil {
		return nil, refuse("not a signed JWT with an accepted algorithm")
	}
	if len(tok.Headers) != 1 {
		return nil, refuse("one signature is needed")
	}
	h := tok.Headers[0]
	if err := v.checkType(h); err != nil {
		return nil, err
	}
	key, err := v.key(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return nil, err
	}
	var reg jwt.Claims
	var all map[string]any
	if err := tok.Claims(key.Key, &reg, &all); err != nil {
		return nil, refuse("the signature does not verify")
	}
	if reg.Expiry == nil {
		return nil, refuse("the token has no expiry")
	}
	err = reg.ValidateWithLeeway(jwt.Expected{Issuer: v.o.Issuer, AnyAudience: jwt.Audience{v.o.Resource}, Time: time.Now()}, v.o.Leeway)
	switch {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return nil, refuse("the token is not the issuer's")
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, refuse("the token is not for this resource")
	case errors.Is(err, jwt.ErrExpired):
		return nil, refuse("the token expired")
	case err != nil:
		return nil, refuse("the token is not valid yet")
	}
	claim := v.o.PrincipalClaim
	if claim == "" {
		claim = "sub"
	}
	principal, _ := all[claim].(string)
	if principal == "" {
		// An empty principal would bind its sessions to no one.
		return nil, refuse("the token has no %s", claim)
	}
	if claim == "email" && !verifiedEmail(all["email_verified"]) {
		return nil, refuse("the token's email is not verified (email_verified)")
	}
	scopes := scopesOf(all["scope"])
	if len(scopes) == 0 {
		scopes = scopesOf(all["scp"])
	}
	// The middleware checks expiry too, with the leeway as its ClockSkew.
	return &auth.TokenInfo{UserID: principal, Scopes: scopes, Expiration: reg.Expiry.Time()}, nil
}

// checkType checks a token's typ header (RFC 9068 §2.1, §4). It must be
// at+jwt when RequireTokenType is set. Otherwise it may be absent, JWT,
// or at+jwt. Media types compare without case, with or without
// "application/" (RFC 7515 §4.1.9).
func (v *verifier) checkType(h jose.Header) error {
	raw, present := h.ExtraHeaders[jose.HeaderType]
	typ, isString := raw.(string)
	if present && !isString {
		return refuse("the token's typ is not a string")
	}
	typ = strings.TrimPrefix(strings.ToLower(typ), "application/")
	switch {
	case typ == "at+jwt":
		return nil
	case v.o.RequireTokenType:
		return refuse("the token's typ is %q, not at+jwt", typ)
	case typ == "" || typ == "jwt":
		return nil
	}
	// Another kind of token, typed as such: never an access token.
	return refuse("the token's typ %q is not an access token's", typ)
}

// verifiedEmail reads email_verified as issuers write it. That is true,
// or the string "true" (Amazon Cognito, some others).
func verifiedEmail(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

// scopesOf reads a scope claim as issuers write it. That is a
// space-separated string (RFC 9068's "scope", Entra ID's "scp"). Or it is
// an array of strings (some issuers' "scp"). Anything else is no scope.
func scopesOf(v any) []string {
	switch v := v.(type) {
	case string:
		return strings.Fields(v)
	case []any:
		var out []string
		for _, s := range v {
			if s, ok := s.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// key returns the issuer's key of kid for alg. Keys are fetched when
// there are none yet, when they are older than an hour, and when kid is
// unknown (a rotation). They are fetched at most once per KeyRefresh in
// all. So a flood of tokens with made-up kids costs one fetch.
func (v *verifier) key(ctx context.Context, kid, alg string) (jose.JSONWebKey, error) {
	k, found, stale := v.lookup(kid, alg)
	if found && !stale {
		return k, nil
	}
	err := v.refresh(ctx)
	if k, found, _ = v.lookup(kid, alg); found {
		return k, nil // with the old keys when the fetch failed
	}
	if err != nil {
		return jose.JSONWebKey{}, err
	}
	return jose.JSONWebKey{}, refuse("no key of the issuer's has kid %q for %s", kid, alg)
}

// lookup finds the key of kid for alg among those fetched. It says
// whether they are due to be fetched again.
func (v *verifier) lookup(kid, alg string) (_ jose.JSONWebKey, found, stale bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k, found := findKey(v.keys, kid, alg)
	return k, found, v.at.IsZero() || time.Since(v.at) > keyMaxAge
}

// findKey is the key of keys that kid names, when it is for alg. Without
// a kid, it is the only key.
func findKey(keys []jose.JSONWebKey, kid, alg string) (jose.JSONWebKey, bool) {
	var match []jose.JSONWebKey
	for _, k := range keys {
		if k.KeyID == kid || kid == "" {
			match = append(match, k)
		}
	}
	if len(match) != 1 {
		return jose.JSONWebKey{}, false
	}
	k := match[0]
	if k.Algorithm != "" && k.Algorithm != alg {
		return jose.JSONWebKey{}, false
	}
	return k, true
}

// refresh fetches the keys, unless a fetch was tried within KeyRefresh.
func (v *verifier) refresh(ctx context.Context) error {
	v.fetch.Lock()
	defer v.fetch.Unlock()
	v.mu.Lock()
	if !v.tried.IsZero() && time.Since(v.tried) < v.o.KeyRefresh {
		defer v.mu.Unlock()
		return v.failed
	}
	v.tried = time.Now()
	v.mu.Unlock()
	keys, err := v.fetchKeys(ctx)
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		v.failed = fmt.Errorf("gateway: the keys of issuer %s: %w", v.o.Issuer, err)
		return v.failed
	}
	v.keys, v.at, v.failed = keys, time.Now(), nil
	return nil
}

func (v *verifier) fetchKeys(ctx context.Context) ([]jose.JSONWebKey, error) {
	// Not the request's context. A caller who hangs up must not make the
	// fetch fail. The failure would be kept for KeyRefresh, for everyone.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	jwksURL := v.o.JWKSURL
	if jwksURL == "" {
		asm, err := auth.GetAuthServerMetadata(ctx, v.o.Issuer, v.hc)
		if err != nil {
			return nil, err
		}
		if asm == nil || asm.JWKSURI == "" {
			return nil, errors.New("its metadata names no jwks_uri")
		}
		jwksURL = asm.JWKSURI
	}
	if err := oauth.CheckEndpoint("the jwks_uri", jwksURL); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", jwksURL, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxJWKSBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", jwksURL, maxJWKSBytes)
	}
	return parseJWKS(data)
}

// parseJWKS reads a JWK set (RFC 7517 §5). It keeps the public signing
// keys of the accepted algorithms. It leaves out a key it cannot read, a
// private or symmetric one, and one for encryption.
func parseJWKS(data []byte) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, errors.New("not a JWK set")
	}
	var out []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if json.Unmarshal(raw, &k) != nil || !k.Valid() || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if k.Algorithm != "" && !acceptedAlg(k.Algorithm) {
			continue
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, errors.New("no public signing key in the JWK set")
	}
	return out, nil
}

func acceptedAlg(alg string) bool {
	for _, a := range tokenAlgs {
		if string(a) == alg {
			return true
		}
	}
	return false
}

// subjects are the callers' verified tokens by principal. A server of
// identity principal may have an OAuth grant of token exchange. These
// tokens are what it exchanges (conduit.Options.SubjectToken). They are
// kept in memory until they expire.
type subjects struct {
	mu sync.Mutex
	m  map[string]subject
}

type subject struct {
	token   string
	expires time.Time // zero: no expiry (a static token)
}

// maxSubjects bounds the tokens kept. The expired ones go first.
const maxSubjects = 4096

// note keeps principal's latest verified token.
func (s *subjects) note(principal, token string, expires time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]subject{}
	}
	if _, ok := s.m[principal]; !ok && len(s.m) >= maxSubjects {
		now := time.Now()
		for p, sub := range s.m {
			if !sub.expires.IsZero() && sub.expires.Before(now) {
				delete(s.m, p)
			}
		}
		for p := range s.m {
			if len(s.m) < maxSubjects {
				break
			}
			delete(s.m, p)
		}
	}
	s.m[principal] = subject{token: token, expires: expires}
}

// token is principal's latest verified token that has not expired.
func (s *subjects) token(_ context.Context, principal string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.m[principal]
	switch {
	case !ok:
		return "", fmt.Errorf("principal %q has presented no token", principal)
	case !sub.expires.IsZero() && sub.expires.Before(time.Now()):
		return "", fmt.Errorf("the token principal %q presented has expired", principal)
	}
	return sub.token, nil
}

// errKeysUnavailable is what a caller is told when its token cannot be
// checked because the issuer's keys cannot be fetched. It is a 500,
// since the token may be good.
var errKeysUnavailable = errors.New("the authorization server's keys cannot be fetched now: retry later")
