package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/internal/identitytest"
	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/oauth"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The protocols of the gateway's two kinds of client: with a session, and
// without one (a view). Each governs alike: a test of what a
// principal is, or has seen, runs with both.
const (
	sessionProtocol   = "2025-11-25"
	statelessProtocol = "2026-07-28"
)

var protocols = []string{sessionProtocol, statelessProtocol}

// httpClient connects a Go SDK client to the gateway at url with token,
// speaking version.
func httpClient(t *testing.T, url, token, version string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// identityServers are a Streamable HTTP server and a stdio one (a child
// process of this test binary), both of identity principal, that answer
// with the identity they see; alice and bob have credentials for both.
func identityServers(t *testing.T) []conduit.Server {
	t.Helper()
	ids := identitytest.NewHTTP(map[string]string{"gh-alice-0123456789": "alice", "gh-bob-0123456789": "bob"})
	hs := httptest.NewServer(ids)
	t.Cleanup(hs.Close)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []conduit.Server{
		{ID: "gh", URL: hs.URL, Identity: conduit.IdentityPrincipal, Principals: map[string]conduit.Credentials{
			"alice": {Headers: map[string]string{"Authorization": "Bearer gh-alice-0123456789"}},
			"bob":   {Headers: map[string]string{"Authorization": "Bearer gh-bob-0123456789"}},
		}},
		{ID: "kid", Command: exe, Env: map[string]string{childEnv: "identity", "GORACE": "atexit_sleep_ms=0"},
			Identity: conduit.IdentityPrincipal, Principals: map[string]conduit.Credentials{
				"alice": {Env: map[string]string{identitytest.TokenEnv: "kid-alice"}},
				"bob":   {Env: map[string]string{identitytest.TokenEnv: "kid-bob"}},
			}},
	}
}

// TestTwoPrincipalsAtOnce: conduit serve over HTTP with two principals'
// clients at once, with sessions and without: each call reaches the
// servers with its principal's credentials, never the other's; what a
// server scopes to alice's session is served to alice only.
func TestTwoPrincipalsAtOnce(t *testing.T) {
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) { twoPrincipalsAtOnce(t, version) })
	}
}

