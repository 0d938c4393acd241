package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/internal/identitytest"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Clients of protocol 2026-07-28 through the gateway: no session, and
// what needs their input answered with input-required results whose
// requestState the gateway seals.

var stateKey = []byte("0123456789abcdef0123456789abcdef")

// serveGateway serves g over HTTP with alice's and bob's tokens.
func serveGateway(t *testing.T, g *gateway.Gateway) string {
	t.Helper()
	h, err := g.Handler(&gateway.HTTPOptions{Tokens: map[string]string{aliceToken: "alice", bobToken: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// sessionIDs records the Mcp-Session-Id headers of the responses.
type sessionIDs struct {
	token string
	mu    sync.Mutex
	ids   []string
}

func (s *sessionIDs) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			s.mu.Lock()
			s.ids = append(s.ids, id)
			s.mu.Unlock()
		}
	}
	return resp, err
}

// newClient connects to url with token, speaking version ("" for the
// newest, 2026-07-28). The client declares elicitation (accepting, with
// who set to its name), sampling and roots, and answers input-required
// results itself: the test sees them.
func newClient(t *testing.T, url, token, version string) (*mcp.ClientSession, *sessionIDs) {
	t.Helper()
	name := strings.SplitN(token, "-", 2)[0]
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": name}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: name + "-model", Role: "assistant", Content: &mcp.TextContent{Text: "re: hi"}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///" + name})
	ids := &sessionIDs{token: token}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: ids}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, ids
}

// fsUpstream is an upstream of protocol 2026-07-28 with a tool
// "write" that counts its calls and echoes its arguments.
func fsUpstream(t *testing.T, calls *atomic.Int64) *upstream {
	up := newUpstream(t, "fs")
	up.tool("write", "Write.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := calls.Add(1)
		return text(fmt.Sprintf("wrote %s (%d)", req.Params.Arguments, n)), nil
	})
	up.tool("read", "Read.", echo("read "))
	return up
}

func callRaw(ctx context.Context, cs *mcp.ClientSession, name string, args any, answers mcp.InputResponseMap, state string) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, InputResponses: answers, RequestState: state})
}

// askedApproval checks that res asks the client to approve a call of
// tool, and returns its requestState.
func askedApproval(t *testing.T, res *mcp.CallToolResult, err error, tool string) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("result %+v, want an input-required result", res)
	}
	p, ok := res.InputRequests["conduit_approval"].(*mcp.ElicitParams)
	if !ok || len(res.InputRequests) != 1 {
		t.Fatalf("input requests %v, want the approval's elicitation alone", res.InputRequests)
	}
	if !strings.Contains(p.Message, tool) {
		t.Errorf("the approval asks %q, which does not name %s", p.Message, tool)
	}
	return res.RequestState
}

var (
	accept  = mcp.InputResponseMap{"conduit_approval": &mcp.ElicitResult{Action: "accept"}}
	decline = mcp.InputResponseMap{"conduit_approval": &mcp.ElicitResult{Action: "decline"}}
)

// TestStatelessSessions: a client of 2026-07-28 is served without a
// session (no Mcp-Session-Id), one of 2025-11-25 with one, by the same
// handler, each its principal's tools.
func TestStatelessSessions(t *testing.T) {
	var calls atomic.Int64
	g := newGateway(t, []conduit.Server{fsUpstream(t, &calls).server("fs")}, &gateway.Options{Hub: &conduit.Options{
		Policy: conduit.NewPolicy(conduit.Allow("fs/write").When(conduit.Principal("alice")), conduit.Allow("fs/read")),
	}})
	url := serveGateway(t, g)
	for _, version := range []string{"", "2025-11-25"} {
		for _, tc := range []struct{ token, want string }{{aliceToken, "[fs__read fs__write]"}, {bobToken, "[fs__read]"}} {
			cs, ids := newClient(t, url, tc.token, version)
			got := cs.InitializeResult().ProtocolVersion
			if want := map[string]string{"": "2026-07-28", "2025-11-25": "2025-11-25"}[version]; got != want {
				t.Errorf("negotiated %s, want %s", got, want)
			}
			if names := fmt.Sprint(toolNames(t, cs)); names != tc.want {
				t.Errorf("%s (%s) lists %s, want %s", tc.token[:5], got, names, tc.want)
			}
			res := callTool(t, cs, "fs__read", map[string]any{"x": 1})
			if resultText(res) != `read {"x":1}` {
				t.Errorf("read = %q", resultText(res))
			}
			ids.mu.Lock()
			n := len(ids.ids)
			ids.mu.Unlock()
			if stateless := got >= "2026-07-28"; stateless != (n == 0) {
				t.Errorf("protocol %s: %d responses with a session id", got, n)
			}
		}
	}
}

