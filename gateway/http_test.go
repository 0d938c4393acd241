package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	aliceToken = "alice-token-0123456789abcdef"
	bobToken   = "bob-token-0123456789abcdef"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawGateway serves a gateway over HTTP whose one server counts the calls
// it receives.
func rawGateway(t *testing.T, o *gateway.HTTPOptions) (url string, received *atomic.Int64) {
	t.Helper()
	up := newUpstream(t, "up")
	up.tool("echo", "Echo.", echo(""))
	received = &atomic.Int64{}
	up.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				received.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	h, err := g.Handler(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, received
}

type rawReq struct {
	body    string
	token   string
	host    string
	origin  string
	session string
	chunked bool
}

// post sends a raw MCP POST and returns the status, the session id and
// the body.
func post(t *testing.T, url string, r rawReq) (int, string, string) {
	t.Helper()
	var body io.Reader = strings.NewReader(r.body)
	if r.chunked {
		// No Content-Length: the limit must hold while the body is read.
		body = io.MultiReader(strings.NewReader(r.body))
	}
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.host != "" {
		req.Host = r.host
	}
	if r.origin != "" {
		req.Header.Set("Origin", r.origin)
	}
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(data)
}

// open initializes a session with token and returns its id.
func open(t *testing.T, url, token string) string {
	t.Helper()
	code, id, body := post(t, url, rawReq{body: initialize, token: token})
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q %s", code, id, body)
	}
	code, _, body = post(t, url, rawReq{body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, token: token, session: id})
	if code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, body)
	}
	return id
}

const callEcho = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up__echo","arguments":{"x":1}}}`

// TestHTTPAuth: every request needs a known bearer token; without one it
// is answered 401 and nothing reaches a server; a session stays with the
// principal that opened it.
func TestHTTPAuth(t *testing.T) {
	url, received := rawGateway(t, &gateway.HTTPOptions{Tokens: map[string]string{aliceToken: "alice", bobToken: "bob"}})
	for name, tok := range map[string]string{"no token": "", "wrong token": "alice-token-0123456789abcdeX", "short": "x"} {
		code, _, _ := post(t, url, rawReq{body: initialize, token: tok})
		if code != http.StatusUnauthorized {
			t.Errorf("initialize with %s: %d, want 401", name, code)
		}
	}
	id := open(t, url, aliceToken)
	code, _, body := post(t, url, rawReq{body: callEcho, session: id})
	if code != http.StatusUnauthorized || received.Load() != 0 {
		t.Errorf("a call without a token: %d %s, %d requests reached the server", code, body, received.Load())
	}
	code, _, _ = post(t, url, rawReq{body: callEcho, session: id, token: "not-a-token-of-anyone-at-all"})
	if code != http.StatusUnauthorized || received.Load() != 0 {
		t.Errorf("a call with a wrong token: %d, %d requests reached the server", code, received.Load())
	}
	code, _, _ = post(t, url, rawReq{body: callEcho, session: id, token: bobToken})
	if code != http.StatusForbidden || received.Load() != 0 {
		t.Errorf("bob's token on alice's session: %d, %d requests reached the server", code, received.Load())
	}
	code, _, body = post(t, url, rawReq{body: callEcho, session: id, token: aliceToken})
	if code != http.StatusOK || !strings.Contains(body, `{\"x\":1}`) || received.Load() != 1 {
		t.Errorf("alice's call: %d %s, %d requests reached the server", code, body, received.Load())
	}
	// The 401 says how to authenticate, and nothing of a token.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
	req.Header.Set("Authorization", "Bearer "+strings.Repeat("z", 20))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("WWW-Authenticate") == "" || strings.Contains(string(data), "zzzz") {
		t.Errorf("401: WWW-Authenticate %q, body %q", resp.Header.Get("WWW-Authenticate"), data)
	}
}

