package oauth_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/oauth"
)

// The client credentials grant with a secret: the client authenticates as
// the authorization server asks (client_secret_basic or
// client_secret_post), with a secret read from the variable the
// configuration names, asks for the server's scopes and the configured
// ones, and names the resource (which oauthtest also insists on).
func TestClientCredentialsWithSecret(t *testing.T) {
	for _, method := range []string{"client_secret_basic", "client_secret_post"} {
		t.Run(method, func(t *testing.T) {
			client := &oauthtest.Client{ID: "machine", Secret: "machine-secret-0123456789"}
			as := oauthtest.New(t, oauthtest.Options{Confidential: client, ConfidentialAuth: method})
			env := map[string]string{"CC_SECRET": client.Secret}
			cfg := &oauth.Config{
				Grant: oauth.GrantClientCredentials, ClientID: client.ID, ClientSecretEnv: "CC_SECRET",
				Scopes: []string{"extra"},
				Getenv: func(k string) string { return env[k] },
			}
			if _, err := connect(t, as.MCPURL(), cfg); err != nil {
				t.Fatal(err)
			}
			log := as.Snapshot()
			if len(log.Token) == 0 {
				t.Fatal("no token request")
			}
			f := log.Token[0]
			if g := f.Get("grant_type"); g != "client_credentials" {
				t.Fatalf("grant_type %q", g)
			}
			if r := f["resource"]; len(r) != 1 || r[0] != as.MCPURL() {
				t.Errorf("resource %q, want %q", r, as.MCPURL())
			}
			if s := strings.Fields(f.Get("scope")); !slices.Contains(s, "tools") || !slices.Contains(s, "extra") {
				t.Errorf("scope %q, want the server's (tools) and the configured (extra)", f.Get("scope"))
			}
			inForm := f.Get("client_secret") != ""
			inHeader := slices.Contains(log.BasicAuth, client.ID)
			if want := method == "client_secret_post"; inForm != want || inHeader == want {
				t.Errorf("secret in the form %v, in an Authorization header %v; want the %s way", inForm, inHeader, method)
			}
			if len(log.Authorize) != 0 {
				t.Error("the client credentials grant sent an authorization request")
			}
		})
	}
	t.Run("unset variable", func(t *testing.T) {
		as := oauthtest.New(t, oauthtest.Options{Confidential: &oauthtest.Client{ID: "m", Secret: "machine-secret-0123456789"}})
		_, err := connect(t, as.MCPURL(), &oauth.Config{Grant: oauth.GrantClientCredentials, ClientID: "m", ClientSecretEnv: "CC_SECRET",
			Getenv: func(string) string { return "" }})
		if err == nil || !strings.Contains(err.Error(), "CC_SECRET") {
			t.Fatalf("err = %v, want one naming the unset variable", err)
		}
		if n := len(as.Snapshot().Token); n != 0 {
			t.Fatalf("%d token requests without a secret", n)
		}
	})
}

// Tokens go only to the resource they were issued for: protected resource
// metadata that names another resource ends the client credentials grant
// before any token request, as it ends the authorization code grant.
func TestClientCredentialsRefusesMetadataForAnotherResource(t *testing.T) {
	client := &oauthtest.Client{ID: "machine", Secret: "machine-secret-0123456789"}
	as := oauthtest.New(t, oauthtest.Options{Confidential: client, Resource: "https://evil.example/mcp"})
	_, err := connect(t, as.MCPURL(), &oauth.Config{Grant: oauth.GrantClientCredentials, ClientID: client.ID, ClientSecret: client.Secret})
	if err == nil {
		t.Fatal("connected through metadata naming another resource")
	}
	if !strings.Contains(err.Error(), "protected resource metadata") {
		t.Errorf("err = %v, want it to be about the protected resource metadata", err)
	}
	if n := len(as.Snapshot().Token); n != 0 {
		t.Fatalf("%d token requests on the strength of metadata naming another resource", n)
	}
	if strings.Contains(err.Error(), client.Secret) {
		t.Fatal("the error holds the secret")
	}
}