// TestStatelessApproval: an "ask" rule, for a client of 2026-07-28, is an
// input-required result with an elicitation; the retry that accepts runs
// the call once, and again with the same state gets the recorded answer;
// one that declines runs nothing.
func TestStatelessApproval(t *testing.T) {
	var calls atomic.Int64
	g := newGateway(t, []conduit.Server{fsUpstream(t, &calls).server("fs")}, &gateway.Options{
		Hub:       &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("fs/write"), conduit.Allow("*"))},
		StateKeys: [][]byte{stateKey},
	})
	cs, _ := newClient(t, serveGateway(t, g), aliceToken, "")
	ctx := context.Background()
	args := map[string]any{"path": "/tmp/x", "data": "hi"}

	res, err := callRaw(ctx, cs, "fs__write", args, nil, "")
	st := askedApproval(t, res, err, "fs__write")
	if n := calls.Load(); n != 0 {
		t.Fatalf("the server was called %d times before approval", n)
	}
	// Declined: denied, nothing sent.
	res, err = callRaw(ctx, cs, "fs__write", args, decline, st)
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "declined") {
		t.Fatalf("declined = %q, %v", resultText(res), err)
	}
	// No answer in the retry: asked again, under a new state.
	res, err = callRaw(ctx, cs, "fs__write", args, nil, "")
	st = askedApproval(t, res, err, "fs__write")
	res, err = callRaw(ctx, cs, "fs__write", args, mcp.InputResponseMap{"other": &mcp.ElicitResult{Action: "accept"}}, st)
	st2 := askedApproval(t, res, err, "fs__write")
	if st2 == st {
		t.Error("asked again under the same state")
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the server was called %d times before approval", n)
	}
	// Accepted: run once; the same state again answers with the same
	// result, the server not called again.
	res, err = callRaw(ctx, cs, "fs__write", args, accept, st2)
	if err != nil || res.IsError || !strings.HasSuffix(resultText(res), "(1)") {
		t.Fatalf("accepted = %q, %v", resultText(res), err)
	}
	first := resultText(res)
	for range 2 {
		res, err = callRaw(ctx, cs, "fs__write", args, accept, st2)
		if err != nil || resultText(res) != first {
			t.Errorf("the same state again = %q, %v; want the recorded %q", resultText(res), err, first)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the server was called %d times, want 1", n)
	}
}

// TestStatelessApprovalConcurrent: retries with one state at once run
// the call once.
func TestStatelessApprovalConcurrent(t *testing.T) {
	var calls atomic.Int64
	g := newGateway(t, []conduit.Server{fsUpstream(t, &calls).server("fs")}, &gateway.Options{
		Hub: &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("fs/write"))},
	})
	cs, _ := newClient(t, serveGateway(t, g), aliceToken, "")
	ctx := context.Background()
	res, err := callRaw(ctx, cs, "fs__write", map[string]any{}, nil, "")
	st := askedApproval(t, res, err, "fs__write")
	var wg sync.WaitGroup
	answers := make([]string, 8)
	for i := range answers {
		wg.Go(func() {
			res, err := callRaw(ctx, cs, "fs__write", map[string]any{}, accept, st)
			if err != nil {
				answers[i] = err.Error()
				return
			}
			answers[i] = resultText(res)
		})
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("the server was called %d times, want 1", n)
	}
	for _, a := range answers {
		if a != "wrote {} (1)" && !strings.Contains(a, "not run again") {
			t.Errorf("answer %q: want the call's result or that it is not run again", a)
		}
	}
}

