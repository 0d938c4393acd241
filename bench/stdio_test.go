package bench

import (
	"context"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/conduitmcp/conduit/bench/internal/samples"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionPerCall is the design of a popular Python adapter, which opens a
// new stdio session for every tool call: spawn the server, initialize,
// call, close (stdin closed, the server exits, the process is reaped).
func sessionPerCall(ctx context.Context, exe string) error {
	sess, err := fixture.RawClient().Connect(ctx, &mcp.CommandTransport{Command: stdioCmd(exe), TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		return err
	}
	callErr := fixture.RawCall(ctx, sess)
	closeErr := sess.Close()
	if callErr != nil {
		return callErr
	}
	return closeErr
}

// BenchmarkStdio compares, over a real child process speaking stdio, a
// new session per call with conduit's persistent session (a governed
// Hub.CallTool). x-p50 is how many times slower a call is when each one
// opens its own session (target: at least 20).
func BenchmarkStdio(b *testing.B) {
	e := newEnv(b, stdio)
	exe := selfExe(b)
	perCall := must(b, func() error { return sessionPerCall(e.ctx, exe) })
	b.Run("session-per-call", func(b *testing.B) {
		var d samples.Durations
		b.ReportAllocs()
		for b.Loop() {
			d.Time(perCall)
		}
		d.Report(b, "")
	})
	b.Run("ratio", func(b *testing.B) { samples.Pair(b, must(b, e.hubCall), perCall) })
}
