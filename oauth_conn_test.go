package conduit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/oauth"
)

// A server whose refresh token is refused needs a login: its tools leave
// the listing, it is not reconnected meanwhile, and a login stored by
// another process (conduit login) brings it back.
func TestOAuthNeedsLogin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	as := oauthtest.New(t, oauthtest.Options{ExpiresIn: 5}) // every use refreshes
	store := &oauth.MemoryStore{}
	if _, err := oauth.Login(ctx, "remote", as.MCPURL(), &oauth.Config{Store: store, Authorize: oauthtest.FollowRedirect}); err != nil {
		t.Fatal(err)
	}
	as.RevokeRefreshTokens()
	as.RevokeAccessTokens()

	var logs bytes.Buffer
	var mu sync.Mutex
	var traced []string
	srv := Server{ID: "remote", URL: as.MCPURL(), OAuth: &oauth.Config{Store: store, LoginPoll: 20 * time.Millisecond}}
	// A client starts, as a hub of one, and says why it offers nothing.
	one := newClient(t, srv, &ClientOptions{})
	if st := one.Status()[0]; st.State != StateNeedsLogin || !errors.Is(st.Err, oauth.ErrNeedsLogin) {
		t.Fatalf("client status %s, %v; want needs login", st.State, st.Err)
	}
	// A hub starts, with the server in its status.
	cl, err := NewHub(ctx, []Server{srv}, &HubOptions{Options: Options{
		Policy: AllowAll(),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Trace: &Trace{ServerDown: func(i ServerDownInfo) {
			mu.Lock()
			traced = append(traced, fmt.Sprint(i.Err))
			mu.Unlock()
		}},
		Reconnect: Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	st := cl.Status()[0]
	if st.State != StateNeedsLogin || !errors.Is(st.Err, oauth.ErrNeedsLogin) {
		t.Fatalf("status %s, %v; want needs login", st.State, st.Err)
	}
	if st.State.String() != "needs login" {
		t.Errorf("State.String() = %q", st.State)
	}
	ts, err := cl.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ts.Len() != 0 {
		t.Fatalf("%d tools listed from a server that needs a login", ts.Len())
	}
	sk := ts.Skipped()
	if len(sk) != 1 || sk[0].Reason != SkipServerDown || !strings.Contains(sk[0].Detail, "needs a login") {
		t.Errorf("skipped %+v, want the server, needing a login", sk)
	}
	_, callErr := cl.CallTool(ctx, "remote__whoami", map[string]any{}, nil)
	if callErr == nil {
		t.Error("a call to a server that needs a login was answered")
	}
	// With a 1 ms backoff a down server would be tried hundreds of times
	// here; one that needs a login is not tried at all.
	n := as.Snapshot().MCP
	time.Sleep(300 * time.Millisecond)
	if m := as.Snapshot().MCP; m != n {
		t.Fatalf("%d requests to a server that needs a login", m-n)
	}

	// Nothing secret reached the status, the error, the logs or the trace.
	mu.Lock()
	text := fmt.Sprint(st.Err, callErr, sk, logs.String(), traced)
	mu.Unlock()
	for _, s := range as.Secrets() {
		if strings.Contains(text, s) {
			t.Fatalf("secret %q in:\n%s", s, text)
		}
	}

	// A login elsewhere stores new tokens; the server comes back.
	if _, err := oauth.Login(ctx, "remote", as.MCPURL(), &oauth.Config{Store: store, Authorize: oauthtest.FollowRedirect}); err != nil {
		t.Fatal(err)
	}
	for cl.Status()[0].State != StateUp {
		if ctx.Err() != nil {
			t.Fatalf("still %s after the login", cl.Status()[0].State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts, err = cl.ListTools(ctx)
	if err != nil || ts.Len() != 1 {
		t.Fatalf("after the login: %v tools, %v", ts.Len(), err)
	}
	name, _ := ts.ExposedName("remote", "whoami")
	if res, err := cl.CallTool(ctx, name, map[string]any{}, &CallOptions{ToolSet: ts}); err != nil || res.IsError {
		t.Fatalf("call after the login: %v, %v", res, err)
	}
}

func TestOAuthServerValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  Server
	}{
		{"command", Server{ID: "a", Command: "x", OAuth: &oauth.Config{}}},
		{"sse", Server{ID: "a", URL: "https://mcp.example/sse", SSE: true, OAuth: &oauth.Config{}}},
		{"authorization header", Server{ID: "a", URL: "https://mcp.example/mcp", Headers: map[string]string{"authorization": "Bearer x"}, OAuth: &oauth.Config{}}},
		{"plain http off loopback", Server{ID: "a", URL: "http://mcp.example/mcp", OAuth: &oauth.Config{}}},
	} {
		if err := tc.srv.validate(); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

func TestConfigOAuth(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"mcpServers": {"linear": {"url": "https://mcp.linear.app/mcp", "oauth": {"clientIdEnv": "LINEAR_CLIENT_ID", "scopes": ["read"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Servers[0].OAuth
	if o == nil || o.ClientIDEnv != "LINEAR_CLIENT_ID" || len(o.Scopes) != 1 {
		t.Fatalf("OAuth = %v", o)
	}
	for _, bad := range []string{
		`{"mcpServers": {"a": {"url": "https://x/mcp", "oauth": {"clientSecret": "s"}}}}`,
		`{"mcpServers": {"a": {"command": "x", "oauth": {}}}}`,
		`{"mcpServers": {"a": {"url": "https://x/sse", "type": "sse", "oauth": {}}}}`,
	} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