// TestStatelessStateRefused: a requestState altered, issued for another
// tool, other arguments or another principal, sealed under another key,
// or expired, is refused (invalid params) and nothing is sent.
func TestStatelessStateRefused(t *testing.T) {
	var calls atomic.Int64
	up := fsUpstream(t, &calls)
	policy := conduit.NewPolicy(conduit.Ask("fs/*"))
	g := newGateway(t, []conduit.Server{up.server("fs")}, &gateway.Options{
		Hub: &conduit.Options{Policy: policy}, StateKeys: [][]byte{stateKey}, ApprovalTimeout: time.Second,
	})
	url := serveGateway(t, g)
	alice, _ := newClient(t, url, aliceToken, "")
	bob, _ := newClient(t, url, bobToken, "")
	other := newGateway(t, []conduit.Server{up.server("fs")}, &gateway.Options{
		Hub: &conduit.Options{Policy: policy}, StateKeys: [][]byte{[]byte("another key, 32 bytes long or more")},
	})
	otherClient, _ := newClient(t, serveGateway(t, other), aliceToken, "")
	ctx := context.Background()
	args := map[string]any{"path": "/a"}
	res, err := callRaw(ctx, alice, "fs__write", args, nil, "")
	st := askedApproval(t, res, err, "fs__write")
	res, err = callRaw(ctx, otherClient, "fs__write", args, nil, "")
	otherSt := askedApproval(t, res, err, "fs__write")

	for _, tc := range []struct {
		name  string
		cs    *mcp.ClientSession
		tool  string
		args  any
		state string
		want  string
	}{
		{"altered", alice, "fs__write", args, st[:len(st)-3] + "AAA", "it was altered"},
		{"tampered", alice, "fs__write", args, st + "-TAMPERED", "not a requestState this gateway issues"},
		{"truncated", alice, "fs__write", args, st[:len(st)-3], "it is truncated"},
		{"another tool", alice, "fs__read", args, st, "issued for another request"},
		{"other arguments", alice, "fs__write", map[string]any{"path": "/etc/passwd"}, st, "issued for another request"},
		{"another principal", bob, "fs__write", args, st, "issued for another request"},
		{"another key", alice, "fs__write", args, otherSt, "not issued by this gateway"},
	} {
		_, err := callRaw(ctx, tc.cs, tc.tool, tc.args, accept, tc.state)
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, tc.want) {
			t.Errorf("%s: %v, want invalid params saying %q", tc.name, err, tc.want)
		}
	}
	time.Sleep(2100 * time.Millisecond) // seals expire at a whole second
	_, err = callRaw(ctx, alice, "fs__write", args, accept, st)
	if err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired state: %v, want it refused as expired", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the server was called %d times, want none", n)
	}
}

// TestStatelessReplicas: two gateways that share StateKeys and a store
// are replicas: a state one issued is honoured by the other, once.
func TestStatelessReplicas(t *testing.T) {
	var calls atomic.Int64
	up := fsUpstream(t, &calls)
	shared := store.NewMemory()
	t.Cleanup(func() { shared.Close() })
	var urls []string
	for range 2 {
		g := newGateway(t, []conduit.Server{up.server("fs")}, &gateway.Options{
			Hub: &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("fs/write")), Store: shared}, StateKeys: [][]byte{stateKey},
		})
		urls = append(urls, serveGateway(t, g))
	}
	a, _ := newClient(t, urls[0], aliceToken, "")
	b, _ := newClient(t, urls[1], aliceToken, "")
	ctx := context.Background()
	res, err := callRaw(ctx, a, "fs__write", map[string]any{}, nil, "")
	st := askedApproval(t, res, err, "fs__write")
	res, err = callRaw(ctx, b, "fs__write", map[string]any{}, accept, st)
	if err != nil || resultText(res) != "wrote {} (1)" {
		t.Fatalf("retry at the other replica = %q, %v", resultText(res), err)
	}
	res, err = callRaw(ctx, a, "fs__write", map[string]any{}, accept, st)
	if err != nil || resultText(res) != "wrote {} (1)" {
		t.Fatalf("the same state at the first replica = %q, %v; want the recorded answer", resultText(res), err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the server was called %d times, want 1", n)
	}
}

