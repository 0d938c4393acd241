package oauth_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/oauth"
)

// DPoP (RFC 9449): asked for by the configuration or by the server's DPoP
// challenge, the token is bound to conduit's key, sent with the DPoP
// scheme and a fresh proof, refreshed with a proof of the same key, and
// stored with the key, so that another process uses it as it is.
func TestDPoP(t *testing.T) {
	for _, configured := range []bool{true, false} {
		name := "challenged"
		if configured {
			name = "configured"
		}
		t.Run(name, func(t *testing.T) {
			// Tokens live under ten seconds: every use refreshes them.
			as := oauthtest.New(t, oauthtest.Options{DPoP: true, ExpiresIn: 1})
			store := &oauth.MemoryStore{}
			cfg := &oauth.Config{Authorize: oauthtest.FollowRedirect, Store: store, DPoP: configured}
			if _, err := connect(t, as.MCPURL(), cfg); err != nil {
				t.Fatal(err)
			}
			log := as.Snapshot()
			if got := slices.DeleteFunc(slices.Clone(log.Schemes), func(s string) bool { return s == "" }); len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return s != "DPoP" }) {
				t.Fatalf("the MCP endpoint saw the schemes %q, want DPoP only", log.Schemes)
			}
			if grants := as.Grants(); !slices.Contains(grants, "refresh_token") || log.TokenProofs != len(grants) {
				t.Fatalf("%d token requests with a proof, of %q; want every one, a refresh among them", log.TokenProofs, grants)
			}
			rec, err := store.Load(ctxT(t), oauth.Key{Server: "srv"})
			if err != nil || rec.DPoPKey == "" || !strings.EqualFold(rec.Token.TokenType, "DPoP") {
				t.Fatalf("stored %v (%v): want a DPoP token with its key", rec, err)
			}
			if strings.Contains(rec.String(), rec.DPoPKey) {
				t.Fatal("the record's String shows its DPoP key")
			}
			// Another process: the stored token and key, no new login.
			if _, err := connect(t, as.MCPURL(), &oauth.Config{Store: store}); err != nil {
				t.Fatalf("with the stored DPoP token: %v", err)
			}
			if n := len(as.Snapshot().Authorize); n != 1 {
				t.Fatalf("%d authorizations, want 1", n)
			}
		})
	}
}

// Servers that want a nonce refuse the first proof with one (RFC 9449 §8,
// §9); conduit asks again once with it, at the token endpoint and at the
// MCP endpoint, and then keeps using it.
func TestDPoPNonce(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{DPoP: true, DPoPNonce: true})
	if _, err := connect(t, as.MCPURL(), &oauth.Config{Authorize: oauthtest.FollowRedirect, DPoP: true}); err != nil {
		t.Fatal(err)
	}
	if n := as.Snapshot().NonceRefusals; n != 2 {
		t.Fatalf("%d use_dpop_nonce refusals, want 2 (one by each server, then the nonce is kept)", n)
	}
}

// A token conduit cannot present is refused rather than sent: a type it
// does not know, or a DPoP token it did not ask for. A Bearer token is
// sent as one even when DPoP was asked for.
func TestTokenTypes(t *testing.T) {
	t.Run("bearer despite DPoP", func(t *testing.T) {
		as := oauthtest.New(t, oauthtest.Options{DPoP: true, DPoPUnbound: true})
		if _, err := connect(t, as.MCPURL(), &oauth.Config{Authorize: oauthtest.FollowRedirect, DPoP: true}); err != nil {
			t.Fatal(err)
		}
		if s := as.Snapshot().Schemes; !slices.Contains(s, "Bearer") || slices.Contains(s, "DPoP") {
			t.Fatalf("schemes %q: want the unbound token sent as a Bearer token", s)
		}
	})
	for typ, want := range map[string]string{"MAC": `type "MAC"`, "DPoP": "did not ask for"} {
		t.Run(typ, func(t *testing.T) {
			as := oauthtest.New(t, oauthtest.Options{TokenType: typ})
			_, err := connect(t, as.MCPURL(), &oauth.Config{Authorize: oauthtest.FollowRedirect})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want one saying %q", err, want)
			}
			if b := as.Snapshot().Bearers; slices.ContainsFunc(b, func(s string) bool { return s != "" }) {
				t.Fatalf("the MCP endpoint got tokens %q: the refused token was sent", b)
			}
		})
	}
}