func twoPrincipalsAtOnce(t *testing.T, version string) {
	// A client without a session is told of no list change: with no cache
	// hint (ListTTL < 0), it sees the new lists at its next request.
	g := newGateway(t, identityServers(t), &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}, ListTTL: -1})
	h, err := g.Handler(&gateway.HTTPOptions{Tokens: map[string]string{aliceToken: "alice", bobToken: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	alice, bob := httpClient(t, srv.URL, aliceToken, version), httpClient(t, srv.URL, bobToken, version)

	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		cs, who := alice, "alice"
		if i%2 == 1 {
			cs, who = bob, "bob"
		}
		wg.Go(func() {
			for tool, want := range map[string]string{"gh__whoami": who, "kid__whoami": "kid-" + who} {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
				if err != nil {
					errs <- err
				} else if got := resultText(res); got != want {
					errs <- fmt.Errorf("%s's %s = %q", who, tool, got)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	uri := resultText(callTool(t, alice, "gh__note", map[string]any{"text": "alice's secret"}))
	if uri != "note://alice/1" {
		t.Fatalf("note = %q", uri)
	}
	eventually(t, "alice's note served to her", func() bool {
		res, err := alice.ListResources(context.Background(), nil)
		return err == nil && len(res.Resources) == 1 && res.Resources[0].URI == uri
	})
	if rr, err := alice.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err != nil || rr.Contents[0].Text != "alice's secret" {
		t.Fatalf("alice reads her note: %v", err)
	}
	eventually(t, "alice's note prompt", func() bool {
		res, err := alice.ListPrompts(context.Background(), nil)
		return err == nil && len(res.Prompts) == 1 && res.Prompts[0].Name == "gh__note_1"
	})
	if res, err := bob.ListResources(context.Background(), nil); err != nil || len(res.Resources) != 0 {
		t.Errorf("bob's resources: %v, %v", res, err)
	}
	if res, err := bob.ListPrompts(context.Background(), nil); err != nil || len(res.Prompts) != 0 {
		t.Errorf("bob's prompts: %v, %v", res, err)
	}
	if _, err := bob.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Error("bob read alice's note")
	}
	if _, err := bob.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "gh__note_1"}); err == nil {
		t.Error("bob got alice's prompt")
	}
}

// TestTaintByPrincipal: taint belongs to the principal, and to the
// conversation a client names, not to a transport session: a new session
// (a reconnection) keeps it, a request that names no conversation has
// every conversation's, and another principal has none of it. A fresh
// conversation of the same principal has it too by default (a client
// cannot shed it by naming one); under TaintConversation it does not.
// Clients without a session (whose tools are those of their taint) and
// with one alike; and what one kind of client saw taints the other's.
func TestTaintByPrincipal(t *testing.T) {
	for _, version := range protocols {
		for _, scope := range []gateway.TaintScope{gateway.TaintPrincipal, gateway.TaintConversation} {
			t.Run(version+"/"+scope.String(), func(t *testing.T) { taintByPrincipal(t, version, scope) })
		}
	}
}

func taintByPrincipal(t *testing.T, version string, scope gateway.TaintScope) {
	web := newUpstream(t, "web")
	web.tool("fetch", "Fetch a page.", echo("page "))
	env := newUpstream(t, "env")
	sent := countedTool(env, "get", "SECRET=1")
	g := newGateway(t, []conduit.Server{web.server("web"), env.server("env")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Deny("env/*").When(conduit.Tainted("web")),
		conduit.Allow("*"),
	)}, TaintScope: scope})
	h, err := g.Handler(&gateway.HTTPOptions{Tokens: map[string]string{aliceToken: "alice", bobToken: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	conv := func(c string) mcp.Meta { return mcp.Meta{gateway.MetaConversation: c} }
	call := func(cs *mcp.ClientSession, name string, meta mcp.Meta) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}, Meta: meta})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		return res
	}
	denied := func(res *mcp.CallToolResult) bool { return res.IsError }

	first := httpClient(t, srv.URL, aliceToken, version)
	call(first, "web__fetch", conv("c1"))
	first.Close()
	// A new session (as after a reconnection), the same conversation.
	again := httpClient(t, srv.URL, aliceToken, version)
	if res := call(again, "env__get", conv("c1")); !denied(res) {
		t.Errorf("c1 after a reconnection: %q", resultText(res))
	}
	if res := call(again, "env__get", nil); !denied(res) {
		t.Errorf("no conversation named: %q", resultText(res))
	}
	shed := scope == gateway.TaintConversation
	if res := call(again, "env__get", conv("c2")); denied(res) == shed {
		t.Errorf("a fresh conversation of alice's (%v): %q", scope, resultText(res))
	}
	bob := httpClient(t, srv.URL, bobToken, version)
	if res := call(bob, "env__get", nil); denied(res) {
		t.Errorf("bob: %q", resultText(res))
	}
	// The other kind of client of alice's has her taint.
	other := map[string]string{sessionProtocol: statelessProtocol, statelessProtocol: sessionProtocol}[version]
	if res := call(httpClient(t, srv.URL, aliceToken, other), "env__get", conv("c1")); !denied(res) {
		t.Errorf("c1 from a client of %s: %q", other, resultText(res))
	}
	want := int64(1) // bob's
	if shed {
		want = 2 // and c2's
	}
	if n := sent.Load(); n != want {
		t.Errorf("env__get ran %d times, want %d", n, want)
	}
}

// countedTool adds a tool to u that answers answer, and returns how many
// times it ran.
func countedTool(u *upstream, name, answer string) *atomic.Int64 {
	n := &atomic.Int64{}
	u.tool(name, "The "+name+" tool.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n.Add(1)
		return text(answer), nil
	})
	return n
}

// failingStore is a store whose sets' reads or writes, or claims, fail
// as a Redis that is down does (store.ErrUnavailable).
type failingStore struct {
	store.Store
	reads, writes, claims atomic.Bool
}

// newFailingStore is a failingStore over an in-memory store, closed by
// the test's end.
func newFailingStore(t *testing.T) *failingStore {
	mem := store.NewMemory()
	t.Cleanup(func() { mem.Close() })
	return &failingStore{Store: mem}
}

func (f *failingStore) Members(ctx context.Context, key string) ([]string, error) {
	if f.reads.Load() {
		return nil, fmt.Errorf("members: %w", store.ErrUnavailable)
	}
	return f.Store.Members(ctx, key)
}

func (f *failingStore) AddMembers(ctx context.Context, key string, ttl time.Duration, members ...string) error {
	if f.writes.Load() {
		return fmt.Errorf("add: %w", store.ErrUnavailable)
	}
	return f.Store.AddMembers(ctx, key, ttl, members...)
}

