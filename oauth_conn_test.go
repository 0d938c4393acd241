package conduit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/oauth"
	"github.com/modelcontextprotocol/go-sdk/auth"
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
	one := newClient(t, srv, &Options{})
	if st := one.Status()[0]; st.State != StateNeedsLogin || !errors.Is(st.Err, oauth.ErrNeedsLogin) {
		t.Fatalf("client status %s, %v; want needs login", st.State, st.Err)
	}
	if err := one.Reconnect(); err != nil {
		t.Fatalf("Client.Reconnect: %v", err)
	}
	// Its reconnection runs on, and would be counted below as the hub's.
	one.Close()
	// A hub starts, with the server in its status.
	cl, err := NewHub(ctx, []Server{srv}, &Options{Policy: AllowAll(),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Trace: &Trace{ServerDown: func(i ServerEvent) {
			mu.Lock()
			traced = append(traced, fmt.Sprint(i.Err))
			mu.Unlock()
		}},
		Reconnect: Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond}})
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

// waitState waits for the first server of st to reach want.
func waitState(t *testing.T, ctx context.Context, st func() []ServerStatus, want ServerState) {
	t.Helper()
	for st()[0].State != want {
		if ctx.Err() != nil {
			t.Fatalf("state %s (%v), want %s", st()[0].State, st()[0].Err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A login in a hub is not cut short by ConnectTimeout: the person signing
// in takes longer than the connection attempt may, and the server comes
// up with the login's tokens, the user asked once, by the time NewHub
// returns (not a backoff later).
func TestOAuthInteractiveLoginOutlivesConnectTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	as := oauthtest.New(t, oauthtest.Options{})
	var n atomic.Int32
	slow := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		n.Add(1)
		select {
		case <-time.After(1500 * time.Millisecond): // three connect timeouts
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return oauthtest.FollowRedirect(ctx, args)
	}
	cl, err := NewHub(ctx, []Server{{ID: "remote", URL: as.MCPURL(), OAuth: &oauth.Config{Authorize: slow}}}, &Options{Policy: AllowAll(), ConnectTimeout: 500 * time.Millisecond, Reconnect: Backoff{Min: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if st := cl.Status()[0]; st.State != StateUp {
		t.Fatalf("after NewHub: %s, %v; want up", st.State, st.Err)
	}
	if n.Load() != 1 {
		t.Fatalf("Authorize called %d times, want 1", n.Load())
	}
	ts, err := cl.ListTools(ctx)
	if err != nil || ts.Len() != 1 {
		t.Fatalf("tools after the login: %v, %v", ts.Len(), err)
	}
}

// A login that is declined makes the server need a login: it is not
// reconnected, nor the user asked again, until Reconnect; then it is.
// Closing the hub ends a login under way.
func TestOAuthDeclinedLoginNeedsLogin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	as := oauthtest.New(t, oauthtest.Options{})
	var n atomic.Int32
	var accept atomic.Bool
	authorize := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		n.Add(1)
		if !accept.Load() {
			return nil, errors.New("access_denied: the user said no")
		}
		return oauthtest.FollowRedirect(ctx, args)
	}
	srv := Server{ID: "remote", URL: as.MCPURL(), OAuth: &oauth.Config{Authorize: authorize, LoginPoll: 10 * time.Millisecond}}
	cl, err := NewHub(ctx, []Server{srv}, &Options{Policy: AllowAll(), Reconnect: Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	st := cl.Status()[0]
	if st.State != StateNeedsLogin || !errors.Is(st.Err, oauth.ErrNeedsLogin) || !strings.Contains(st.Err.Error(), "the user said no") {
		t.Fatalf("status %s, %v; want needs login, saying why", st.State, st.Err)
	}
	mcpBefore := as.Snapshot().MCP
	time.Sleep(200 * time.Millisecond) // hundreds of 1 ms backoffs
	if n.Load() != 1 {
		t.Fatalf("Authorize called %d times, want 1", n.Load())
	}
	if m := as.Snapshot().MCP; m != mcpBefore {
		t.Fatalf("%d requests to a server whose login was declined", m-mcpBefore)
	}
	if err := cl.Reconnect("nope"); err == nil {
		t.Error("Reconnect of an unknown server succeeded")
	}
	accept.Store(true)
	if err := cl.Reconnect("remote"); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, cl.Status, StateUp)
	if n.Load() != 2 {
		t.Fatalf("Authorize called %d times, want 2", n.Load())
	}

	// A hub closed during a login (here by NewHub's ctx) ends it, past
	// ConnectTimeout, without waiting for the person.
	as2 := oauthtest.New(t, oauthtest.Options{})
	started := make(chan struct{})
	ended := make(chan error, 1)
	wait := func(ctx context.Context, _ *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	done := make(chan error, 1)
	go func() {
		h, err := NewHub(hctx, []Server{{ID: "remote", URL: as2.MCPURL(), OAuth: &oauth.Config{Authorize: wait, AuthorizeTimeout: time.Minute}}},
			&Options{Policy: AllowAll(), ConnectTimeout: 50 * time.Millisecond})
		if h != nil {
			h.Close()
		}
		done <- err
	}()
	<-started
	select {
	case err := <-ended:
		t.Fatalf("the login ended (%v) at the connection attempt's deadline", err)
	case <-time.After(150 * time.Millisecond):
	}
	hcancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("NewHub = %v, want it canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing the hub did not end the login under way")
	}
	if err := <-ended; err == nil {
		t.Fatal("the login's context did not end")
	}
}
