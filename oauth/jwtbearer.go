// Workload identity federation (SEP-1933): the JWT bearer grant of RFC
// 7523 §2.1 with a token the workload's platform issues it.

package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// maxAssertion bounds an assertion read from a file or a variable; a
// Kubernetes service account token is a few kilobytes.
const maxAssertion = 64 << 10

// ErrAssertionExpired is matched by the error of a jwt_bearer grant whose
// assertion expired: the platform has not renewed it, and it is not sent.
var ErrAssertionExpired = errors.New("oauth: the assertion expired")

// parseAssertion checks that data is one JWT (compact serialization,
// surrounding white space ignored) and returns it with its expiry (zero
// when it has none). Its signature is the authorization server's to check.
// Errors never quote the token.
func parseAssertion(data []byte) (string, time.Time, error) {
	if len(data) > maxAssertion {
		return "", time.Time{}, fmt.Errorf("oauth: the assertion is over %d bytes", maxAssertion)
	}
	s := strings.TrimSpace(string(data))
	if s == "" {
		return "", time.Time{}, errors.New("oauth: the assertion is empty")
	}
	var claims jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(s, &claims); err != nil {
		return "", time.Time{}, errors.New("oauth: the assertion is not a JWT")
	}
	var exp time.Time
	if claims.ExpiresAt != nil {
		exp = claims.ExpiresAt.Time
	}
	return s, exp, nil
}

// assertion reads the configured assertion, refusing an expired one.
func (h *Handler) assertion() (string, error) {
	var data []byte
	where := "the environment variable " + h.cfg.AssertionEnv
	if f := h.cfg.AssertionFile; f != "" {
		where = f
		var err error
		if data, err = readLimited(f, maxAssertion+1); err != nil {
			return "", fmt.Errorf("oauth: reading the assertion: %w", err)
		}
	} else {
		v, err := h.cfg.value("", h.cfg.AssertionEnv, "assertion", true)
		if err != nil {
			return "", err
		}
		data = []byte(v)
	}
	a, exp, err := parseAssertion(data)
	if err != nil {
		return "", fmt.Errorf("%w (in %s)", err, where)
	}
	h.red.add(a)
	if !exp.IsZero() && !time.Now().Before(exp) {
		return "", fmt.Errorf("%w at %s (in %s): its platform has not renewed it", ErrAssertionExpired, exp.UTC().Format(time.RFC3339), where)
	}
	return a, nil
}

func readLimited(name string, n int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// jwtBearer runs the JWT bearer grant (RFC 7523 §2.1) with the workload's
// assertion, after the discovery every grant makes. Each new access token
// is asked for with the assertion as it is then (a platform rotates it).
// An assertion the authorization server refused is not sent again: the
// refusal is the answer until the assertion changes (SEP-1933: no retry,
// no other grant).
func (h *Handler) jwtBearer(ctx context.Context, cs []oauthex.Challenge) error {
	id, secret, err := h.credentials()
	if err != nil {
		return err
	}
	a, err := h.assertion()
	if err != nil {
		return err
	}
	if err := h.refusedAssertion(a); err != nil {
		return err
	}
	asm, resource, scopes, err := h.tokenEndpoint(ctx, cs)
	if err != nil {
		return err
	}
	src := oauth2.ReuseTokenSource(nil, &jwtBearerSource{
		h:   h,
		ctx: context.WithValue(context.Background(), oauth2.HTTPClient, h.hc),
		cc: clientcredentials.Config{
			ClientID: id, ClientSecret: secret, TokenURL: asm.TokenEndpoint, Scopes: scopes,
			AuthStyle: jwtBearerAuthStyle(secret, asm.TokenEndpointAuthMethodsSupported),
		},
		resource: resource,
	})
	if _, err := src.Token(); err != nil {
		return fmt.Errorf("oauth: the jwt_bearer grant: %w", err)
	}
	h.adoptSource(src, Record{Resource: h.endpoint, Indicator: resource, Issuer: asm.Issuer, ClientID: id, Scopes: scopes})
	return nil
}

// jwtBearerAuthStyle is how the client authenticates: a public client
// (RFC 7523 §3.1: authentication is optional) names itself in the form.
func jwtBearerAuthStyle(secret string, supported []string) oauth2.AuthStyle {
	if secret == "" {
		return oauth2.AuthStyleInParams
	}
	return authStyle(supported)
}

// refusal is the assertion an authorization server refused, and how.
type refusal struct {
	mu        sync.Mutex
	assertion string
	err       error
}

func (h *Handler) refusedAssertion(a string) error {
	h.refused.mu.Lock()
	defer h.refused.mu.Unlock()
	if h.refused.err != nil && h.refused.assertion == a {
		return fmt.Errorf("oauth: the authorization server refused this assertion before, and it has not been renewed: %w", h.refused.err)
	}
	return nil
}

// jwtBearerSource asks for tokens with the assertion of the moment.
type jwtBearerSource struct {
	h        *Handler
	ctx      context.Context
	cc       clientcredentials.Config
	resource string
}

func (s *jwtBearerSource) Token() (*oauth2.Token, error) {
	a, err := s.h.assertion()
	if err != nil {
		return nil, err
	}
	if err := s.h.refusedAssertion(a); err != nil {
		return nil, err
	}
	cc := s.cc
	cc.EndpointParams = url.Values{"grant_type": {grantJWTBearer}, "assertion": {a}}
	if s.resource != "" {
		cc.EndpointParams.Set("resource", s.resource)
	}
	tok, err := cc.Token(s.ctx)
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		s.h.refused.mu.Lock()
		s.h.refused.assertion, s.h.refused.err = a, err
		s.h.refused.mu.Unlock()
	}
	return tok, err
}