func (f *failingStore) Claim(ctx context.Context, key string, ttl time.Duration) (store.Claim, error) {
	if f.claims.Load() {
		return store.Claim{}, fmt.Errorf("claim: %w", store.ErrUnavailable)
	}
	return f.Store.Claim(ctx, key, ttl)
}

// TestTaintStoreFailsClosed: a call whose taint cannot be read is refused
// with nothing sent; an answer whose taint cannot be recorded is withheld;
// for clients with a session and without.
func TestTaintStoreFailsClosed(t *testing.T) {
	for _, tt := range []struct {
		name          string
		stateless     bool
		reads, writes bool
		want          string
		sent          int // times the server ran the call
	}{
		{"reads", false, true, false, "could not be read", 0},
		{"writes", false, false, true, "could not be recorded", 1},
		// Without a session, the view to serve the request is chosen by
		// its taint: unread, a call is served by a view that refuses it.
		{"reads without a session", true, true, false, "shared store is unavailable", 0},
		{"writes without a session", true, false, true, "could not be recorded", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			web := newUpstream(t, "web")
			sent := countedTool(web, "fetch", "the page")
			fs := newFailingStore(t)
			g := newGateway(t, []conduit.Server{web.server("web")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll(), Store: fs}})
			var cs *mcp.ClientSession
			if tt.stateless {
				cs = httpClient(t, serveGateway(t, g), aliceToken, statelessProtocol)
			} else {
				cs, _ = connect(t, g, "alice", nil)
			}
			fs.reads.Store(tt.reads)
			fs.writes.Store(tt.writes)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "web__fetch", Arguments: map[string]any{}})
			got := fmt.Sprint(err)
			if err == nil {
				got = resultText(res)
				if !res.IsError {
					got = "not an error: " + got
				}
			}
			if !strings.Contains(got, tt.want) || strings.Contains(got, "the page") {
				t.Errorf("answer: %q", got)
			}
			if n := sent.Load(); n != int64(tt.sent) {
				t.Errorf("sent %d times, want %d", n, tt.sent)
			}
			// Listing goes on, whatever the store: as if tainted by
			// every server when the taint cannot be read.
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				t.Errorf("listing: %v", err)
			}
		})
	}
}

// TestTaintUnreadLists: while the taint cannot be read, a client lists
// as if tainted by every server (a tool a taint denies is not offered),
// and a call of any tool, offered or not, is refused saying why; once the
// store is back, the lists are the principal's again.
func TestTaintUnreadLists(t *testing.T) {
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) {
			web := newUpstream(t, "web")
			sent := countedTool(web, "fetch", "the page")
			countedTool(web, "post", "posted")
			fs := newFailingStore(t)
			g := newGateway(t, []conduit.Server{web.server("web")}, &gateway.Options{Hub: &conduit.Options{
				Policy: conduit.NewPolicy(conduit.Deny("web/post").When(conduit.Tainted("web")), conduit.Allow("*")), Store: fs}})
			var cs *mcp.ClientSession
			if version == statelessProtocol {
				cs = httpClient(t, serveGateway(t, g), aliceToken, version)
			} else {
				fs.reads.Store(true) // from the session's first listing on
				cs, _ = connect(t, g, "alice", nil)
			}
			fs.reads.Store(true)
			if got := toolNames(t, cs); !slices.Equal(got, []string{"web__fetch"}) {
				t.Errorf("tools while the taint is unread = %v", got)
			}
			names := []string{"web__fetch"}
			if version == statelessProtocol {
				// A client without a session may call what it listed
				// before: the call is refused saying why (a session's
				// client is told its lists changed).
				names = append(names, "web__post")
			}
			for _, name := range names {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				if err != nil || !res.IsError || !strings.Contains(resultText(res), "shared store is unavailable") {
					t.Errorf("%s: %v %v", name, err, res)
				}
			}
			if n := sent.Load(); n != 0 {
				t.Errorf("sent %d times", n)
			}
			fs.reads.Store(false)
			want := []string{"web__fetch", "web__post"}
			if version == statelessProtocol {
				if got := toolNames(t, cs); !slices.Equal(got, want) {
					t.Errorf("tools once the store is back = %v", got)
				}
			} else {
				// A session's lists come back with its next request.
				callTool(t, cs, "web__fetch", map[string]any{})
				eventually(t, "the session's lists", func() bool {
					got := toolNames(t, cs)
					return slices.Equal(got, []string{"web__fetch"}) // tainted by the call now
				})
			}
		})
	}
}

