package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// countingUpstream is a server whose tools/call requests are counted.
func countingUpstream(t *testing.T) (conduit.Server, *atomic.Int64) {
	up := newUpstream(t, "up")
	up.tool("echo", "Echo.", echo(""))
	n := &atomic.Int64{}
	up.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				n.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	return up.server("up"), n
}

// forged signs claims with a key of the test's own under kid.
func forged(t *testing.T, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestJWTRefusals: every token that is not the issuer's own, for this
// resource, and current, is answered 401 with an invalid_token challenge,
// and nothing reaches a server; the valid one opens a session for its
// subject.
func TestJWTRefusals(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	up, received := countingUpstream(t)
	url, _ := jwtGateway(t, as, []conduit.Server{up}, nil)
	now := time.Now()
	claims := func(change func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"iss": as.URL, "sub": "alice", "aud": url, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
		if change != nil {
			change(c)
		}
		return c
	}
	kid := as.JWKS().Keys[0].KeyID
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	pub, _ := x509.MarshalPKIXPublicKey(as.JWKS().Keys[0].Key)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	valid := as.AccessToken("alice", url, time.Hour)
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+as.URL+`","sub":"admin","aud":"`+url+`","exp":9999999999}`)) + "." + parts[2]
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."

	for _, tt := range []struct{ name, token string }{
		{"alg none", none},
		{"HS256 keyed with the issuer's public key", forged(t, jwt.SigningMethodHS256, pubPEM, kid, claims(nil))},
		{"wrong audience", as.AccessToken("alice", "https://other.example/mcp", time.Hour)},
		{"wrong issuer", as.SignToken(claims(func(c jwt.MapClaims) { c["iss"] = "https://attacker.example" }))},
		{"expired", as.AccessToken("alice", url, -time.Hour)},
		{"not valid yet", as.SignToken(claims(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() }))},
		{"no expiry", as.SignToken(claims(func(c jwt.MapClaims) { delete(c, "exp") }))},
		{"no subject", as.SignToken(claims(func(c jwt.MapClaims) { delete(c, "sub") }))},
		{"unknown kid", forged(t, jwt.SigningMethodES256, other, "key-999", claims(nil))},
		{"the issuer's kid, another key", forged(t, jwt.SigningMethodES256, other, kid, claims(nil))},
		{"RS256 under the issuer's EC kid", forged(t, jwt.SigningMethodRS256, rsaKey, kid, claims(nil))},
		{"tampered claims", tampered},
		{"not a JWT", "x.y.z"},
		{"a static-looking token", "carol-static-012345678X"},
	} {
		for _, session := range []string{"", "alice's"} {
			id, body := "", initialize
			if session != "" {
				id, body = open(t, url, valid), callEcho
			}
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+tt.token)
			if id != "" {
				req.Header.Set("Mcp-Session-Id", id)
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
				t.Errorf("%s (%s session): %d, %q", tt.name, session, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
	if n := received.Load(); n != 0 {
		t.Errorf("%d calls reached the server", n)
	}
	// The valid token works, for its subject.
	id := open(t, url, valid)
	code, _, body := post(t, url, rawReq{body: callEcho, session: id, token: valid})
	if code != http.StatusOK || received.Load() != 1 {
		t.Errorf("the valid token: %d %s", code, body)
	}
	// A session stays with its principal: bob's valid token is refused on
	// alice's session.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(callEcho))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+as.AccessToken("bob", url, time.Hour))
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || received.Load() != 1 || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("bob's token on alice's session: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestJWTKeyRotation: a token signed with a key the issuer published
// after the gateway fetched its keys is accepted once KeyRefresh has
// passed; meanwhile a flood of unknown kids costs at most one fetch.
func TestJWTKeyRotation(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	up, _ := countingUpstream(t)
	const refresh = 300 * time.Millisecond
	url, _ := jwtGateway(t, as, []conduit.Server{up}, &gateway.OAuthOptions{KeyRefresh: refresh})
	open(t, url, as.AccessToken("alice", url, time.Hour))
	fetched := as.Snapshot().JWKS
	start := time.Now()
	as.RotateKey()
	rotated := as.AccessToken("alice", url, time.Hour)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for i := range 20 {
		tok := forged(t, jwt.SigningMethodES256, other, "made-up-"+string(rune('a'+i)), jwt.MapClaims{"iss": as.URL, "sub": "x", "aud": url, "exp": time.Now().Add(time.Hour).Unix()})
		if code, _, _ := post(t, url, rawReq{body: initialize, token: tok}); code != http.StatusUnauthorized {
			t.Fatalf("a made-up kid: %d", code)
		}
	}
	// At most one fetch per KeyRefresh, however slow the machine made the
	// flood (the check holds whatever the time it took).
	if n, most := as.Snapshot().JWKS-fetched, 1+int(time.Since(start)/refresh); n > most {
		t.Errorf("%d fetches of the keys for 20 made-up kids in %v, at most %d allowed", n, time.Since(start), most)
	}
	eventually(t, "the rotated key accepted", func() bool {
		code, _, _ := post(t, url, rawReq{body: initialize, token: rotated})
		return code == http.StatusOK
	})
}

// TestJWTScopesAndClaim: a token without the scopes the gateway requires
// is answered 403 insufficient_scope; the principal is the configured
// claim, as the policy sees it.
func TestJWTScopesAndClaim(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	up, received := countingUpstream(t)
	url, _ := jwtGateway(t, as, []conduit.Server{up}, &gateway.OAuthOptions{Scopes: []string{"mcp"}, PrincipalClaim: "email"},
		conduit.Allow("up/*").When(conduit.Principal("alice@example.com")))
	withScope := func(scope, email string) string {
		return as.SignToken(jwt.MapClaims{"iss": as.URL, "sub": "u1", "email": email, "email_verified": true, "aud": url, "scope": scope, "exp": time.Now().Add(time.Hour).Unix()})
	}
	if code, _, _ := post(t, url, rawReq{body: initialize, token: withScope("read", "alice@example.com")}); code != http.StatusForbidden {
		t.Errorf("without the scope: %d", code)
	}
	// alice's client has a session, bob's has none: the principal is the
	// claim on both paths.
	cs := httpClient(t, url, withScope("read mcp", "alice@example.com"), sessionProtocol)
	if got := resultText(callTool(t, cs, "up__echo", map[string]any{"x": 1})); got != `{"x":1}` {
		t.Errorf("alice's call: %q", got)
	}
	bob := httpClient(t, url, withScope("mcp", "bob@example.com"), statelessProtocol)
	if res, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Errorf("bob's call: %q", resultText(res))
	}
	if received.Load() != 1 {
		t.Errorf("%d calls", received.Load())
	}
	// Entra ID writes its scopes in "scp", a space-separated string; some
	// issuers an array. Both are read; a token with neither lacks the scope.
	for _, tt := range []struct {
		scp  any
		want int
	}{{"read mcp", http.StatusOK}, {[]any{"read", "mcp"}, http.StatusOK}, {"read", http.StatusForbidden}, {42, http.StatusForbidden}} {
		tok := as.SignToken(jwt.MapClaims{"iss": as.URL, "sub": "u1", "email": "alice@example.com", "email_verified": true, "aud": url, "scp": tt.scp, "exp": time.Now().Add(time.Hour).Unix()})
		if code, _, _ := post(t, url, rawReq{body: initialize, token: tok}); code != tt.want {
			t.Errorf("scp %v: %d, want %d", tt.scp, code, tt.want)
		}
	}
}