// TestHTTPRebinding: a Host or Origin that names another host is refused
// before authentication, so a page that rebinds its name to the loopback
// address reaches nothing.
func TestHTTPRebinding(t *testing.T) {
	url, received := rawGateway(t, &gateway.HTTPOptions{Tokens: map[string]string{aliceToken: "alice"}, Hosts: []string{"mcp.internal"}})
	for _, tc := range []struct {
		host, origin string
		code         int
	}{
		{"evil.example.com", "", http.StatusForbidden},
		{"evil.example.com:80", "http://evil.example.com", http.StatusForbidden},
		{"", "http://evil.example.com", http.StatusForbidden},
		{"", "null", http.StatusForbidden},
		{"localhost:1234", "", http.StatusOK},
		{"", "http://localhost:5173", http.StatusOK},
		{"", "http://[::1]:5173", http.StatusOK},
		{"mcp.internal", "https://mcp.internal", http.StatusOK},
		{"mcp.internal.evil.com", "", http.StatusForbidden},
	} {
		code, _, body := post(t, url, rawReq{body: initialize, token: aliceToken, host: tc.host, origin: tc.origin})
		if code != tc.code {
			t.Errorf("Host %q Origin %q: %d %s, want %d", tc.host, tc.origin, code, body, tc.code)
		}
	}
	code, _, _ := post(t, url, rawReq{body: initialize, host: "evil.example.com"})
	if code != http.StatusForbidden {
		t.Errorf("rebinding without a token: %d, want 403 before the token is looked at", code)
	}
	if received.Load() != 0 {
		t.Errorf("%d requests reached the server", received.Load())
	}
}

// TestHTTPBodyLimit: a body over the limit is refused with 413, whether
// its length is declared or not.
func TestHTTPBodyLimit(t *testing.T) {
	url, received := rawGateway(t, &gateway.HTTPOptions{Tokens: map[string]string{aliceToken: "alice"}, MaxBodyBytes: 1024})
	id := open(t, url, aliceToken)
	big := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"up__echo","arguments":{"x":"` + strings.Repeat("a", 2048) + `"}}}`
	for _, chunked := range []bool{false, true} {
		code, _, body := post(t, url, rawReq{body: big, token: aliceToken, session: id, chunked: chunked})
		if code != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked=%v: %d %s, want 413", chunked, code, body)
		}
	}
	if received.Load() != 0 {
		t.Errorf("%d requests reached the server", received.Load())
	}
	code, _, _ := post(t, url, rawReq{body: callEcho, token: aliceToken, session: id})
	if code != http.StatusOK {
		t.Errorf("a small call after: %d", code)
	}
}

// TestHTTPNoAuth: without authentication, only on loopback.
func TestHTTPNoAuth(t *testing.T) {
	url, _ := rawGateway(t, &gateway.HTTPOptions{NoAuth: true})
	open(t, url, "")

	up := newUpstream(t, "up")
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	h, err := g.Handler(&gateway.HTTPOptions{NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(initialize))
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 80}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("no-auth request on a non-loopback address: %d, want 403", rec.Code)
	}
	err = g.ListenAndServe(context.Background(), "0.0.0.0:0", &gateway.HTTPOptions{NoAuth: true}, nil)
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("ListenAndServe without authentication on 0.0.0.0: %v", err)
	}
	for _, o := range []*gateway.HTTPOptions{
		nil,
		{Tokens: map[string]string{"tok-xyz": "p"}},
		{NoAuth: true, Tokens: map[string]string{aliceToken: "alice"}},
		{Tokens: map[string]string{aliceToken: "alice"}, Origins: []string{"example.com"}},
	} {
		_, err := g.Handler(o)
		if err == nil {
			t.Errorf("Handler(%+v) accepted", o)
			continue
		}
		if o != nil {
			for tok := range o.Tokens {
				if strings.Contains(err.Error(), tok) {
					t.Errorf("the error shows a token: %v", err)
				}
			}
		}
	}
}
