// The server as an issuer of JWT access tokens (RFC 9068) for other
// resources, such as conduit serve, with its keys published (jwks_uri),
// and its token exchange on behalf of a user (RFC 8693): such a token
// for an access token of the MCP endpoint, whose subject it keeps.

package oauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/url"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

const tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"

// signingKey is a key of the server's access tokens.
type signingKey struct {
	kid string
	key *ecdsa.PrivateKey
}

func newSigningKey(n int) signingKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return signingKey{kid: fmt.Sprintf("key-%d", n), key: k}
}

// JWKS returns the public keys the server publishes at its jwks_uri.
func (s *Server) JWKS() jose.JSONWebKeySet {
	s.mu.Lock()
	defer s.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range s.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.key.PublicKey, KeyID: k.kid, Algorithm: string(jose.ES256), Use: "sig"})
	}
	return set
}

func (s *Server) jwks(w http.ResponseWriter, _ *http.Request) {
	set := s.JWKS()
	s.mu.Lock()
	s.Requests.JWKS++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, set)
}

// RotateKey makes a new signing key, published beside the others, which
// signs the tokens from then on; it returns its kid.
func (s *Server) RotateKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := newSigningKey(len(s.keys) + 1)
	s.keys = append(s.keys, k)
	return k.kid
}

// AccessToken is a JWT access token (RFC 9068) of the server's for
// subject, whose audience is audience (a resource such as conduit serve's
// URL), valid for ttl (negative: expired already).
func (s *Server) AccessToken(subject, audience string, ttl time.Duration) string {
	now := time.Now()
	return s.SignToken(jwt.MapClaims{
		"iss": s.URL, "sub": subject, "aud": audience, "client_id": "oauthtest-client", "scope": "mcp",
		"iat": now.Add(-time.Minute).Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(ttl).Unix(), "jti": rand.Text(),
	})
}

// SignToken signs claims as the server signs its access tokens (ES256,
// typ at+jwt, the newest key's kid), whatever they say.
func (s *Server) SignToken(claims jwt.MapClaims) string {
	return s.SignTyped(claims, "at+jwt")
}

// SignTyped is SignToken with typ as the typ header ("" leaves it out),
// as when the issuer signs another kind of token, or does not type its
// access tokens.
func (s *Server) SignTyped(claims jwt.MapClaims, typ string) string {
	s.mu.Lock()
	k := s.keys[len(s.keys)-1]
	s.mu.Unlock()
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	if typ == "" {
		delete(t.Header, "typ")
	} else {
		t.Header["typ"] = typ
	}
	t.Header["kid"] = k.kid
	signed, err := t.SignedString(k.key)
	if err != nil {
		panic(err)
	}
	return signed
}

// subjectOf verifies a JWT access token of the server's and returns its
// subject. Call with s.mu held.
func (s *Server) subjectOf(token string) (string, error) {
	var claims jwt.RegisteredClaims
	_, err := jwt.NewParser(jwt.WithIssuer(s.URL), jwt.WithExpirationRequired(), jwt.WithValidMethods([]string{"ES256"})).
		ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
			for _, k := range s.keys {
				if t.Header["kid"] == k.kid {
					return &k.key.PublicKey, nil
				}
			}
			return nil, fmt.Errorf("unknown kid %v", t.Header["kid"])
		})
	if err != nil {
		return "", err
	}
	if claims.Subject == "" {
		return "", fmt.Errorf("no subject")
	}
	return claims.Subject, nil
}

// exchange answers a token exchange (RFC 8693 §2.2): f is the form, jkt
// a DPoP proof's thumbprint. Call with s.mu held.
func (s *Server) exchange(w http.ResponseWriter, f url.Values, jkt string) {
	s.Requests.Exchanges = append(s.Requests.Exchanges, f)
	fail := func(status int, code, desc string) {
		writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
	}
	c := s.opts.Confidential
	switch {
	case !s.opts.TokenExchange:
		fail(http.StatusBadRequest, "unsupported_grant_type", "token exchange is not offered")
		return
	case c == nil || f.Get("client_id") != c.ID || f.Get("client_secret") != c.Secret:
		fail(http.StatusUnauthorized, "invalid_client", "only the confidential client may exchange tokens")
		return
	case f.Get("subject_token_type") != tokenTypeAccessToken || f.Get("requested_token_type") != tokenTypeAccessToken:
		fail(http.StatusBadRequest, "invalid_request", "an access token for an access token only")
		return
	case f.Get("resource") != s.MCPURL():
		fail(http.StatusBadRequest, "invalid_target", "the resource must be "+s.MCPURL())
		return
	}
	sub, err := s.subjectOf(f.Get("subject_token"))
	if err != nil {
		fail(http.StatusBadRequest, "invalid_grant", "the subject token: "+err.Error())
		return
	}
	at, typ, exp := s.issueAccess("tx", jkt)
	s.subjects[at] = sub
	writeJSON(w, http.StatusOK, map[string]any{"access_token": at, "issued_token_type": tokenTypeAccessToken, "token_type": typ, "expires_in": exp})
}
