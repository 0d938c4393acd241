package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/conduitmcp/conduit/bench/internal/samples"
	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// newMCPGo connects mark3labs/mcp-go's Streamable HTTP client to url. It
// asks for protocol 2025-11-25, the version the Go SDK's client negotiates
// with the same stateful server (the SDK's Streamable HTTP handler does not
// serve mcp-go's default, 2026-07-28, to a session), so both speak the same
// protocol.
func newMCPGo(tb testing.TB, ctx context.Context, url string) *mcpgoclient.Client {
	tb.Helper()
	c, err := mcpgoclient.NewStreamableHttpClient(url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	if err := c.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ProtocolVersion: mcpgo.ProtocolVersion20251125,
		ClientInfo:      mcpgo.Implementation{Name: "mcp-go-bench", Version: "1.0.0"},
	}}); err != nil {
		tb.Fatal(err)
	}
	return c
}

func mcpgoCall(ctx context.Context, c *mcpgoclient.Client) error {
	res, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: fixture.Tool, Arguments: fixture.Args()}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("unexpected result %+v", res)
	}
	return nil
}

// BenchmarkMCPGo compares a raw call through mark3labs/mcp-go's client with
// conduit's governed call (Hub.CallTool), both over loopback Streamable
// HTTP to the same Go SDK server. x-p50 is mcp-go's time over conduit's.
func BenchmarkMCPGo(b *testing.B) {
	e := newEnv(b, loopbackHTTP)
	c := newMCPGo(b, e.ctx, e.url)
	call := must(b, func() error { return mcpgoCall(e.ctx, c) })
	call()
	b.Run("raw", func(b *testing.B) {
		var d samples.Durations
		b.ReportAllocs()
		for b.Loop() {
			d.Time(call)
		}
		d.Report(b, "")
	})
	b.Run("ratio", func(b *testing.B) { samples.Pair(b, must(b, e.hubCall), call) })
}
