package gateway_test

// Slow and refused clients hold nothing: a refusal is answered at once and
// its connection closed, a stalled body ends its connection, and an event
// stream outlives the body's bound.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowPost opens a connection to the server at url and sends the headers
// of a POST to /mcp that announces a body of length bytes, with token
// (when not "") and host, then one byte of the body, and no more.
func slowPost(t *testing.T, url, token, host string, length int) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if host == "" {
		host = addr
	}
	req := "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	req += "Content-Length: " + strconv.Itoa(length) + "\r\n\r\n{"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c
}

// closedWithin reads c until the server closes it, within d, and returns
// the response read meanwhile (nil when none came).
func closedWithin(t *testing.T, c net.Conn, d time.Duration) (*http.Response, error) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	br := bufio.NewReader(c)
	resp, rerr := http.ReadResponse(br, nil)
	if rerr == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return resp, errors.New("the connection is still open")
	}
	return resp, nil
}

// TestRefusalClosesAtOnce: a request the gateway refuses (no token, a
// Host it does not serve, a body over the bound) is answered at once,
// though its body has not come, and its connection is closed: a slow
// client holds no connection.
func TestRefusalClosesAtOnce(t *testing.T) {
	url, received := rawGateway(t, &gateway.HTTPOptions{Tokens: map[string]string{aliceToken: "alice"}, MaxBodyBytes: 200000})
	for _, tc := range []struct {
		name, token, host string
		length, want      int
	}{
		{"no token", "", "", 100000, http.StatusUnauthorized},
		{"a wrong token", "not-a-token-of-anyone-at-all", "", 100000, http.StatusUnauthorized},
		{"another host", aliceToken, "evil.example", 100000, http.StatusForbidden},
		{"a body over the bound", aliceToken, "", 300000, http.StatusRequestEntityTooLarge},
	} {
		c := slowPost(t, url, tc.token, tc.host, tc.length)
		resp, err := closedWithin(t, c, 5*time.Second)
		switch {
		case resp == nil:
			t.Errorf("%s: no answer within 5s", tc.name)
		case resp.StatusCode != tc.want:
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		case err != nil:
			t.Errorf("%s: answered %d, but %v", tc.name, resp.StatusCode, err)
		}
	}
	if n := received.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// TestStalledBodyEnds: an authenticated request whose body stalls ends
// its connection after BodyTimeout, nothing sent to a server; a body that
// comes in time is served.
func TestStalledBodyEnds(t *testing.T) {
	url, received := rawGateway(t, &gateway.HTTPOptions{Tokens: map[string]string{aliceToken: "alice"}, BodyTimeout: 300 * time.Millisecond})
	c := slowPost(t, url, aliceToken, "", 1000)
	if _, err := closedWithin(t, c, 10*time.Second); err != nil {
		t.Errorf("a stalled body: %v after 10s (BodyTimeout 300ms)", err)
	}
	id := open(t, url, aliceToken)
	code, _, body := post(t, url, rawReq{body: callEcho, token: aliceToken, session: id})
	if code != http.StatusOK || received.Load() != 1 {
		t.Errorf("a call in time: %d %s, %d requests reached the server", code, body, received.Load())
	}
}

// TestEventStreamOutlivesBodyTimeout: the bound on reading a body is
// lifted once it is read, so a call whose answer comes as server-sent
// events long after BodyTimeout is answered; so is a client's stream of
// the session's own events (a GET, which has no body).
func TestEventStreamOutlivesBodyTimeout(t *testing.T) {
	up := newUpstream(t, "up")
	up.tool("slow", "Answers after a second, with progress meanwhile.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := range 5 {
			if tok := req.Params.GetProgressToken(); tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 5})
			}
			select {
			case <-time.After(250 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return text("done"), nil
	})
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	h, err := g.Handler(&gateway.HTTPOptions{Tokens: map[string]string{aliceToken: "alice"}, BodyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, version := range protocols {
		// No retry: a stream cut and resumed must show.
		tr := &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{aliceToken}}, MaxRetries: -1}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{}, Meta: mcp.Meta{"progressToken": "p"}})
		cancel()
		if err != nil || res.IsError || resultText(res) != "done" {
			t.Errorf("%s: a call of 1.25s with BodyTimeout 100ms: %v %+v", version, err, res)
		}
	}
}

// TestListenAndServeTimeouts: ListenAndServe closes a keep-alive
// connection idle for IdleTimeout, and one whose headers have not come
// within HeaderTimeout.
func TestListenAndServeTimeouts(t *testing.T) {
	up := newUpstream(t, "up")
	up.tool("echo", "Echo.", echo(""))
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- g.ListenAndServe(ctx, "127.0.0.1:0", &gateway.HTTPOptions{
			Tokens:      map[string]string{aliceToken: "alice"},
			IdleTimeout: 300 * time.Millisecond, HeaderTimeout: 300 * time.Millisecond,
		}, func(a net.Addr) { addr <- a })
	}()
	t.Cleanup(func() { cancel(); <-served })
	a := (<-addr).String()

	// Idle: a request answered on a keep-alive connection, then nothing.
	c, err := net.Dial("tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET "+gateway.HealthPath+" HTTP/1.1\r\nHost: "+a+"\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("healthz on a keep-alive connection: %v %+v", err, resp)
	}
	io.Copy(io.Discard, resp.Body)
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("an idle keep-alive connection after IdleTimeout 300ms: %v, want closed (EOF) within 10s", err)
	}

	// Headers that never end.
	h, err := net.Dial("tcp", a)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	io.WriteString(h, "POST /mcp HTTP/1.1\r\nHost: "+a+"\r\n")
	if _, err := closedWithin(t, h, 10*time.Second); err != nil {
		t.Errorf("headers not done after HeaderTimeout 300ms: %v", err)
	}
}
