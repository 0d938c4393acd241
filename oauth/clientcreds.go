package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// clientCredentials runs the client credentials grant, with a secret
// (client_secret_basic or client_secret_post, as the authorization server
// prefers) or with a private key (private_key_jwt). Discovery is conduit's
// own, as for the other grants, and not the SDK's
// extauth.ClientCredentialsHandler's: that handler skips protected resource
// metadata it refuses (naming another resource) and asks the server's
// origin instead, sends no resource indicator, and asks for the server's
// scopes only.
func (h *Handler) clientCredentials(ctx context.Context, cs []oauthex.Challenge) error {
	id, secret, err := h.credentials()
	if err != nil {
		return err
	}
	if secret == "" {
		return h.privateKeyJWT(ctx, cs, id)
	}
	asm, resource, scopes, err := h.tokenEndpoint(ctx, cs)
	if err != nil {
		return err
	}
	cc := &clientcredentials.Config{
		ClientID: id, ClientSecret: secret, TokenURL: asm.TokenEndpoint, Scopes: scopes,
		AuthStyle:      authStyle(asm.TokenEndpointAuthMethodsSupported),
		EndpointParams: url.Values{"resource": {resource}},
	}
	// The source outlives this request: a background context that carries
	// the HTTP client, whose timeout bounds each token request.
	src := cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, h.hc))
	if _, err := src.Token(); err != nil {
		return fmt.Errorf("oauth: client credentials: %w", err)
	}
	h.adoptSource(src, Record{Resource: h.endpoint, Indicator: resource, Issuer: asm.Issuer, ClientID: id, Scopes: scopes})
	return nil
}

// tokenEndpoint is the discovery of a grant without a user: the
// authorization server (whose token endpoint must be HTTPS off loopback),
// the resource indicator, and the scopes to ask for.
func (h *Handler) tokenEndpoint(ctx context.Context, cs []oauthex.Challenge) (*oauthex.AuthServerMeta, string, []string, error) {
	asm, prm, resource, err := h.discover(ctx, cs)
	if err != nil {
		return nil, "", nil, err
	}
	if err := CheckEndpoint("the token endpoint", asm.TokenEndpoint); err != nil {
		return nil, "", nil, err
	}
	return asm, resource, h.grantScopes(cs, prm), nil
}

// grantScopes are the scopes a grant without a user asks for: those the
// server asks for (the MCP specification's order), the configured ones,
// and those asked for before, so that a step-up does not lose what an
// earlier round was granted (SEP-2350, as the SDK's handlers do).
func (h *Handler) grantScopes(cs []oauthex.Challenge, prm *oauthex.ProtectedResourceMetadata) []string {
	return union(h.previousScopes(""), union(h.serverScopes(cs, prm), h.cfg.Scopes))
}

// previousScopes are the scopes the current tokens were asked for, which
// a new authorization asks for again (SEP-2350: the union of those asked
// for before and those the server now asks for); none when the tokens
// come from another authorization server than issuer ("" for any).
func (h *Handler) previousScopes(issuer string) []string {
	ts := h.current()
	if ts == nil {
		return nil
	}
	rec := ts.record()
	if issuer != "" && rec.Issuer != "" && rec.Issuer != issuer {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(rec.Scopes), func(s string) bool { return s == "offline_access" })
}

// adoptSource makes a grant's own token source current; such tokens are
// not stored (the grant gets new ones without anyone's help). rec says
// what they are for.
func (h *Handler) adoptSource(src oauth2.TokenSource, rec Record) {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	h.ts = &tokenSource{h: h, base: src, rec: rec}
	h.dead = ""
	h.loaded = true
	h.signalLocked()
}

// jwtBearerAssertion is the client_assertion_type of RFC 7523 §2.2.
const jwtBearerAssertion = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// privateKeyJWT is the client credentials grant with private_key_jwt
// client authentication (RFC 7523 §2.2, OpenID Connect Core §9): each token
// request carries a fresh assertion signed with the client's key, whose
// audience is the authorization server's issuer.
func (h *Handler) privateKeyJWT(ctx context.Context, cs []oauthex.Challenge, id string) error {
	key, method, err := h.signingKey()
	if err != nil {
		return err
	}
	asm, resource, scopes, err := h.tokenEndpoint(ctx, cs)
	if err != nil {
		return err
	}
	if m := asm.TokenEndpointAuthMethodsSupported; len(m) > 0 && !slices.Contains(m, "private_key_jwt") {
		return fmt.Errorf("oauth: authorization server %s does not accept private_key_jwt (it accepts %s)", asm.Issuer, strings.Join(m, ", "))
	}
	src := oauth2.ReuseTokenSource(nil, &assertionSource{
		ctx:      context.WithValue(context.Background(), oauth2.HTTPClient, h.hc),
		clientID: id, tokenURL: asm.TokenEndpoint, audience: asm.Issuer,
		resource: resource, scopes: scopes,
		key: key, method: method,
	})
	if _, err := src.Token(); err != nil {
		return fmt.Errorf("oauth: client credentials with private_key_jwt: %w", err)
	}
	h.adoptSource(src, Record{Resource: h.endpoint, Indicator: resource, Issuer: asm.Issuer, ClientID: id, Scopes: scopes})
	return nil
}

