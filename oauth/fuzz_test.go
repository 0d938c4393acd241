package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/oauth"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzTokenFile feeds arbitrary bytes to FileStore.Load as a token file:
// it must not panic; an error must quote none of the file's secrets; a
// record it accepts must save and load back the same.
func FuzzTokenFile(f *testing.F) {
	f.Add([]byte(`{"resource":"https://mcp.example/mcp","client_id":"c","token":{"access_token":"a1","refresh_token":"r1","expiry":"2026-12-04T10:00:00Z"}}`))
	f.Add([]byte(`{"resource":"x","token":{"access_token":"secret-access","token_type":"Bearer","expires_in":3600}}`))
	f.Add([]byte(`{"token":{"access_token":7}}`))
	f.Add([]byte(`{"token":null,"scopes":["a",1]}`))
	f.Add([]byte(`{"resource":"\ud800","auth_style":99}` + "\n{}"))
	dir := f.TempDir()
	key := oauth.Key{Server: "srv"}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &oauth.FileStore{Dir: filepath.Join(dir, "in")}
		if err := os.MkdirAll(in.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(in.Dir, "srv.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		rec, err := in.Load(ctx, key)
		if err != nil {
			for _, s := range secrets(data) {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("the error quotes the secret %q: %v", s, err)
				}
			}
			return
		}
		if rec == nil {
			t.Fatal("a file that exists loaded as no record")
		}
		out := &oauth.FileStore{Dir: filepath.Join(dir, "out")}
		if err := out.Save(ctx, key, rec); err != nil {
			t.Fatalf("a loaded record does not save: %v", err)
		}
		back, err := out.Load(ctx, key)
		if err != nil {
			t.Fatalf("a saved record does not load: %v", err)
		}
		if !sameRecord(rec, back) {
			t.Fatalf("saved and loaded back differs:\n%#v\n%#v", rec.Token, back.Token)
		}
	})
}

// secrets returns the secret strings of a token file, when it is JSON,
// long enough that an error could not quote them by chance.
func secrets(data []byte) []string {
	var doc struct {
		ClientSecret string `json:"client_secret"`
		Token        struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		} `json:"token"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	var out []string
	for _, s := range []string{doc.ClientSecret, doc.Token.AccessToken, doc.Token.RefreshToken} {
		if len(s) >= 6 {
			out = append(out, s)
		}
	}
	return out
}

func sameRecord(a, b *oauth.Record) bool {
	ta, tb := a.Token, b.Token
	a2, b2 := *a, *b
	a2.Token, b2.Token = nil, nil
	// No scopes and an empty list of them are the same record (the file
	// omits an empty list).
	if !slices.Equal(a2.Scopes, b2.Scopes) || (ta == nil) != (tb == nil) {
		return false
	}
	a2.Scopes, b2.Scopes = nil, nil
	if !reflect.DeepEqual(a2, b2) {
		return false
	}
	if ta == nil {
		return true
	}
	return ta.AccessToken == tb.AccessToken && ta.RefreshToken == tb.RefreshToken &&
		ta.TokenType == tb.TokenType && ta.Expiry.Equal(tb.Expiry)
}

// FuzzMetadata serves arbitrary protected resource metadata and
// authorization server metadata (with {{URL}} standing for the server's
// URL) to a client authorizing through a Handler. It must not panic nor
// hang, and a connection that succeeds must have trusted only documents
// that deserve it: the authorization server metadata names the issuer it
// was fetched from (RFC 8414 section 3.3) and the protected resource
// metadata names the endpoint as its resource (RFC 9728 section 3.3).
func FuzzMetadata(f *testing.F) {
	good := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	prm := good(map[string]any{"resource": "{{URL}}/mcp", "authorization_servers": []string{"{{URL}}"}, "scopes_supported": []string{"tools"}})
	asm := good(map[string]any{
		"issuer": "{{URL}}", "authorization_endpoint": "{{URL}}/authorize", "token_endpoint": "{{URL}}/token",
		"registration_endpoint": "{{URL}}/register", "response_types_supported": []string{"code"},
		"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"}})
	f.Add(prm, asm)
	f.Add([]byte(nil), []byte(nil)) // the server's own documents
	f.Add(prm, []byte(strings.Replace(string(asm), `"issuer":"{{URL}}"`, `"issuer":"https://attacker.example"`, 1)))
	f.Add([]byte(strings.Replace(string(prm), `{{URL}}/mcp`, `https://other.example/mcp`, 1)), asm)
	f.Add([]byte(`{"resource":"{{URL}}/mcp","authorization_servers":["http://127.0.0.1:1"]}`), asm)
	f.Add(prm, []byte(strings.Replace(string(asm), `"S256"`, `"plain"`, 1)))
	f.Add([]byte(`{"resource":7}`), []byte(`[]`))

	var mu sync.Mutex
	var cur [2][]byte
	as := oauthtest.New(f, oauthtest.Options{Documents: func(path, url string) ([]byte, bool) {
		mu.Lock()
		defer mu.Unlock()
		i := 0
		if strings.HasPrefix(path, "/.well-known/oauth-authorization-server") {
			i = 1
		}
		if len(cur[i]) == 0 {
			return nil, false
		}
		return []byte(strings.ReplaceAll(string(cur[i]), "{{URL}}", url)), true
	}})
	// Fuzzed documents name any URL: requests go to the test server only.
	host := strings.TrimPrefix(as.URL, "http://")
	var d net.Dialer
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != host {
			return nil, errors.New("fuzz: not the test server")
		}
		return d.DialContext(ctx, network, addr)
	}}}
	authorize := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		if u, err := url.Parse(args.URL); err != nil || u.Host != host {
			return nil, errors.New("fuzz: not the test server")
		}
		return oauthtest.FollowRedirect(ctx, args)
	}
	f.Fuzz(func(t *testing.T, prm, asm []byte) {
		mu.Lock()
		cur = [2][]byte{prm, asm}
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		h, err := oauth.NewHandler("srv", as.MCPURL(), &oauth.Config{Store: &oauth.MemoryStore{}, Authorize: authorize, HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "fuzz", Version: "1"}, nil)
		sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: as.MCPURL(), OAuthHandler: h, HTTPClient: hc}, nil)
		if ctx.Err() != nil {
			t.Fatalf("authorization did not finish in 20s (err %v)", err)
		}
		if err != nil {
			if len(prm) == 0 && len(asm) == 0 {
				t.Fatalf("with the server's own documents: %v", err)
			}
			return
		}
		sess.Close()
		sub := func(b []byte) []byte { return []byte(strings.ReplaceAll(string(b), "{{URL}}", as.URL)) }
		if len(asm) > 0 {
			var m struct {
				Issuer string `json:"issuer"`
			}
			if json.Unmarshal(sub(asm), &m) == nil && m.Issuer != as.URL {
				t.Fatalf("connected through metadata of issuer %q fetched from %q", m.Issuer, as.URL)
			}
		}
		if len(prm) > 0 {
			var m struct {
				Resource string `json:"resource"`
			}
			if json.Unmarshal(sub(prm), &m) == nil && m.Resource != as.MCPURL() {
				t.Fatalf("connected to %q through resource metadata for %q", as.MCPURL(), m.Resource)
			}
		}
	})
}
