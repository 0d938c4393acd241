// The server's authorization extensions: DPoP (RFC 9449) at the token
// endpoint and the MCP endpoint, the JWT bearer grant (RFC 7523) with
// assertions signed by the server's identity provider key (a workload's
// platform, or an enterprise IdP's ID-JAG), and that IdP's token exchange
// (RFC 8693, SEP-990).

package oauthtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// The nonces the server asks for with Options.DPoPNonce.
const (
	ASNonce = "as-nonce-1"
	RSNonce = "rs-nonce-1"
)

const (
	grantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
)

// idp is the identity provider's key and the ID tokens it issued.
type idp struct {
	key      *ecdsa.PrivateKey
	idTokens map[string]bool
}

func newIdP() idp {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return idp{key: k, idTokens: map[string]bool{}}
}

// Assertion is a JWT the server's identity provider signed for audience
// (the server's issuer, s.URL, for the JWT bearer grant), expiring after
// ttl (negative: already expired); a workload's platform token.
func (s *Server) Assertion(audience string, ttl time.Duration) string {
	now := time.Now()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.RegisteredClaims{
		Issuer: s.URL + "/idp", Subject: "workload", Audience: jwt.ClaimStrings{audience},
		IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), ExpiresAt: jwt.NewNumericDate(now.Add(ttl)), ID: rand.Text(),
	}).SignedString(s.idp.key)
	if err != nil {
		panic(err)
	}
	return tok
}

// IDToken is an OpenID Connect ID token of the server's identity provider
// for a user, which its token exchange (IdPTokenURL) takes.
func (s *Server) IDToken() string {
	t := s.Assertion("conduit-at-idp", time.Hour)
	s.mu.Lock()
	s.idp.idTokens[t] = true
	s.mu.Unlock()
	return t
}

// IdPTokenURL is the token endpoint of the server's identity provider.
func (s *Server) IdPTokenURL() string { return s.URL + "/idp/token" }

// verifyAssertion checks a JWT bearer grant's assertion: signed by the
// identity provider, for this authorization server, not expired.
func (s *Server) verifyAssertion(a string) error {
	_, err := jwt.NewParser(jwt.WithAudience(s.URL), jwt.WithExpirationRequired(), jwt.WithValidMethods([]string{"ES256"})).
		Parse(a, func(*jwt.Token) (any, error) { return &s.idp.key.PublicKey, nil })
	return err
}

// idpToken is the identity provider's token exchange: an ID token it
// issued for an ID-JAG whose audience is the authorization server.
func (s *Server) idpToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	s.mu.Lock()
	s.Requests.IdP = append(s.Requests.IdP, f)
	known := s.idp.idTokens[f.Get("subject_token")]
	s.mu.Unlock()
	switch {
	case f.Get("grant_type") != grantTokenExchange:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
	case f.Get("requested_token_type") != tokenTypeIDJAG || f.Get("subject_token_type") != tokenTypeIDToken:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "an ID token for an ID-JAG only"})
	case !known:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "unknown ID token"})
	case f.Get("audience") != s.URL:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_target", "error_description": "the audience must be " + s.URL})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"access_token": s.Assertion(s.URL, 5*time.Minute),
			"issued_token_type": tokenTypeIDJAG, "token_type": "N_A", "expires_in": 300})
	}
}

// jwtBearer answers a JWT bearer grant (RFC 7523 §2.1); f is the form,
// the proof's key thumbprint, if any, binds the token.
func (s *Server) jwtBearer(w http.ResponseWriter, f url.Values, jkt string) {
	if err := s.verifyAssertion(f.Get("assertion")); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "the assertion: " + err.Error()})
		return
	}
	s.grantAccess(w, "jb", f, jkt)
}

// grantAccess answers a grant without a refresh token (client credentials,
// JWT bearer) with an access token, bound to the DPoP key of thumbprint
// jkt when it is set. Call with s.mu held.
func (s *Server) grantAccess(w http.ResponseWriter, kind string, f url.Values, jkt string) {
	at, typ, exp := s.issueAccess(kind, jkt)
	writeJSON(w, http.StatusOK, map[string]any{"access_token": at, "token_type": typ, "expires_in": exp, "scope": f.Get("scope")})
}

// issueAccess issues an access token without a refresh token, bound to
// the DPoP key of thumbprint jkt when it is set, and returns it with its
// type and lifetime in seconds. Call with s.mu held.
func (s *Server) issueAccess(kind, jkt string) (token, typ string, expiresIn int) {
	s.n++
	at := fmt.Sprintf("at-%s-%d-%x", kind, s.n, time.Now().UnixNano())
	s.access[at] = true
	s.issued = append(s.issued, at)
	typ = "Bearer"
	if jkt != "" {
		s.bound[at], typ = jkt, "DPoP"
	}
	exp := s.opts.ExpiresIn
	if exp == 0 {
		exp = 3600
	}
	return at, typ, exp
}