// serverScopes are the scopes the server asks for: its challenge's, or
// else those its metadata lists (the MCP specification's order).
func (h *Handler) serverScopes(cs []oauthex.Challenge, prm *oauthex.ProtectedResourceMetadata) []string {
	if s := scopesFrom(cs); len(s) > 0 {
		return s
	}
	if prm != nil {
		return prm.ScopesSupported
	}
	return nil
}

type assertionSource struct {
	ctx                          context.Context
	clientID, tokenURL, audience string
	resource                     string // RFC 8707
	scopes                       []string
	key                          crypto.Signer
	method                       jwt.SigningMethod
}

func (s *assertionSource) Token() (*oauth2.Token, error) {
	now := time.Now()
	claims := jwt.RegisteredClaims{
		Issuer:    s.clientID,
		Subject:   s.clientID,
		Audience:  jwt.ClaimStrings{s.audience},
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(2 * time.Minute)),
		ID:        rand.Text(),
	}
	signed, err := jwt.NewWithClaims(s.method, claims).SignedString(s.key)
	if err != nil {
		return nil, fmt.Errorf("signing the client assertion: %w", err)
	}
	cc := &clientcredentials.Config{
		ClientID: s.clientID, TokenURL: s.tokenURL, Scopes: s.scopes,
		EndpointParams: url.Values{"client_assertion_type": {jwtBearerAssertion}, "client_assertion": {signed}, "resource": {s.resource}},
		AuthStyle:      oauth2.AuthStyleInParams,
	}
	return cc.Token(s.ctx)
}

// signingKey parses the configured private key and picks its algorithm.
func (h *Handler) signingKey() (crypto.Signer, jwt.SigningMethod, error) {
	var pemText string
	if h.cfg.PrivateKeyFile != "" {
		data, err := os.ReadFile(h.cfg.PrivateKeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("oauth: reading the private key: %w", err)
		}
		pemText = string(data)
	} else {
		var err error
		if pemText, err = h.cfg.value(h.cfg.PrivateKey, h.cfg.PrivateKeyEnv, "private key", true); err != nil {
			return nil, nil, err
		}
	}
	h.red.add(pemText)
	key, err := ParsePrivateKey([]byte(pemText))
	if err != nil {
		return nil, nil, err
	}
	method, err := signingMethod(key, h.cfg.SigningAlg)
	if err != nil {
		return nil, nil, err
	}
	return key, method, nil
}

// ParsePrivateKey parses a PEM private key: PKCS #8, SEC 1 (EC PRIVATE
// KEY) or PKCS #1 (RSA PRIVATE KEY). Its errors never quote the key.
func ParsePrivateKey(pemData []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(pemData)
	if block == nil {
		return nil, errors.New("oauth: the private key is not PEM")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("oauth: a PEM block of type %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, errors.New("oauth: the private key cannot be parsed")
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("oauth: a %T cannot sign", key)
	}
	return signer, nil
}

func signingMethod(key crypto.Signer, alg string) (jwt.SigningMethod, error) {
	if alg == "" {
		switch k := key.(type) {
		case *ecdsa.PrivateKey:
			switch k.Curve {
			case elliptic.P256():
				alg = "ES256"
			case elliptic.P384():
				alg = "ES384"
			case elliptic.P521():
				alg = "ES512"
			}
		case *rsa.PrivateKey:
			alg = "RS256"
		case ed25519.PrivateKey:
			alg = "EdDSA"
		}
	}
	m := jwt.GetSigningMethod(alg)
	if m == nil || alg == "none" {
		return nil, fmt.Errorf("oauth: no signing algorithm %q for a %T", alg, key)
	}
	ok := false
	switch key.(type) {
	case *ecdsa.PrivateKey:
		_, ok = m.(*jwt.SigningMethodECDSA)
	case *rsa.PrivateKey:
		switch m.(type) {
		case *jwt.SigningMethodRSA, *jwt.SigningMethodRSAPSS:
			ok = true
		}
	case ed25519.PrivateKey:
		_, ok = m.(*jwt.SigningMethodEd25519)
	}
	if !ok {
		return nil, fmt.Errorf("oauth: the signing algorithm %s does not go with a %T", alg, key)
	}
	return m, nil
}
