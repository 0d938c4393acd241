package oauth_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/oauth"
)

// writeToken writes a workload token as a platform projects it.
func writeToken(t *testing.T, path, token string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The JWT bearer grant (workload identity federation): the platform's
// token, read from its file, is the assertion; each new access token is
// asked for with the file as it is then.
func TestJWTBearer(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{ExpiresIn: 1})
	file := filepath.Join(t.TempDir(), "token")
	first := as.Assertion(as.URL, time.Hour)
	writeToken(t, file, first)
	cfg := &oauth.Config{Grant: oauth.GrantJWTBearer, ClientID: "workload", AssertionFile: file}
	h, err := connect(t, as.MCPURL(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	forms := as.Snapshot().Token
	if len(forms) == 0 {
		t.Fatal("no token request")
	}
	f := forms[0]
	if f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || f.Get("assertion") != first ||
		f.Get("client_id") != "workload" || f.Get("resource") != as.MCPURL() {
		t.Fatalf("the token request was %v", f)
	}
	// The platform rotates the token; the next access token (these live
	// under ten seconds) is asked for with the new one.
	second := as.Assertion(as.URL, time.Hour)
	writeToken(t, file, second)
	ts, err := h.TokenSource(ctxT(t))
	if err != nil || ts == nil {
		t.Fatalf("TokenSource: %v, %v", ts, err)
	}
	if _, err := ts.Token(); err != nil {
		t.Fatal(err)
	}
	forms = as.Snapshot().Token
	if a := forms[len(forms)-1].Get("assertion"); a != second {
		t.Fatal("the token after the rotation was asked for with the old assertion")
	}
}

// An expired assertion is not sent; one the authorization server refused
// is not sent again until the platform renews it; the errors quote
// neither.
func TestJWTBearerRefusals(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	file := filepath.Join(t.TempDir(), "token")
	cfg := &oauth.Config{Grant: oauth.GrantJWTBearer, AssertionFile: file}

	expired := as.Assertion(as.URL, -time.Minute)
	writeToken(t, file, expired)
	_, err := connect(t, as.MCPURL(), cfg)
	if !errors.Is(err, oauth.ErrAssertionExpired) || strings.Contains(err.Error(), expired) {
		t.Fatalf("err = %v, want ErrAssertionExpired without the token", err)
	}
	if n := len(as.Snapshot().Token); n != 0 {
		t.Fatalf("%d token requests with an expired assertion", n)
	}

	wrong := as.Assertion("https://another.example", time.Hour)
	writeToken(t, file, wrong)
	h, err := oauth.NewHandler("srv", as.MCPURL(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		err := authorize(t, h, as)
		if err == nil || !strings.Contains(err.Error(), "invalid_grant") || strings.Contains(err.Error(), wrong) {
			t.Fatalf("authorization %d: %v, want the refusal without the token", i+1, err)
		}
		if n := len(as.Snapshot().Token); n != 1 {
			t.Fatalf("after authorization %d, %d token requests, want 1: a refused assertion is not sent again", i+1, n)
		}
	}
	writeToken(t, file, as.Assertion(as.URL, time.Hour))
	if err := authorize(t, h, as); err != nil {
		t.Fatalf("with the renewed assertion: %v", err)
	}

	writeToken(t, file, "not a jwt")
	if _, err := connect(t, as.MCPURL(), cfg); err == nil || !strings.Contains(err.Error(), "not a JWT") {
		t.Fatalf("err = %v, want one saying the file holds no JWT", err)
	}
}

// Enterprise-managed authorization (SEP-990): the user's ID token is
// exchanged at the identity provider for an ID-JAG for the server's
// authorization server, and that for an access token.
func TestEnterpriseManagedAuthorization(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	t.Setenv("IDP_ID_TOKEN", as.IDToken())
	cfg := &oauth.Config{Grant: oauth.GrantCrossApp, ClientID: "conduit",
		IdP: &oauth.IdP{TokenEndpoint: as.IdPTokenURL(), ClientID: "conduit-at-idp", IDTokenEnv: "IDP_ID_TOKEN"}}
	if _, err := connect(t, as.MCPURL(), cfg); err != nil {
		t.Fatal(err)
	}
	log := as.Snapshot()
	if len(log.IdP) != 1 || log.IdP[0].Get("audience") != as.URL || log.IdP[0].Get("resource") != as.MCPURL() {
		t.Fatalf("the identity provider was asked %v", log.IdP)
	}
	if g := as.Grants(); len(g) != 1 || g[0] != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		t.Fatalf("the authorization server was asked for %q, want the ID-JAG's jwt-bearer grant", g)
	}

	// An ID token the provider did not issue is refused there.
	t.Setenv("IDP_ID_TOKEN", as.Assertion("conduit-at-idp", time.Hour))
	if _, err := connect(t, as.MCPURL(), cfg); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("err = %v, want the identity provider's refusal", err)
	}
}

// authorize answers the server's 401 with h, as a transport does.
func authorize(t *testing.T, h *oauth.Handler, as *oauthtest.Server) error {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, as.MCPURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody, Request: req}
	resp.Header.Set("WWW-Authenticate", `Bearer resource_metadata="`+as.URL+`/.well-known/oauth-protected-resource/mcp"`)
	return h.Authorize(ctxT(t), req, resp)
}
