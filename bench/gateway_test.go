package bench

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/conduitmcp/conduit/bench/internal/samples"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const gatewayToken = "bench-token-0123456789abcdef"

// gatewayEnv is one server over loopback Streamable HTTP, reached by an
// SDK client over loopback Streamable HTTP in four ways: directly (one
// hop); through a forwarder written by hand on the Go SDK (an mcp.Server
// whose tools call the server's through one client session: the same two
// hops as conduit serve, and nothing else); through conduit serve in
// transparent mode with the fixture's policy and no authentication; and
// the same with a bearer token.
type gatewayEnv struct {
	ctx                         context.Context
	direct, forward, gw, gwAuth *mcp.ClientSession
}

func newGatewayEnv(tb testing.TB) *gatewayEnv {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	srv, err := fixture.CallServer()
	if err != nil {
		tb.Fatal(err)
	}
	up := fixture.HTTP(srv)
	tb.Cleanup(up.Close)
	e := &gatewayEnv{ctx: ctx}

	connect := func(url string, hc *http.Client, version string) *mcp.ClientSession {
		tb.Helper()
		s, err := fixture.RawClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		// The client lists the tools, as a client that offers them to a
		// model has.
		if _, err := s.ListTools(ctx, nil); err != nil {
			tb.Fatal(err)
		}
		return s
	}
	serve := func(h http.Handler) string {
		hs := httptest.NewServer(h)
		tb.Cleanup(hs.Close)
		return hs.URL
	}
	// The client's hop to the forwarder and to conduit serve is of
	// 2025-11-25, a session as the (stateful) forwarder offers: conduit
	// serve would serve a client of 2026-07-28 without one, which the
	// forwarder does not. The hops to the server are as their clients
	// negotiate.
	const sessionVersion = "2025-11-25"
	e.direct = connect(up.URL, nil, "")

	// The forwarder.
	upstream := connect(up.URL, nil, "")
	fwd := mcp.NewServer(&mcp.Implementation{Name: "forwarder", Version: "1.0.0"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	tools, err := upstream.ListTools(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range tools.Tools {
		fwd.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return upstream.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	e.forward = connect(serve(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return fwd },
		&mcp.StreamableHTTPOptions{Logger: slog.New(slog.DiscardHandler)})), nil, sessionVersion)

	// conduit serve.
	p, _, _ := fixture.Governance()
	g, err := gateway.New(ctx, []conduit.Server{{ID: fixture.ServerID, URL: up.URL}}, &gateway.Options{
		Hub:         &conduit.Options{Policy: p, Logger: slog.New(slog.DiscardHandler)},
		Transparent: true,
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { g.Close() })
	h, err := g.Handler(&gateway.HTTPOptions{NoAuth: true})
	if err != nil {
		tb.Fatal(err)
	}
	e.gw = connect(serve(h), nil, sessionVersion)
	ha, err := g.Handler(&gateway.HTTPOptions{Tokens: map[string]string{gatewayToken: "bench"}})
	if err != nil {
		tb.Fatal(err)
	}
	e.gwAuth = connect(serve(ha), &http.Client{Transport: bearer{gatewayToken}}, sessionVersion)
	return e
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func (e *gatewayEnv) call(s *mcp.ClientSession) func() error {
	return func() error { return fixture.RawCall(e.ctx, s) }
}

// BenchmarkGateway runs a call through conduit serve and a call the other
// way alternately in one loop (samples.Pair) and reports the ratio of
// their p50s (x-p50): against the hand-written forwarder (the target),
// against a direct call (the cost of the second hop, reported), and, with
// a bearer token, against the forwarder again.
func BenchmarkGateway(b *testing.B) {
	e := newGatewayEnv(b)
	b.Run("vs-forwarder", func(b *testing.B) { samples.Pair(b, must(b, e.call(e.forward)), must(b, e.call(e.gw))) })
	b.Run("vs-direct", func(b *testing.B) { samples.Pair(b, must(b, e.call(e.direct)), must(b, e.call(e.gw))) })
	b.Run("auth-vs-forwarder", func(b *testing.B) { samples.Pair(b, must(b, e.call(e.forward)), must(b, e.call(e.gwAuth))) })
	b.Run("forwarder-vs-direct", func(b *testing.B) { samples.Pair(b, must(b, e.call(e.direct)), must(b, e.call(e.forward))) })
}

// TestGatewayFixture checks that each way of BenchmarkGateway answers.
func TestGatewayFixture(t *testing.T) {
	e := newGatewayEnv(t)
	for name, s := range map[string]*mcp.ClientSession{"direct": e.direct, "forwarder": e.forward, "gateway": e.gw, "gateway with a token": e.gwAuth} {
		if err := e.call(s)(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