// TestStatelessServerInput: what a server asks during a call reaches a
// client of 2026-07-28 as an input-required result, and the retry's
// answers reach the server: a server of 2026-07-28 with its own
// requestState carried inside the gateway's, one of 2025-11-25 (a
// request during the call) while the call waits. A call approved in an
// earlier round is not asked again.
func TestStatelessServerInput(t *testing.T) {
	var modernCalls, legacyCalls atomic.Int64
	modern := askingServer(t, "modern", nil, &modernCalls)
	legacy := askingServer(t, "legacy", []string{"2025-11-25"}, &legacyCalls)
	g := newGateway(t, []conduit.Server{modern.server("modern"), legacy.server("legacy")}, &gateway.Options{
		Hub: &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("modern/sample"), conduit.Allow("*"))},
	})
	cs, _ := newClient(t, serveGateway(t, g), aliceToken, "")
	ctx := context.Background()
	answers := map[string]mcp.InputResponse{
		"roots":  &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///alice"}}},
		"elicit": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "alice"}},
		"sample": &mcp.CreateMessageWithToolsResult{Model: "alice-model", Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "re: hi"}}},
	}
	want := map[string]string{"roots": "roots file:///alice", "elicit": "accept alice", "sample": "sampled alice-model: re: hi"}
	for _, server := range []string{"modern", "legacy"} {
		for _, tool := range []string{"roots", "elicit", "sample"} {
			name := server + "__" + tool
			res, err := callRaw(ctx, cs, name, map[string]any{}, nil, "")
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var state string
			if name == "modern__sample" {
				state = askedApproval(t, res, err, name)
				res, err = callRaw(ctx, cs, name, map[string]any{}, accept, state)
				if err != nil {
					t.Fatal(err)
				}
			}
			if !res.NeedsInput() || len(res.InputRequests) != 1 {
				t.Fatalf("%s = %+v, want one input request", name, res)
			}
			var id string
			for id = range res.InputRequests {
			}
			if server == "modern" && id != map[string]string{"roots": "r", "elicit": "e", "sample": "s"}[tool] {
				t.Errorf("%s asks under the id %q, not the server's own", name, id)
			}
			res, err = callRaw(ctx, cs, name, map[string]any{}, mcp.InputResponseMap{id: answers[tool]}, res.RequestState)
			if err != nil || res.NeedsInput() || resultText(res) != want[tool] {
				t.Errorf("%s answered = %q (needs input %v), %v; want %q", name, resultText(res), res != nil && res.NeedsInput(), err, want[tool])
			}
		}
	}
}

// legacyAsker is an upstream on protocol 2025-11-25 whose tool ask
// elicits of the client in the call. asked gets the elicitation's error.
func legacyAsker(t *testing.T) (up *upstream, asked chan error) {
	asked = make(chan error, 1)
	up = newUpstream(t, "legacy")
	up.Server = mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	up.tool("ask", "Ask.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "sure?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
		asked <- err
		return text("asked"), err
	})
	return up, asked
}

