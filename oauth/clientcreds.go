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
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// clientCredentials runs the client credentials grant: with a secret
// through the SDK's extauth.ClientCredentialsHandler, with a private key
// (private_key_jwt, which the SDK does not do) here.
func (h *Handler) clientCredentials(ctx context.Context, req *http.Request, resp *http.Response, cs []oauthex.Challenge) error {
	id, secret, err := h.credentials()
	if err != nil {
		return err
	}
	if secret == "" {
		return h.privateKeyJWT(ctx, cs, id)
	}
	if h.cc == nil {
		h.cc, err = extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: id, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}},
			HTTPClient:  h.hc,
		})
		if err != nil {
			return fmt.Errorf("oauth: %w", err)
		}
	}
	// The handler keeps this context for its token source's later
	// requests, so it must outlive the request; h.hc's timeout bounds
	// each of them.
	if err := h.cc.Authorize(context.WithoutCancel(ctx), req, h.withMetadataURL(resp, cs)); err != nil {
		return fmt.Errorf("oauth: client credentials: %w", err)
	}
	src, err := h.cc.TokenSource(ctx)
	if err != nil || src == nil {
		return fmt.Errorf("oauth: client credentials gave no token source: %v", err)
	}
	h.adoptSource(src, id)
	return nil
}

// adoptSource makes a grant's own token source current; such tokens are
// not stored (the grant gets new ones without anyone's help).
func (h *Handler) adoptSource(src oauth2.TokenSource, clientID string) {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	h.ts = &tokenSource{h: h, base: src, rec: Record{Resource: h.endpoint, ClientID: clientID}}
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
	asm, prm, _, err := h.discover(ctx, cs)
	if err != nil {
		return err
	}
	if m := asm.TokenEndpointAuthMethodsSupported; len(m) > 0 && !slices.Contains(m, "private_key_jwt") {
		return fmt.Errorf("oauth: authorization server %s does not accept private_key_jwt (it accepts %s)", asm.Issuer, strings.Join(m, ", "))
	}
	if err := CheckEndpoint("the token endpoint", asm.TokenEndpoint); err != nil {
		return err
	}
	src := oauth2.ReuseTokenSource(nil, &assertionSource{
		ctx:      context.WithValue(context.Background(), oauth2.HTTPClient, h.hc),
		clientID: id, tokenURL: asm.TokenEndpoint, audience: asm.Issuer,
		scopes: union(h.serverScopes(cs, prm), h.cfg.Scopes),
		key:    key, method: method,
	})
	if _, err := src.Token(); err != nil {
		return fmt.Errorf("oauth: client credentials with private_key_jwt: %w", err)
	}
	h.adoptSource(src, id)
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
		EndpointParams: url.Values{"client_assertion_type": {jwtBearerAssertion}, "client_assertion": {signed}},
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
