package gateway_test

// Identity edges: a principal is never empty, a token is an access token
// by its type, and an email names a principal only once verified.

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/golang-jwt/jwt/v5"
)

// TestEmptyPrincipalRefused: a token for the empty principal is refused
// when the gateway is configured, and a JWT whose principal claim is
// empty is answered 401. A session of the empty principal would be bound
// to no one: bob, with his own token and its id, would ride it past the
// rules that deny him.
func TestEmptyPrincipalRefused(t *testing.T) {
	up := newUpstream(t, "up")
	up.tool("echo", "Echo.", echo(""))
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Deny("up/*").When(conduit.Principal("bob")),
		conduit.Allow("*"),
	)}})
	anonToken := "anon-token-0123456789abcdef"
	_, err := g.Handler(&gateway.HTTPOptions{Tokens: map[string]string{anonToken: "", bobToken: "bob"}})
	if err == nil || !strings.Contains(err.Error(), "empty principal") {
		t.Fatalf("a token for the empty principal: %v", err)
	}

	as := oauthtest.New(t, oauthtest.Options{})
	counted, received := countingUpstream(t)
	url, _ := jwtGateway(t, as, []conduit.Server{counted}, &gateway.OAuthOptions{PrincipalClaim: "email"})
	for name, claims := range map[string]jwt.MapClaims{
		"an empty email": {"email": "", "email_verified": true},
		"no email":       {"email_verified": true},
		"a number":       {"email": 7, "email_verified": true},
	} {
		claims["iss"], claims["sub"], claims["aud"], claims["exp"] = as.URL, "u1", url, time.Now().Add(time.Hour).Unix()
		if code, _, _ := post(t, url, rawReq{body: initialize, token: as.SignToken(claims)}); code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, code)
		}
	}
	if received.Load() != 0 {
		t.Errorf("%d calls reached the server", received.Load())
	}
}

// TestTokenType: a token that names another type in its typ header (a
// DPoP proof, an ID-JAG, a logout token) is never an access token; one
// without typ, or with JWT, is accepted from an issuer that does not type
// its access tokens, unless RequireTokenType asks for at+jwt (RFC 9068).
func TestTokenType(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	for _, strict := range []bool{false, true} {
		up, received := countingUpstream(t)
		url, _ := jwtGateway(t, as, []conduit.Server{up}, &gateway.OAuthOptions{RequireTokenType: strict})
		claims := func() jwt.MapClaims {
			return jwt.MapClaims{"iss": as.URL, "sub": "alice", "aud": url, "exp": time.Now().Add(time.Hour).Unix()}
		}
		for _, tt := range []struct {
			typ    string
			lax    bool // accepted without RequireTokenType
			strict bool // accepted with it
		}{
			{"at+jwt", true, true},
			{"application/at+jwt", true, true},
			{"AT+JWT", true, true},
			{"", true, false},
			{"JWT", true, false},
			{"dpop+jwt", false, false},
			{"oauth-id-jag+jwt", false, false},
			{"logout+jwt", false, false},
			{"JOSE", false, false},
		} {
			want := http.StatusUnauthorized
			if (strict && tt.strict) || (!strict && tt.lax) {
				want = http.StatusOK
			}
			if code, _, body := post(t, url, rawReq{body: initialize, token: as.SignTyped(claims(), tt.typ)}); code != want {
				t.Errorf("RequireTokenType %v, typ %q: %d %s, want %d", strict, tt.typ, code, body, want)
			}
		}
		if received.Load() != 0 {
			t.Errorf("%d calls reached the server", received.Load())
		}
	}
}

// TestEmailVerified: with PrincipalClaim "email", a token whose
// email_verified is not true is refused: anyone may claim an address
// they never proved, and be decided as its owner.
func TestEmailVerified(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	up, _ := countingUpstream(t)
	url, _ := jwtGateway(t, as, []conduit.Server{up}, &gateway.OAuthOptions{PrincipalClaim: "email"})
	for _, tt := range []struct {
		name     string
		verified any
		want     int
	}{
		{"true", true, http.StatusOK},
		{`"true"`, "true", http.StatusOK},
		{"false", false, http.StatusUnauthorized},
		{`"false"`, "false", http.StatusUnauthorized},
		{"absent", nil, http.StatusUnauthorized},
		{"1", 1, http.StatusUnauthorized},
	} {
		claims := jwt.MapClaims{"iss": as.URL, "sub": "u1", "email": "alice@example.com", "aud": url, "exp": time.Now().Add(time.Hour).Unix()}
		if tt.verified != nil {
			claims["email_verified"] = tt.verified
		}
		if code, _, _ := post(t, url, rawReq{body: initialize, token: as.SignToken(claims)}); code != tt.want {
			t.Errorf("email_verified %s: %d, want %d", tt.name, code, tt.want)
		}
	}
}
