package conduit

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/identitytest"
	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/internal/session"
	"github.com/conduitmcp/conduit/oauth"
)

// The confused deputy, over Streamable HTTP: one hub, two principals at
// once, each call answered as its own principal's, never the other's, and
// no request sent for nobody or for a principal without credentials.
func TestIdentityPerPrincipalHTTP(t *testing.T) {
	ids := identitytest.NewHTTP(map[string]string{"tok-alice-0123456789": "alice", "tok-bob-0123456789": "bob"}, "alice")
	hs := httptest.NewServer(ids)
	t.Cleanup(hs.Close)
	mem := newTestServer(t, "mem").echoTools("echo")
	h := newHub(t, []Server{{
		ID: "gh", URL: hs.URL, Identity: IdentityPrincipal, Headers: map[string]string{"X-Org": "acme"},
		Principals: map[string]Credentials{
			"alice": {Headers: map[string]string{"Authorization": "Bearer tok-alice-0123456789"}},
			"bob":   {Headers: map[string]string{"Authorization": "Bearer tok-bob-0123456789"}},
		},
	}, mem.server("mem")}, nil)
	ctx := context.Background()

	// Nobody's listing leaves the server out, and says why.
	ts, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(ts); !slices.Equal(got, []string{"mem__echo"}) {
		t.Fatalf("tools for nobody = %v", got)
	}
	if sk := ts.Skipped(); len(sk) != 1 || sk[0].Reason != SkipNoPrincipal || sk[0].Server != "gh" {
		t.Fatalf("skipped = %+v", sk)
	}
	if w := ts.Warnings(); len(w) != 1 {
		t.Fatalf("warnings = %q", w)
	}
	// Each principal's listing comes from their own session: tools
	// differ per user.
	for p, want := range map[string][]string{
		"alice": {"gh__admin", "gh__note", "gh__whoami", "mem__echo"},
		"bob":   {"gh__note", "gh__whoami", "mem__echo"},
	} {
		ts, err := h.ListToolsFor(ctx, &ListOptions{Principal: p})
		if err != nil {
			t.Fatal(err)
		}
		if got := toolNames(ts); !slices.Equal(got, want) {
			t.Errorf("tools of %s = %v, want %v", p, got, want)
		}
	}
	// Both at once, many times: each sees only themselves.
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		p := []string{"alice", "bob"}[i%2]
		wg.Go(func() {
			res, err := h.CallTool(ctx, "gh__whoami", nil, &CallOptions{Principal: p})
			if err != nil {
				errs <- err
				return
			}
			if got := resultText(res); got != p {
				errs <- fmt.Errorf("%s's call was answered as %q", p, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := len(ids.Seen())
	// Nobody, and a principal without credentials: refused, nothing sent.
	_, err = h.CallTool(ctx, "gh__whoami", nil, nil)
	if e := wantKind(t, err, ErrUnavailable); !errors.Is(e, ErrNoPrincipal) {
		t.Errorf("nobody's call: %v", err)
	}
	_, err = h.CallTool(ctx, "gh__whoami", nil, &CallOptions{Principal: "carol"})
	if e := wantKind(t, err, ErrUnavailable); !errors.Is(e, oauth.ErrNeedsLogin) {
		t.Errorf("carol's call: %v", err)
	}
	ts, err = h.ListToolsFor(ctx, &ListOptions{Principal: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(ts); !slices.Equal(got, []string{"mem__echo"}) {
		t.Errorf("carol's tools = %v", got)
	}
	if n := len(ids.Seen()); n != seen {
		t.Errorf("%d requests were sent for nobody or carol", n-seen)
	}
	for _, tok := range ids.Seen() {
		if tok != "tok-alice-0123456789" && tok != "tok-bob-0123456789" {
			t.Errorf("a request carried %q", tok)
		}
	}
	st := statusOf(h, "gh")
	if st.State != StatePerPrincipal || st.Identity != IdentityPrincipal || len(st.Principals) != 2 ||
		st.Principals[0].Principal != "alice" || st.Principals[0].State != StateUp || st.Principals[1].Principal != "bob" {
		t.Errorf("status = %+v", st)
	}
}

// What a server scopes to a session is served only to the principal
// whose session it is: bob neither lists nor reads alice's note.
func TestIdentitySessionScopedResources(t *testing.T) {
	ids := identitytest.NewHTTP(map[string]string{"tok-alice-0123456789": "alice", "tok-bob-0123456789": "bob"})
	hs := httptest.NewServer(ids)
	t.Cleanup(hs.Close)
	h := newHub(t, []Server{{ID: "gh", URL: hs.URL, Identity: IdentityPrincipal, Principals: map[string]Credentials{
		"alice": {Headers: map[string]string{"Authorization": "Bearer tok-alice-0123456789"}},
		"bob":   {Headers: map[string]string{"Authorization": "Bearer tok-bob-0123456789"}},
	}}}, nil)
	ctx := context.Background()
	alice, bob := &CallOptions{Principal: "alice"}, &CallOptions{Principal: "bob"}
	res, err := h.CallTool(ctx, "gh__note", map[string]any{"text": "alice's secret"}, alice)
	if err != nil {
		t.Fatal(err)
	}
	uri := resultText(res)
	if uri != "note://alice/1" {
		t.Fatalf("note = %q", uri)
	}
	eventually(t, 5*time.Second, func() bool {
		rs, err := h.ListResourcesFor(ctx, &ListOptions{Principal: "alice"})
		return err == nil && resourceCount(rs) == 1
	}, "alice's note listed")
	rr, err := h.ReadResource(ctx, uri, alice)
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "alice's secret" {
		t.Fatalf("alice reads %v, %v", rr, err)
	}
	ps, err := h.ListPromptsFor(ctx, &ListOptions{Principal: "alice"})
	if err != nil || ps.Len() != 1 {
		t.Fatalf("alice's prompts: %v, %v", ps.Len(), err)
	}
	// Bob, on his own session, has none of it.
	if _, err := h.CallTool(ctx, "gh__whoami", nil, bob); err != nil {
		t.Fatal(err)
	}
	rs, err := h.ListResourcesFor(ctx, &ListOptions{Principal: "bob"})
	if err != nil || resourceCount(rs) != 0 {
		t.Fatalf("bob's resources: %d, %v", resourceCount(rs), err)
	}
	if ps, err := h.ListPromptsFor(ctx, &ListOptions{Principal: "bob"}); err != nil || ps.Len() != 0 {
		t.Fatalf("bob's prompts: %d, %v", ps.Len(), err)
	}
	if _, err := h.ReadResource(ctx, uri, bob); err == nil {
		t.Fatal("bob read alice's note")
	}
	if _, err := h.GetPrompt(ctx, "gh__note_1", nil, bob); err == nil {
		t.Fatal("bob got alice's prompt")
	}
	// Nor does nobody.
	if _, err := h.ReadResource(ctx, uri, nil); err == nil {
		t.Fatal("nobody read alice's note")
	}
}

// The confused deputy over stdio: a child process per principal, with
// that principal's environment; this process's own value of the variable
// never reaches a principal's child, nor does another principal's.
func TestIdentityPerPrincipalStdio(t *testing.T) {
	t.Setenv(identitytest.TokenEnv, "the-operator's-own-token")
	kid, _ := childServer(t, "kid", "basic")
	kid.Identity = IdentityPrincipal
	kid.Principals = map[string]Credentials{
		"alice": {Env: map[string]string{identitytest.TokenEnv: "tok-alice"}},
		"bob":   {Env: map[string]string{identitytest.TokenEnv: "tok-bob"}},
		"dave":  {Env: map[string]string{"DAVE_SETTING": "on"}},
	}
	h := newHub(t, []Server{kid}, nil)
	ctx := context.Background()
	get := func(p string) string {
		t.Helper()
		res, err := h.CallTool(ctx, "kid__getenv", map[string]any{"name": identitytest.TokenEnv}, &CallOptions{Principal: p})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return resultText(res)
	}
	if a, b, d := get("alice"), get("bob"), get("dave"); a != "tok-alice" || b != "tok-bob" || d != "" {
		t.Errorf("tokens seen: alice %q, bob %q, dave %q", a, b, d)
	}
	if pa, pb := callPIDFor(t, h, "kid__pid", "alice"), callPIDFor(t, h, "kid__pid", "bob"); pa == pb {
		t.Errorf("alice and bob share process %d", pa)
	}
	before := len(statusOf(h, "kid").Principals)
	_, err := h.CallTool(ctx, "kid__pid", nil, &CallOptions{Principal: "carol"})
	if e := wantKind(t, err, ErrUnavailable); !errors.Is(e, oauth.ErrNeedsLogin) {
		t.Errorf("carol: %v", err)
	}
	if n := len(statusOf(h, "kid").Principals); n != before {
		t.Errorf("carol's call opened a session: %d -> %d", before, n)
	}
}

// The pool's bound: the least recently used idle session makes room
// (its process ends); when every session is busy the request is refused,
// saying to retry; idle sessions are closed.
func TestIdentityPool(t *testing.T) {
	kid, marker := childServer(t, "kid", "basic")
	kid.Identity = IdentityPrincipal
	kid.Principals = map[string]Credentials{}
	for _, p := range []string{"alice", "bob", "carol", "dave"} {
		kid.Principals[p] = Credentials{Env: map[string]string{identitytest.TokenEnv: "tok-" + p}}
	}
	h := newHub(t, []Server{kid}, &Options{MaxPrincipalSessions: 2, PrincipalIdleTimeout: -1})
	ctx := context.Background()
	alice := callPIDFor(t, h, "kid__pid", "alice")
	bob := callPIDFor(t, h, "kid__pid", "bob")
	callPIDFor(t, h, "kid__pid", "alice") // bob is now the least recently used
	carol := callPIDFor(t, h, "kid__pid", "carol")
	waitGone(t, bob)
	if !alive(alice) || !alive(carol) {
		t.Fatal("alice's or carol's process ended")
	}
	if got := principalsOf(h, "kid"); !slices.Equal(got, []string{"alice", "carol"}) {
		t.Fatalf("sessions = %v", got)
	}

	// Both busy: dave is refused, nothing started, and told to retry.
	bctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, p := range []string{"alice", "carol"} {
		wg.Go(func() { h.CallTool(bctx, "kid__block", nil, &CallOptions{Principal: p}) })
	}
	eventually(t, 10*time.Second, func() bool {
		data, _ := os.ReadFile(marker)
		return strings.Count(string(data), "blocking\n") == 2
	}, "two blocked calls")
	_, err := h.CallTool(ctx, "kid__pid", nil, &CallOptions{Principal: "dave"})
	e := wantKind(t, err, ErrUnavailable)
	var busy *session.BusyError
	if !errors.As(e, &busy) || !strings.Contains(e.Message, "retry") {
		t.Errorf("dave: %v (%q)", err, e.Message)
	}
	if got := principalsOf(h, "kid"); !slices.Equal(got, []string{"alice", "carol"}) {
		t.Fatalf("sessions after dave's refusal = %v", got)
	}
	cancel()
	wg.Wait()
	// Free again: dave gets the session idle the longest.
	callPIDFor(t, h, "kid__pid", "dave")
	if got := principalsOf(h, "kid"); len(got) != 2 || !slices.Contains(got, "dave") {
		t.Fatalf("sessions = %v", got)
	}
}

// A principal's session closes after PrincipalIdleTimeout without a
// request, its process with it, and opens again on the next.
func TestIdentityIdleClose(t *testing.T) {
	kid, _ := childServer(t, "kid", "basic")
	kid.Identity = IdentityPrincipal
	kid.Principals = map[string]Credentials{"alice": {Env: map[string]string{identitytest.TokenEnv: "tok-alice"}}}
	h := newHub(t, []Server{kid}, &Options{PrincipalIdleTimeout: 200 * time.Millisecond})
	pid := callPIDFor(t, h, "kid__pid", "alice")
	waitGone(t, pid)
	eventually(t, 5*time.Second, func() bool { return len(principalsOf(h, "kid")) == 0 }, "no session left")
	if again := callPIDFor(t, h, "kid__pid", "alice"); again == pid {
		t.Fatal("the same process after the idle close")
	}
}

// Per-principal OAuth: each principal logs in (the library call behind
// conduit login --principal) and their tokens are stored under their own
// key; a principal who has not logged in needs a login, nothing sent
// with anyone else's tokens.
func TestIdentityOAuthLogin(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	store := &oauth.MemoryStore{}
	ctx := context.Background()
	for _, p := range []string{"alice", "bob"} {
		asked, err := oauth.Login(ctx, "remote", as.MCPURL(), &oauth.Config{Store: store, Principal: p, Authorize: oauthtest.LoginAs(p)})
		if err != nil || !asked {
			t.Fatalf("%s's login: %v, %v", p, asked, err)
		}
	}
	if rec, _ := store.Load(ctx, oauth.Key{Server: "remote"}); rec != nil {
		t.Fatal("a principal's login stored shared tokens")
	}
	h := newHub(t, []Server{{ID: "remote", URL: as.MCPURL(), Identity: IdentityPrincipal, OAuth: &oauth.Config{Store: store, LoginPoll: time.Hour}}}, nil)
	for _, p := range []string{"alice", "bob"} {
		res, err := h.CallTool(ctx, "remote__whoami", nil, &CallOptions{Principal: p})
		if err != nil || resultText(res) != "hello "+p {
			t.Fatalf("%s: %q, %v", p, resultText(res), err)
		}
	}
	bearers := len(as.Snapshot().Bearers)
	_, err := h.CallTool(ctx, "remote__whoami", nil, &CallOptions{Principal: "carol"})
	if e := wantKind(t, err, ErrUnavailable); !errors.Is(e, oauth.ErrNeedsLogin) {
		t.Fatalf("carol: %v", err)
	}
	for _, b := range as.Snapshot().Bearers[bearers:] {
		if b != "" {
			t.Errorf("carol's session sent a token: %q", b)
		}
	}
	var carol ServerStatus
	for _, ps := range statusOf(h, "remote").Principals {
		if ps.Principal == "carol" {
			carol = ps
		}
	}
	if carol.State != StateNeedsLogin {
		t.Errorf("carol's session = %+v", carol)
	}
}

// Token exchange: each principal's own token is exchanged (RFC 8693) for
// a token of the server's, which sees that principal; an authorization
// server that does not offer the exchange leaves the principal needing a
// login, and so does a principal without a token.
func TestIdentityTokenExchange(t *testing.T) {
	for _, offered := range []bool{true, false} {
		t.Run(fmt.Sprint("offered=", offered), func(t *testing.T) {
			as := oauthtest.New(t, oauthtest.Options{TokenExchange: offered,
				Confidential: &oauthtest.Client{ID: "conduit-gw", Secret: "gw-secret-0123456789"}})
			ctx := context.Background()
			subject := func(_ context.Context, p string) (string, error) {
				if p == "carol" {
					return "", errors.New("carol has not signed in")
				}
				return as.AccessToken(p, "https://gateway.example/mcp", time.Hour), nil
			}
			h := newHub(t, []Server{{ID: "remote", URL: as.MCPURL(), Identity: IdentityPrincipal,
				OAuth: &oauth.Config{Grant: oauth.GrantTokenExchange, ClientID: "conduit-gw", ClientSecret: "gw-secret-0123456789", LoginPoll: time.Hour}}},
				&Options{SubjectToken: subject})
			for _, p := range []string{"alice", "bob", "carol"} {
				res, err := h.CallTool(ctx, "remote__whoami", nil, &CallOptions{Principal: p})
				if offered && p != "carol" {
					if err != nil || resultText(res) != "hello "+p {
						t.Errorf("%s: %q, %v", p, resultText(res), err)
					}
					continue
				}
				if e := wantKind(t, err, ErrUnavailable); !errors.Is(e, oauth.ErrNeedsLogin) {
					t.Errorf("%s: %v", p, err)
				}
			}
			ex := as.Snapshot().Exchanges
			if offered && len(ex) != 2 {
				t.Errorf("%d exchanges, want alice's and bob's", len(ex))
			}
			if !offered && len(ex) != 0 {
				t.Errorf("%d exchanges with a server that does not offer them", len(ex))
			}
		})
	}
}

func toolNames(ts *ToolSet) []string {
	var out []string
	for t := range ts.All() {
		out = append(out, t.Exposed)
	}
	return out
}

func callPIDFor(t *testing.T, h *Hub, name, principal string) int {
	t.Helper()
	res, err := h.CallTool(context.Background(), name, nil, &CallOptions{Principal: principal})
	if err != nil {
		t.Fatalf("%s for %s: %v", name, principal, err)
	}
	pid, err := strconv.Atoi(resultText(res))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	eventually(t, 10*time.Second, func() bool { return !alive(pid) }, "process %d to end", pid)
}

func principalsOf(h *Hub, id string) []string {
	var out []string
	for _, ps := range statusOf(h, id).Principals {
		out = append(out, ps.Principal)
	}
	return out
}

func resourceCount(rs *ResourceSet) int {
	n := 0
	for range rs.Resources() {
		n++
	}
	return n
}

// TestForPrincipalHeaders: a principal's request carries their headers
// over the shared ones; one without credentials is not served.
func TestForPrincipalHeaders(t *testing.T) {
	gh := Server{ID: "gh", URL: "https://mcp.github.example/mcp", Identity: IdentityPrincipal, Headers: map[string]string{"X-Org": "acme"},
		Principals: map[string]Credentials{
			"alice": {Headers: map[string]string{"Authorization": "Bearer ghp_alice_0123"}},
			"bob":   {Headers: map[string]string{"Authorization": "Bearer ghp_bob_0123"}},
		}}
	alice, err := gh.forPrincipal("alice")
	if err != nil || alice.Headers["Authorization"] != "Bearer ghp_alice_0123" || alice.Headers["X-Org"] != "acme" {
		t.Errorf("alice's gh: %q, %v", alice.Headers, err)
	}
	if _, err := gh.forPrincipal("carol"); !errors.Is(err, oauth.ErrNeedsLogin) {
		t.Errorf("carol's gh: %v", err)
	}
}
