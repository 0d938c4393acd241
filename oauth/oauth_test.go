package oauth_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/oauth"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connect opens an MCP session to endpoint through a handler of cfg and
// calls the server's tool once.
func connect(t *testing.T, endpoint string, cfg *oauth.Config) (*oauth.Handler, error) {
	t.Helper()
	ctx := ctxT(t)
	h, err := oauth.NewHandler("srv", endpoint, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: endpoint}
	h.Attach(tr)
	sess, err := c.Connect(ctx, tr, nil)
	if err != nil {
		return h, err
	}
	defer sess.Close()
	_, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	return h, err
}

func TestAuthorizationCodeStoresRefreshesAndRotates(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{ExpiresIn: 5}) // within oauth2's 10 s margin: every use refreshes
	store := &oauth.MemoryStore{}
	if _, err := connect(t, as.MCPURL(), &oauth.Config{Store: store, Authorize: oauthtest.FollowRedirect}); err != nil {
		t.Fatal(err)
	}
	// PKCE S256 and the resource indicator on the authorization request.
	log := as.Snapshot()
	if len(log.Authorize) != 1 {
		t.Fatalf("%d authorization requests, want 1", len(log.Authorize))
	}
	q := log.Authorize[0]
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		t.Errorf("authorization request without PKCE S256: %v", q)
	}
	if q.Get("resource") != as.MCPURL() {
		t.Errorf("resource = %q, want %q", q.Get("resource"), as.MCPURL())
	}
	if !strings.Contains(q.Get("scope"), "offline_access") {
		t.Errorf("scope %q lacks offline_access, which the server supports", q.Get("scope"))
	}
	first, err := store.Load(ctxT(t), oauth.Key{Server: "srv"})
	if err != nil || first == nil || first.Token.RefreshToken == "" {
		t.Fatalf("stored %v, %v; want tokens with a refresh token", first, err)
	}
	if first.Resource != as.MCPURL() {
		t.Errorf("stored for resource %q, want %q", first.Resource, as.MCPURL())
	}

	// A new handler (another process) starts from the store, refreshes the
	// expired token and saves the rotated refresh token.
	h, err := connect(t, as.MCPURL(), &oauth.Config{Store: store})
	if err != nil {
		t.Fatalf("with stored tokens: %v", err)
	}
	_ = h
	second, _ := store.Load(ctxT(t), oauth.Key{Server: "srv"})
	if second.Token.RefreshToken == first.Token.RefreshToken {
		t.Fatal("the rotated refresh token was not saved")
	}
	if n := strings.Count(strings.Join(as.Grants(), " "), "refresh_token"); n == 0 {
		t.Fatalf("no refresh grant; grants %v", as.Grants())
	}
	if len(as.Snapshot().Authorize) != 1 {
		t.Fatal("refreshing asked the user again")
	}
	// The old refresh token was used up: only the saved one works.
	if _, err := connect(t, as.MCPURL(), &oauth.Config{Store: store}); err != nil {
		t.Fatalf("with the rotated token: %v", err)
	}
}

func TestExpiredRefreshTokenNeedsLogin(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{ExpiresIn: 5})
	store := &oauth.MemoryStore{}
	if _, err := connect(t, as.MCPURL(), &oauth.Config{Store: store, Authorize: oauthtest.FollowRedirect}); err != nil {
		t.Fatal(err)
	}
	as.RevokeRefreshTokens()
	as.RevokeAccessTokens()
	before := len(as.Snapshot().Authorize)
	_, err := connect(t, as.MCPURL(), &oauth.Config{Store: store})
	if !errors.Is(err, oauth.ErrNeedsLogin) {
		t.Fatalf("err = %v, want one matching ErrNeedsLogin", err)
	}
	var le *oauth.LoginError
	if !errors.As(err, &le) || !strings.Contains(le.Reason, "refresh token was refused") {
		t.Errorf("err = %v, want a LoginError saying the refresh token was refused", err)
	}
	if len(as.Snapshot().Authorize) != before {
		t.Error("a handler without Authorize sent an authorization request")
	}
	for _, s := range as.Secrets() {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("the error %q holds a secret", err)
		}
	}
}

func TestRevokedAccessTokenIsRefreshedOn401(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	store := &oauth.MemoryStore{}
	if _, err := connect(t, as.MCPURL(), &oauth.Config{Store: store, Authorize: oauthtest.FollowRedirect}); err != nil {
		t.Fatal(err)
	}
	as.RevokeAccessTokens() // valid for an hour by its expiry, refused by the server
	if _, err := connect(t, as.MCPURL(), &oauth.Config{Store: store}); err != nil {
		t.Fatalf("after the server refused the access token: %v", err)
	}
	if g := as.Grants(); g[len(g)-1] != "refresh_token" {
		t.Fatalf("grants %v, want a refresh last", g)
	}
}