// checkProof checks a DPoP proof (RFC 9449 §4.3) for a request of method
// to target, binding accessToken when it is set, and returns its key's
// thumbprint and nonce. Every jti is accepted once. Call with s.mu held.
func (s *Server) checkProof(proof, method, target, accessToken string) (jkt, nonce string, err error) {
	if proof == "" || strings.Contains(proof, ",") {
		return "", "", fmt.Errorf("one DPoP proof is needed")
	}
	sig, err := jose.ParseSigned(proof, []jose.SignatureAlgorithm{jose.ES256, jose.ES384, jose.RS256, jose.PS256, jose.EdDSA})
	if err != nil {
		return "", "", fmt.Errorf("the proof is not a JWS: %v", err)
	}
	h := sig.Signatures[0].Protected
	if h.ExtraHeaders["typ"] != "dpop+jwt" {
		return "", "", fmt.Errorf("typ is %v", h.ExtraHeaders["typ"])
	}
	if h.JSONWebKey == nil || !h.JSONWebKey.IsPublic() {
		return "", "", fmt.Errorf("the proof must embed a public key")
	}
	payload, err := sig.Verify(h.JSONWebKey)
	if err != nil {
		return "", "", fmt.Errorf("the proof's signature: %v", err)
	}
	var c struct {
		JTI   string `json:"jti"`
		HTM   string `json:"htm"`
		HTU   string `json:"htu"`
		IAT   int64  `json:"iat"`
		ATH   string `json:"ath"`
		Nonce string `json:"nonce"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return "", "", err
	}
	switch {
	case c.JTI == "" || s.jtis[c.JTI]:
		return "", "", fmt.Errorf("jti %q missing or used before", c.JTI)
	case c.HTM != method || c.HTU != target:
		return "", "", fmt.Errorf("the proof is for %s %s, not %s %s", c.HTM, c.HTU, method, target)
	case time.Since(time.Unix(c.IAT, 0)).Abs() > 5*time.Minute:
		return "", "", fmt.Errorf("iat is not recent")
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		if c.ATH != base64.RawURLEncoding.EncodeToString(sum[:]) {
			return "", "", fmt.Errorf("ath does not bind the access token")
		}
	}
	s.jtis[c.JTI] = true
	tp, err := h.JSONWebKey.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", "", err
	}
	return base64.RawURLEncoding.EncodeToString(tp), c.Nonce, nil
}

// tokenProof checks the DPoP proof of a token request, if any: the
// thumbprint to bind the token to, or false when the request has been
// answered (a refusal, or a nonce to use).
func (s *Server) tokenProof(w http.ResponseWriter, r *http.Request) (jkt string, ok bool) {
	proof := r.Header.Get("DPoP")
	if !s.opts.DPoP || proof == "" {
		return "", true
	}
	s.Requests.TokenProofs++
	jkt, nonce, err := s.checkProof(proof, http.MethodPost, s.URL+"/token", "")
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_dpop_proof", "error_description": err.Error()})
		return "", false
	}
	if s.opts.DPoPNonce && nonce != ASNonce {
		s.Requests.NonceRefusals++
		w.Header().Set("DPoP-Nonce", ASNonce)
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "use_dpop_nonce", "error_description": "a nonce is needed"})
		return "", false
	}
	if s.opts.DPoPUnbound {
		return "", true
	}
	return jkt, true
}

// dpopGuard is the MCP endpoint's DPoP check (RFC 9449 §7): a token bound
// to a key goes with the DPoP scheme and a proof of that key; an unbound
// one as a Bearer token.
func (s *Server) dpopGuard(next http.Handler) http.Handler {
	rm := s.URL + "/.well-known/oauth-protected-resource/mcp"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse := func(params string) {
			w.Header().Set("WWW-Authenticate", `DPoP resource_metadata="`+rm+`"`+params)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		}
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		s.mu.Lock()
		s.Requests.Schemes = append(s.Requests.Schemes, scheme)
		jkt, bound := s.bound[token]
		live := s.access[token]
		var err error
		var got, nonce string
		if bound && strings.EqualFold(scheme, "DPoP") {
			got, nonce, err = s.checkProof(r.Header.Get("DPoP"), r.Method, s.MCPURL(), token)
		}
		s.mu.Unlock()
		switch {
		case token == "" || !live:
			refuse("")
		case bound != strings.EqualFold(scheme, "DPoP"):
			refuse(`, error="invalid_token", error_description="wrong token type"`)
		case !bound:
			next.ServeHTTP(w, r)
		case err != nil || got != jkt:
			refuse(`, error="invalid_dpop_proof"`)
		case s.opts.DPoPNonce && nonce != RSNonce:
			s.mu.Lock()
			s.Requests.NonceRefusals++
			s.mu.Unlock()
			w.Header().Set("DPoP-Nonce", RSNonce)
			refuse(`, error="use_dpop_nonce"`)
		default:
			next.ServeHTTP(w, r)
		}
	})
}
