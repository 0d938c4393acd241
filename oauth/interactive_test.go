package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/oauth"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// counted returns an Authorize callback that counts its calls and then
// does what f does.
func counted(n *atomic.Int32, f auth.AuthorizationCodeFetcher) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		n.Add(1)
		return f(ctx, args)
	}
}

var errDeclined = errors.New("the user declined")

func declined(context.Context, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	return nil, errDeclined
}

// Login asks the user once, although the SDK's Connect meets two 401s
// (server/discover, then initialize): a login that failed or timed out is
// remembered for the rest of the connection, and the client registered
// for it is the only one.
func TestLoginAsksOnce(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprint("legacy=", legacy), func(t *testing.T) {
			t.Run("declined", func(t *testing.T) {
				as := oauthtest.New(t, oauthtest.Options{Legacy: legacy})
				var n atomic.Int32
				_, err := oauth.Login(ctxT(t), "srv", as.MCPURL(), &oauth.Config{Authorize: counted(&n, declined)})
				if !errors.Is(err, errDeclined) || !errors.Is(err, oauth.ErrNeedsLogin) {
					t.Fatalf("err = %v, want the refusal, as a login that is needed", err)
				}
				if n.Load() != 1 {
					t.Fatalf("Authorize called %d times, want 1", n.Load())
				}
				if r := as.Snapshot().Registrations; r != 1 {
					t.Fatalf("%d dynamic registrations, want 1", r)
				}
			})
			t.Run("timed out", func(t *testing.T) {
				as := oauthtest.New(t, oauthtest.Options{Legacy: legacy})
				var n atomic.Int32
				const limit = 300 * time.Millisecond
				wait := func(ctx context.Context, _ *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				start := time.Now()
				_, err := oauth.Login(ctxT(t), "srv", as.MCPURL(), &oauth.Config{Authorize: counted(&n, wait), AuthorizeTimeout: limit})
				took := time.Since(start)
				if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, oauth.ErrNeedsLogin) {
					t.Fatalf("err = %v, want the time limit, as a login that is needed", err)
				}
				if n.Load() != 1 || took >= 2*limit {
					t.Fatalf("Authorize called %d times in %v, want once, in about %v", n.Load(), took, limit)
				}
			})
		})
	}
}

// A handler remembers a failed login: later connections fail with it at
// once, asking no one, until Retry; then the user is asked again.
func TestFailedLoginIsRememberedUntilRetry(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	var n atomic.Int32
	var accept atomic.Bool
	authorize := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		if accept.Load() {
			return oauthtest.FollowRedirect(ctx, args)
		}
		return declined(ctx, args)
	}
	h, err := oauth.NewHandler("srv", as.MCPURL(), &oauth.Config{Authorize: counted(&n, authorize)})
	if err != nil {
		t.Fatal(err)
	}
	dial := func() error {
		c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		sess, err := c.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: as.MCPURL(), OAuthHandler: h}, nil)
		if err == nil {
			sess.Close()
		}
		return err
	}
	for i := range 3 {
		if err := dial(); !errors.Is(err, errDeclined) {
			t.Fatalf("connection %d: %v, want the refusal", i, err)
		}
	}
	if n.Load() != 1 {
		t.Fatalf("Authorize called %d times over three connections, want 1", n.Load())
	}
	accept.Store(true)
	h.Retry()
	if err := dial(); err != nil {
		t.Fatalf("after Retry: %v", err)
	}
	if n.Load() != 2 {
		t.Fatalf("Authorize called %d times, want 2", n.Load())
	}
}

// The interactive step is not cut short by the deadline of the request
// that needed it (a connect timeout): the login completes and its tokens
// are stored. A cancellation does end it.
func TestInteractiveStepOutlivesTheDeadline(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	store := &oauth.MemoryStore{}
	slow := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		select {
		case <-time.After(300 * time.Millisecond): // a person, signing in
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return oauthtest.FollowRedirect(ctx, args)
	}
	h, err := oauth.NewHandler("srv", as.MCPURL(), &oauth.Config{Store: store, Authorize: slow})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctxT(t), 100*time.Millisecond)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: as.MCPURL(), OAuthHandler: h}, nil); err == nil {
		sess.Close() // the SDK's retry of the request may still fit
	}
	rec, err := store.Load(ctxT(t), oauth.Key{Server: "srv"})
	if err != nil || rec == nil || rec.Token.AccessToken == "" {
		t.Fatalf("stored %v, %v: the login was cut short by the connection's deadline", rec, err)
	}

	// A canceled context ends the step at once.
	h2, _ := oauth.NewHandler("srv2", as.MCPURL(), &oauth.Config{Authorize: slow, AuthorizeTimeout: time.Minute})
	cctx, ccancel := context.WithCancel(ctxT(t))
	time.AfterFunc(50*time.Millisecond, ccancel)
	start := time.Now()
	_, err = mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(cctx, &mcp.StreamableClientTransport{Endpoint: as.MCPURL(), OAuthHandler: h2}, nil)
	if err == nil || time.Since(start) > 250*time.Millisecond {
		t.Fatalf("canceled connection: %v after %v, want an error before the step's end", err, time.Since(start))
	}

	// Close ends it too.
	h3, _ := oauth.NewHandler("srv3", as.MCPURL(), &oauth.Config{Authorize: slow, AuthorizeTimeout: time.Minute})
	time.AfterFunc(50*time.Millisecond, func() { h3.Close() })
	start = time.Now()
	_, err = mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: as.MCPURL(), OAuthHandler: h3}, nil)
	if err == nil || time.Since(start) > 250*time.Millisecond {
		t.Fatalf("closed handler: %v after %v, want an error before the step's end", err, time.Since(start))
	}
}