func TestStateMismatchIsRejected(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprint("legacy=", legacy), func(t *testing.T) {
			as := oauthtest.New(t, oauthtest.Options{Legacy: legacy})
			forged := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
				res, err := oauthtest.FollowRedirect(ctx, args)
				if err == nil {
					res.State = "forged"
				}
				return res, err
			}
			_, err := connect(t, as.MCPURL(), &oauth.Config{Authorize: forged})
			if !errors.Is(err, oauth.ErrStateMismatch) {
				t.Fatalf("err = %v, want ErrStateMismatch", err)
			}
			for _, g := range as.Grants() {
				if g == "authorization_code" {
					t.Fatal("the code of a forged response was exchanged")
				}
			}
		})
	}
}

func TestLegacyServerUsesPKCE(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{Legacy: true})
	if _, err := connect(t, as.MCPURL(), &oauth.Config{Authorize: oauthtest.FollowRedirect}); err != nil {
		t.Fatal(err)
	}
	q := as.Snapshot().Authorize[0]
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		t.Fatalf("authorization request without PKCE: %v", q)
	}
}

func TestIssuerMixUpIsRejected(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts oauthtest.Options
	}{
		{"metadata names another issuer", oauthtest.Options{WrongIssuer: true}},
		{"response iss from another issuer", oauthtest.Options{WrongIss: true}},
		{"legacy, response iss from another issuer", oauthtest.Options{WrongIss: true, Legacy: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := oauthtest.New(t, tc.opts)
			_, err := connect(t, as.MCPURL(), &oauth.Config{Authorize: oauthtest.FollowRedirect})
			if err == nil {
				t.Fatal("connected through a mixed-up authorization server")
			}
			if !strings.Contains(err.Error(), "issuer") {
				t.Errorf("err = %v, want it to be about the issuer", err)
			}
			for _, g := range as.Grants() {
				if g == "authorization_code" {
					t.Fatal("a code was exchanged")
				}
			}
		})
	}
}

func TestTokensGoOnlyToTheirResource(t *testing.T) {
	t.Run("metadata for another resource", func(t *testing.T) {
		as := oauthtest.New(t, oauthtest.Options{Resource: "https://evil.example/mcp"})
		_, err := connect(t, as.MCPURL(), &oauth.Config{Authorize: oauthtest.FollowRedirect})
		if err == nil {
			t.Fatal("connected")
		}
		if n := len(as.Snapshot().Authorize); n != 0 {
			t.Fatalf("%d authorization requests for metadata naming another resource", n)
		}
	})
	t.Run("stored tokens of another URL", func(t *testing.T) {
		as := oauthtest.New(t, oauthtest.Options{})
		store := &oauth.MemoryStore{}
		if _, err := connect(t, as.MCPURL(), &oauth.Config{Store: store, Authorize: oauthtest.FollowRedirect}); err != nil {
			t.Fatal(err)
		}
		rec, _ := store.Load(ctxT(t), oauth.Key{Server: "srv"})
		rec.Resource = "https://elsewhere.example/mcp"
		store.Save(ctxT(t), oauth.Key{Server: "srv"}, rec)
		n := len(as.Snapshot().Bearers)
		connect(t, as.MCPURL(), &oauth.Config{Store: store})
		for _, b := range as.Snapshot().Bearers[n:] {
			if b == rec.Token.AccessToken {
				t.Fatal("a token stored for another resource was sent")
			}
		}
	})
}

func TestSecretsStayOutOfErrorsAndLogs(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{ExpiresIn: 5, EchoSecrets: true, ClientSecret: "registered-client-secret-42"})
	store := &oauth.MemoryStore{}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if _, err := connect(t, as.MCPURL(), &oauth.Config{Store: store, Authorize: oauthtest.FollowRedirect}); err != nil {
		t.Fatal(err)
	}
	rec, _ := store.Load(ctxT(t), oauth.Key{Server: "srv"})
	as.RevokeRefreshTokens() // the refresh fails, and the server's error quotes the refresh token and secret
	as.RevokeAccessTokens()
	ctx := ctxT(t)
	h, _ := oauth.NewHandler("srv", as.MCPURL(), &oauth.Config{Store: store})
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{Logger: logger})
	_, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: as.MCPURL(), OAuthHandler: h}, nil)
	if err == nil {
		t.Fatal("connected with revoked tokens")
	}
	ts, _ := h.TokenSource(ctx)
	var refreshErr error
	if ts != nil {
		_, refreshErr = ts.Token()
	}
	text := fmt.Sprint(err, refreshErr, logs.String(), rec, fmt.Sprintf("%+v %#v", rec, rec),
		(&oauth.Config{ClientSecret: "configured-secret-value"}).String())
	secrets := append(as.Secrets(), "configured-secret-value")
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Fatalf("secret %q appears in:\n%s", s, text)
		}
	}
	if !strings.Contains(fmt.Sprint(rec), "redacted") {
		t.Errorf("Record.String = %s", rec)
	}
}

func TestFileStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tokens")
	s := &oauth.FileStore{Dir: dir}
	ctx := ctxT(t)
	key := oauth.Key{Server: "github"}
	if rec, err := s.Load(ctx, key); rec != nil || err != nil {
		t.Fatalf("empty store: %v, %v", rec, err)
	}
	rec := &oauth.Record{Resource: "https://mcp.example/mcp", Token: &oauth2.Token{AccessToken: "a1", RefreshToken: "r1"}}
	if err := s.Save(ctx, key, rec); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "github.json")
	mode := func(p string) os.FileMode {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if m := mode(dir); m != 0o700 {
		t.Errorf("directory mode %04o, want 0700", m)
	}
	if m := mode(path); m != 0o600 {
		t.Errorf("file mode %04o, want 0600", m)
	}
	// Atomic replacement: a new file is renamed over the old one, and no
	// temporary file is left behind.
	before, _ := os.Stat(path)
	rec.Token.AccessToken = "a2"
	if err := s.Save(ctx, key, rec); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if os.SameFile(before, after) {
		t.Error("the file was rewritten in place, not replaced")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want the one file", len(entries))
	}
	got, err := s.Load(ctx, key)
	if err != nil || got.Token.AccessToken != "a2" || got.Token.RefreshToken != "r1" {
		t.Fatalf("loaded %v, %v", got, err)
	}
	// Per-principal keys are separate files.
	if err := s.Save(ctx, oauth.Key{Server: "github", Principal: "user/1"}, rec); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d files after saving a principal's tokens, want 2", len(entries))
	}
	// A file open to others is refused; a wide directory is narrowed.
	os.Chmod(path, 0o644)
	if _, err := s.Load(ctx, key); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("loading a 0644 token file: %v", err)
	}
	os.Chmod(dir, 0o755)
	if err := s.Save(ctx, key, rec); err != nil {
		t.Fatal(err)
	}
	if m := mode(dir); m != 0o700 {
		t.Errorf("directory left at %04o", m)
	}
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if rec, _ := s.Load(ctx, key); rec != nil {
		t.Fatal("deleted record still loads")
	}
	if _, err := s.Load(ctx, oauth.Key{Server: "../etc"}); err == nil {
		t.Error("a key with a path in it was accepted")
	}
}

func TestCheckEndpoint(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://mcp.example.com/mcp", true},
		{"http://127.0.0.1:8080/mcp", true},
		{"http://[::1]:8080/mcp", true},
		{"http://localhost/mcp", true},
		{"http://mcp.example.com/mcp", false},
		{"http://10.0.0.1/mcp", false},
		{"ftp://mcp.example.com/", false},
		{"https://user:pw@mcp.example.com/", false},
		{"/relative", false},
	} {
		err := oauth.CheckEndpoint("the URL", tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckEndpoint(%q) = %v, want ok %v", tc.url, err, tc.ok)
		}
	}
	if err := (&oauth.Config{}).Validate("http://mcp.example.com/mcp"); err == nil {
		t.Error("an http server URL off loopback was accepted")
	}
	if err := (&oauth.Config{RedirectURL: "http://example.com/cb"}).Validate("https://mcp.example.com/mcp"); err == nil {
		t.Error("an http redirect URL off loopback was accepted")
	}
}

func TestLegacyEndpointsMustBeHTTPS(t *testing.T) {
	// A legacy server whose metadata sends the browser and the code to
	// plain HTTP off loopback is refused before anything is sent there.
	mux := http.NewServeMux()
	srv := newServer(t, mux)
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"authorization_endpoint":"http://auth.example/authorize","token_endpoint":"http://auth.example/token","response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}`, srv.URL)
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	called := false
	_, err := connect(t, srv.URL+"/mcp", &oauth.Config{ClientID: "c", Authorize: func(context.Context, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		called = true
		return nil, errors.New("not reached")
	}})
	if err == nil || !strings.Contains(err.Error(), "HTTPS") || called {
		t.Fatalf("err = %v (authorize called: %v), want an HTTPS refusal before the browser", err, called)
	}
}

func newServer(t *testing.T, h http.Handler) *httptestServer {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

type httptestServer = httptest.Server