// jwtGateway serves a gateway that accepts the JWTs of as (and the static
// token of carol), over the servers given, with the rules given (or
// AllowAll), and returns its URL.
func jwtGateway(t *testing.T, as *oauthtest.Server, servers []conduit.Server, o *gateway.OAuthOptions, rules ...conduit.Rule) (string, *gateway.Gateway) {
	t.Helper()
	policy := conduit.AllowAll()
	if len(rules) > 0 {
		policy = conduit.NewPolicy(rules...)
	}
	g := newGateway(t, servers, &gateway.Options{Hub: &conduit.Options{Policy: policy}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	opts := gateway.OAuthOptions{Resource: base + "/mcp", Issuer: as.URL}
	if o != nil {
		opts = *o
		opts.Resource, opts.Issuer = base+"/mcp", as.URL
	}
	h, err := g.Handler(&gateway.HTTPOptions{OAuth: &opts, Tokens: map[string]string{"carol-static-0123456789": "carol"}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle(opts.MetadataPath(), opts.Metadata())
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	return base + "/mcp", g
}

// TestTokenExchangeThroughServe: the caller's own JWT, which conduit
// serve verified, is exchanged for a token of the per-principal server's
// (RFC 8693): the server sees alice and bob, each in their own session,
// whether their clients have a session with the gateway or not; a caller
// with a static token has nothing to exchange, and that token never
// leaves the gateway.
func TestTokenExchangeThroughServe(t *testing.T) {
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) { tokenExchangeThroughServe(t, version) })
	}
}

func tokenExchangeThroughServe(t *testing.T, version string) {
	as := oauthtest.New(t, oauthtest.Options{TokenExchange: true, Confidential: &oauthtest.Client{ID: "conduit-gw", Secret: "gw-secret-0123456789"}})
	remote := conduit.Server{ID: "remote", URL: as.MCPURL(), Identity: conduit.IdentityPrincipal,
		OAuth: &oauth.Config{Grant: oauth.GrantTokenExchange, ClientID: "conduit-gw", ClientSecret: "gw-secret-0123456789", LoginPoll: time.Hour}}
	url, _ := jwtGateway(t, as, []conduit.Server{remote}, nil)
	for _, who := range []string{"alice", "bob"} {
		cs := httpClient(t, url, as.AccessToken(who, url, time.Hour), version)
		if got := resultText(callTool(t, cs, "remote__whoami", map[string]any{})); got != "hello "+who {
			t.Errorf("%s is seen as %q", who, got)
		}
	}
	carol := httpClient(t, url, "carol-static-0123456789", version)
	if res, err := carol.CallTool(context.Background(), &mcp.CallToolParams{Name: "remote__whoami", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Errorf("carol, with nothing to exchange: %q", resultText(res))
	}
	for _, f := range as.Snapshot().Exchanges {
		if f.Get("subject_token") == "carol-static-0123456789" {
			t.Error("carol's static token was sent to the authorization server")
		}
	}
	if n := len(as.Snapshot().Exchanges); n != 2 {
		t.Errorf("%d exchanges, want alice's and bob's", n)
	}
}

// TestMetadataAndChallenge: the protected resource metadata names the
// resource and its authorization server, and a 401 names the metadata.
func TestMetadataAndChallenge(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	up := newUpstream(t, "up")
	up.tool("echo", "Echo.", echo(""))
	url, _ := jwtGateway(t, as, []conduit.Server{up.server("up")}, &gateway.OAuthOptions{Scopes: []string{"mcp"}})
	base := strings.TrimSuffix(url, "/mcp")
	resp, err := http.Get(base + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		Scopes               []string `json:"scopes_supported"`
	}
	err = jsonDecode(resp, &meta)
	if err != nil || meta.Resource != url || !slices.Equal(meta.AuthorizationServers, []string{as.URL}) || !slices.Equal(meta.Scopes, []string{"mcp"}) {
		t.Errorf("metadata: %+v, %v", meta, err)
	}
	for name, tok := range map[string]string{"no token": "", "a bad one": "x.y.z"} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		ch := resp.Header.Get("WWW-Authenticate")
		want := `Bearer realm="conduit", resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp", scope="mcp"`
		if tok != "" {
			want += `, error="invalid_token"`
		}
		if resp.StatusCode != http.StatusUnauthorized || ch != want {
			t.Errorf("%s: %d, %s", name, resp.StatusCode, ch)
		}
	}
}

func jsonDecode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// TestServeOAuthProcess runs conduit serve --http as its own process,
// behind OAuth (--oauth-issuer, --oauth-resource), in front of a server of
// identity principal: two clients log in as alice and bob (JWTs of the
// local authorization server), and each is seen by the server as
// themselves; a client without a token is refused, pointed at the
// metadata.
func TestServeOAuthProcess(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	ids := identitytest.NewHTTP(map[string]string{"gh-alice-0123456789": "alice", "gh-bob-0123456789": "bob"})
	hs := httptest.NewServer(ids)
	t.Cleanup(hs.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	config := fmt.Sprintf(`{
		"mcpServers": {"gh": {"url": %q, "identity": "principal", "principals": {
			"alice": {"headers": {"Authorization": "Bearer ${env:GH_ALICE}"}},
			"bob":   {"headers": {"Authorization": "Bearer ${env:GH_BOB}"}}}}},
		"policy": [{"allow": ["gh/*"]}]
	}`, hs.URL)
	url := serveHTTP(t, config, []string{"GH_ALICE=gh-alice-0123456789", "GH_BOB=gh-bob-0123456789"},
		"--http", addr, "--oauth-issuer", as.URL, "--oauth-resource", "http://"+addr+"/mcp")
	// alice's client has a session, bob's has none.
	for who, version := range map[string]string{"alice": sessionProtocol, "bob": statelessProtocol} {
		cs := httpClient(t, url, as.AccessToken(who, url, time.Hour), version)
		if got := resultText(callTool(t, cs, "gh__whoami", map[string]any{})); got != who {
			t.Errorf("%s is seen as %q", who, got)
		}
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "/.well-known/oauth-protected-resource/mcp") {
		t.Errorf("without a token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	for _, tok := range ids.Seen() {
		if tok != "gh-alice-0123456789" && tok != "gh-bob-0123456789" {
			t.Errorf("the server received %q", tok)
		}
	}
}

// TestServeChildEnvironment: conduit serve, a real process holding every
// principal's secrets, the serve tokens, the state key and a provider's
// key in its environment. alice's stdio child has her credential and
// none of the rest; a shared server's child has none of it at all.
func TestServeChildEnvironment(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{
		"ALICE_SECRET":      "alice-credential-0123456789",
		"BOB_SECRET":        "bob-credential-0123456789",
		"TOK_ALICE":         aliceToken,
		"TOK_BOB":           bobToken,
		"CONDUIT_STATE_KEY": "state-key-0123456789abcdef0123456789abcdef",
		"OPENAI_API_KEY":    "sk-test-openai-key-0123456789",
	}
	var env []string
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	child := fmt.Sprintf(`"command": %q, "env": {%q: "identity", "GORACE": "atexit_sleep_ms=0"}`, exe, childEnv)
	config := `{
		"mcpServers": {
			"own": {` + child + `, "identity": "principal", "principals": {
				"alice": {"env": {"` + identitytest.TokenEnv + `": "${env:ALICE_SECRET}"}},
				"bob":   {"env": {"` + identitytest.TokenEnv + `": "${env:BOB_SECRET}", "BOB_ONLY": "${env:BOB_SECRET}"}}}},
			"shared": {` + child + `}},
		"policy": [{"allow": ["*"]}],
		"serve": {"tokens": [{"principal": "alice", "env": "TOK_ALICE"}, {"principal": "bob", "env": "TOK_BOB"}]}
	}`
	url := serveHTTP(t, config, env)
	alice := httpClient(t, url, aliceToken, sessionProtocol)
	for _, tool := range []string{"own__environ", "shared__environ"} {
		got := resultText(callTool(t, alice, tool, map[string]any{}))
		vars := map[string]string{}
		for _, kv := range strings.Split(got, "\n") {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		if tool == "own__environ" && vars[identitytest.TokenEnv] != secrets["ALICE_SECRET"] {
			t.Errorf("alice's %s = %q", identitytest.TokenEnv, vars[identitytest.TokenEnv])
		}
		if _, ok := vars["BOB_ONLY"]; ok {
			t.Errorf("%s: alice's child has BOB_ONLY", tool)
		}
		for name, secret := range secrets {
			if _, ok := vars[name]; ok {
				t.Errorf("%s: alice's child has %s", tool, name)
			}
			if name == "ALICE_SECRET" && tool == "own__environ" {
				continue // her own credential, under the server's name for it
			}
			if strings.Contains(got, secret) {
				t.Errorf("%s: alice's child has the value of %s", tool, name)
			}
		}
	}
}