// TestStatelessWait: a call that waits for its client's answer to a
// server's request waits in the replica that runs it, ApprovalTimeout at
// most: then the server's request fails, and a retry is refused (its state
// expires with the wait). A retry that reaches another replica (same keys
// and store) is told the call waits elsewhere.
func TestStatelessWait(t *testing.T) {
	up, asked := legacyAsker(t)
	shared := store.NewMemory()
	t.Cleanup(func() { shared.Close() })
	opts := &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll(), Store: shared}, ApprovalTimeout: 1500 * time.Millisecond,
		StateKeys: [][]byte{stateKey}}
	g := newGateway(t, []conduit.Server{up.server("legacy")}, opts)
	replica := newGateway(t, []conduit.Server{up.server("legacy")}, opts)
	cs, _ := newClient(t, serveGateway(t, g), aliceToken, "")
	other, _ := newClient(t, serveGateway(t, replica), aliceToken, "")
	ctx := context.Background()
	res, err := callRaw(ctx, cs, "legacy__ask", map[string]any{}, nil, "")
	if err != nil || !res.NeedsInput() || res.InputRequests["conduit_input_1"] == nil {
		t.Fatalf("ask = %+v, %v", res, err)
	}
	answer := mcp.InputResponseMap{"conduit_input_1": &mcp.ElicitResult{Action: "accept"}}
	res, err = callRaw(ctx, other, "legacy__ask", map[string]any{}, answer, res.RequestState)
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "another replica") {
		t.Errorf("retry at another replica = %+v, %v; want that the call waits elsewhere", res, err)
	}
	select {
	case err := <-asked:
		if err == nil || !strings.Contains(err.Error(), "no answer") {
			t.Errorf("the server's request ended with %v, want that the client gave no answer", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's request still waits")
	}
	// Within the wait, the retry at the same replica gets the answer to it.
	res, err = callRaw(ctx, cs, "legacy__ask", map[string]any{}, nil, "")
	if err != nil || !res.NeedsInput() {
		t.Fatalf("ask = %+v, %v", res, err)
	}
	res, err = callRaw(ctx, cs, "legacy__ask", map[string]any{}, answer, res.RequestState)
	if err != nil || res.IsError || resultText(res) != "asked" {
		t.Errorf("answered = %+v, %v", res, err)
	}
	if err := <-asked; err != nil {
		t.Errorf("the server's request: %v", err)
	}
}

// TestStatelessListsAndTaint: lists carry cache hints, private when the
// policy has conditions; the taint of a client without a session is its
// principal's: after a call of web's tool, the principal's next listing
// (from any client) leaves out what "tainted" rules deny.
func TestStatelessListsAndTaint(t *testing.T) {
	web := newUpstream(t, "web").tool("fetch", "Fetch.", echo("page "))
	fs := newUpstream(t, "fs").tool("write", "Write.", echo("wrote "))
	for _, tc := range []struct {
		policy *conduit.Policy
		scope  string
	}{
		{conduit.AllowAll(), "public"},
		{conduit.NewPolicy(conduit.Deny("fs/*").When(conduit.Tainted("web")), conduit.Allow("*")), "private"},
	} {
		g := newGateway(t, []conduit.Server{web.server("web"), fs.server("fs")}, &gateway.Options{
			Hub: &conduit.Options{Policy: tc.policy}, ListTTL: 42 * time.Second,
		})
		url := serveGateway(t, g)
		cs, _ := newClient(t, url, aliceToken, "")
		ctx := context.Background()
		lr, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if lr.TTLMs != 42000 || lr.CacheScope != tc.scope {
			t.Errorf("tools/list hint = %d ms, %q; want 42000, %q", lr.TTLMs, lr.CacheScope, tc.scope)
		}
		if tc.scope == "public" {
			continue
		}
		callTool(t, cs, "web__fetch", map[string]any{})
		for _, token := range []string{aliceToken, bobToken} {
			c, _ := newClient(t, url, token, "")
			want := map[string]string{aliceToken: "[web__fetch]", bobToken: "[fs__write web__fetch]"}[token]
			if got := fmt.Sprint(toolNames(t, c)); got != want {
				t.Errorf("%s lists %s after alice's fetch, want %s", token[:5], got, want)
			}
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__write", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("alice's write after a fetch: %v, want it unknown (her tools no longer have it)", err)
		}
	}
}

// TestStatelessPerPrincipalPrivate: a server whose identity is per
// principal makes lists and reads private to the asker (cacheScope), under
// a policy without conditions too: what they hold is the principal's own.
func TestStatelessPerPrincipalPrivate(t *testing.T) {
	ids := httptest.NewServer(identitytest.NewHTTP(map[string]string{"gh-alice-0123456789": "alice"}))
	t.Cleanup(ids.Close)
	gh := conduit.Server{ID: "gh", URL: ids.URL, Identity: conduit.IdentityPrincipal, Principals: map[string]conduit.Credentials{
		"alice": {Headers: map[string]string{"Authorization": "Bearer gh-alice-0123456789"}},
	}}
	g := newGateway(t, []conduit.Server{gh}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}, ListTTL: -1})
	cs, _ := newClient(t, serveGateway(t, g), aliceToken, "")
	ctx := context.Background()
	lr, err := cs.ListTools(ctx, nil)
	if err != nil || lr.CacheScope != "private" {
		t.Fatalf("tools/list: %v, scope %q", err, lr.GetCacheScope())
	}
	uri := resultText(callTool(t, cs, "gh__note", map[string]any{"text": "alice's"}))
	eventually(t, "alice's note listed", func() bool {
		res, err := cs.ListResources(ctx, nil)
		return err == nil && res.CacheScope == "private" && len(res.Resources) == 1 && res.Resources[0].URI == uri
	})
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || rr.Contents[0].Text != "alice's" || rr.CacheScope != "private" {
		t.Errorf("read: %v, %+v", err, rr)
	}
}