// A server that answers 403 insufficient_scope for ever more scopes gets
// three step-up logins in the window, and then none.
func TestStepUpRetryLimit(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	var n atomic.Int32
	h, err := oauth.NewHandler("srv", as.MCPURL(), &oauth.Config{Authorize: counted(&n, oauthtest.FollowRedirect)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	stepUp := func(scope string) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, as.MCPURL(), nil)
		if ts, _ := h.TokenSource(ctx); ts != nil {
			tok, err := ts.Token()
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		resp := &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}, Body: http.NoBody, Request: req}
		resp.Header.Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`,
			scope, as.URL+"/.well-known/oauth-protected-resource/mcp"))
		return h.Authorize(ctx, req, resp)
	}
	for i := 1; i <= 3; i++ {
		if err := stepUp(fmt.Sprint("scope-", i)); err != nil {
			t.Fatalf("step-up %d: %v", i, err)
		}
		if n.Load() != int32(i) {
			t.Fatalf("after step-up %d, Authorize called %d times", i, n.Load())
		}
		// Each step-up uses the client registered for the first.
		if r := as.Snapshot().Registrations; r != 1 {
			t.Fatalf("after step-up %d, %d dynamic registrations, want 1", i, r)
		}
		// Each asks for what was asked for before as well (SEP-2350).
		a := as.Snapshot().Authorize
		asked := strings.Fields(a[len(a)-1].Get("scope"))
		for j := 1; j <= i; j++ {
			if !slices.Contains(asked, fmt.Sprint("scope-", j)) {
				t.Fatalf("step-up %d asked for %q, without scope-%d", i, asked, j)
			}
		}
	}
	err = stepUp("scope-4")
	if err == nil || !strings.Contains(err.Error(), "3 times") {
		t.Fatalf("fourth step-up: %v, want the limit", err)
	}
	if n.Load() != 3 {
		t.Fatalf("the fourth step-up asked the user (%d calls)", n.Load())
	}
	// Scopes the last token was asked for are not asked for again.
	if err := stepUp("scope-3"); err == nil || !strings.Contains(err.Error(), "granted") {
		t.Fatalf("step-up for a granted scope: %v", err)
	}
}

// A client registered dynamically is kept with its tokens and used by the
// next login, in another process too (a Login reads the store), when the
// issuer and the redirect URL are the same; a login with a client the
// authorization server has dropped fails once, and the next registers anew.
func TestDynamicClientReused(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprint("legacy=", legacy), func(t *testing.T) {
			as := oauthtest.New(t, oauthtest.Options{Legacy: legacy})
			store := &oauth.MemoryStore{}
			cfg := &oauth.Config{Store: store, Authorize: oauthtest.FollowRedirect}
			login := func(cfg *oauth.Config) error {
				_, err := oauth.Login(ctxT(t), "srv", as.MCPURL(), cfg)
				return err
			}
			lastClient := func() string {
				a := as.Snapshot().Authorize
				return a[len(a)-1].Get("client_id")
			}
			check := func(step string, registrations int, client string) {
				t.Helper()
				if r := as.Snapshot().Registrations; r != registrations {
					t.Fatalf("%s: %d dynamic registrations, want %d", step, r, registrations)
				}
				if c := lastClient(); client != "" && c != client {
					t.Fatalf("%s: the login used client %q, want %q", step, c, client)
				}
			}
			if err := login(cfg); err != nil {
				t.Fatal(err)
			}
			check("first login", 1, "")
			first := lastClient()
			rec, err := store.Load(ctxT(t), oauth.Key{Server: "srv"})
			if err != nil || rec.ClientID != first || rec.RegisteredRedirect != oauth.DefaultRedirectURL {
				t.Fatalf("stored %+v, %v; want client %s registered for %s", rec, err, first, oauth.DefaultRedirectURL)
			}

			// The refresh token expires: the login that follows reuses the
			// client.
			as.RevokeRefreshTokens()
			as.RevokeAccessTokens()
			if err := login(cfg); err != nil {
				t.Fatal(err)
			}
			check("second login", 1, first)

			// A client registered for another redirect URL is not used.
			other := *cfg
			other.RedirectURL = "http://127.0.0.1:1/other"
			if err := login(&other); err != nil {
				t.Fatal(err)
			}
			check("another redirect URL", 2, "")
			second := lastClient()
			if second == first {
				t.Fatalf("the login for another redirect URL used client %s", first)
			}

			// The authorization server drops its clients: the login with
			// the stored one fails, and the next one registers.
			as.ForgetClients()
			if err := login(&other); err == nil {
				t.Fatal("a login with a client the server dropped succeeded")
			}
			check("login with a dropped client", 2, second)
			if err := login(&other); err != nil {
				t.Fatalf("the login after a dropped client: %v", err)
			}
			check("login after a dropped client", 3, "")
			if c := lastClient(); c == first || c == second {
				t.Fatalf("the login after a dropped client used %s again", c)
			}
		})
	}
}