// TestStatelessHeaders: the standard headers of a request of 2026-07-28
// are checked against its body (Mcp-Method, Mcp-Name, and the Mcp-Param-
// headers of a tool's x-mcp-header arguments, as the gateway lists the
// tool): a mismatch is answered 400 and nothing is sent.
func TestStatelessHeaders(t *testing.T) {
	var calls atomic.Int64
	up := newUpstream(t, "fs")
	up.AddTool(&mcp.Tool{Name: "write", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.Add(1)
			return text("wrote"), nil
		})
	g := newGateway(t, []conduit.Server{up.server("fs")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	url := serveGateway(t, g)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fs__write","arguments":{"region":"eu"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
		want    string
	}{
		{"matching", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "fs__write", "Mcp-Param-Region": "eu"}, 200, "wrote"},
		{"method", map[string]string{"Mcp-Method": "tools/list", "Mcp-Name": "fs__write", "Mcp-Param-Region": "eu"}, 400, "Mcp-Method"},
		{"no name", map[string]string{"Mcp-Method": "tools/call", "Mcp-Param-Region": "eu"}, 400, "Mcp-Name"},
		{"name", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "fs__read", "Mcp-Param-Region": "eu"}, 400, "Mcp-Name"},
		{"param", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "fs__write", "Mcp-Param-Region": "us"}, 400, "Mcp-Param-Region"},
		{"no param", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "fs__write"}, 400, "Mcp-Param-Region"},
		// The _meta says 2026-07-28 and no header does: the request is of
		// the new protocol, and the header is missing.
		{"no version", map[string]string{"Mcp-Protocol-Version": "", "Mcp-Method": "tools/call", "Mcp-Name": "fs__write", "Mcp-Param-Region": "eu"}, 400, "Mcp-Protocol-Version header is required"},
	} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		for k, v := range tc.headers {
			if v == "" {
				req.Header.Del(k)
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(data), tc.want) || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: %d %s (session %q), want %d with %q", tc.name, resp.StatusCode, data, resp.Header.Get("Mcp-Session-Id"), tc.status, tc.want)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the server was called %d times, want once", n)
	}
}

// TestStatelessStoreDown: with the store unavailable, a retry whose
// taint cannot be read, or whose single use cannot be checked, runs
// nothing, saying the store is unavailable, and its state stays good for
// when the store is back.
func TestStatelessStoreDown(t *testing.T) {
	var calls atomic.Int64
	up := fsUpstream(t, &calls)
	fs := newFailingStore(t)
	g := newGateway(t, []conduit.Server{up.server("fs")}, &gateway.Options{
		Hub: &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("fs/write")), Store: fs},
	})
	url := serveGateway(t, g)
	cs, _ := newClient(t, url, aliceToken, "")
	ctx := context.Background()
	res, err := callRaw(ctx, cs, "fs__write", map[string]any{}, nil, "")
	st := askedApproval(t, res, err, "fs__write")
	fs.claims.Store(true)
	res, err = callRaw(ctx, cs, "fs__write", map[string]any{}, accept, st)
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "store is unavailable") {
		t.Errorf("retry with the claims down = %+v, %v", res, err)
	}
	fs.claims.Store(false)
	fs.reads.Store(true)
	res, err = callRaw(ctx, cs, "fs__write", map[string]any{}, accept, st)
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "shared store is unavailable") {
		t.Errorf("retry with the sets down = %+v, %v", res, err)
	}
	// The state was not used up: once the store is back, it runs.
	fs.reads.Store(false)
	res, err = callRaw(ctx, cs, "fs__write", map[string]any{}, accept, st)
	if err != nil || res.IsError {
		t.Errorf("retry once the store is back = %+v, %v", res, err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the server was called %d times, want once", n)
	}
}

// TestStatelessCloseWhileWaiting: Close ends a call that waits for its
// client's answer: its server's request fails, and Close returns.
func TestStatelessCloseWhileWaiting(t *testing.T) {
	up, asked := legacyAsker(t)
	g, err := gateway.New(context.Background(), []conduit.Server{up.server("legacy")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := newClient(t, serveGateway(t, g), aliceToken, "")
	res, err := callRaw(context.Background(), cs, "legacy__ask", map[string]any{}, nil, "")
	if err != nil || !res.NeedsInput() {
		t.Fatalf("ask = %+v, %v", res, err)
	}
	closed := make(chan struct{})
	go func() {
		g.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return while a call waited")
	}
	select {
	case err := <-asked:
		if err == nil {
			t.Error("the server's request succeeded after Close")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's request still waits after Close")
	}
}
