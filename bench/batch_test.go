package bench

import (
	"fmt"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/conduitmcp/conduit/bench/internal/samples"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkBatch measures the wall time of a model's batch of 32 calls to
// a tool that takes 50 ms, run by adapters.ExecuteToolCalls with
// MaxConcurrency 32, against one such call the same way. x-p50 is the
// batch's time over the single call's (target: at most 1.3). raw32 is the
// floor: 32 raw SDK calls from 32 goroutines on one session. In memory,
// the SDK's transport reads and decodes every message of a session on one
// goroutine, so the 32 answers are decoded one after the other; over
// HTTP each answer comes on its own request.
func BenchmarkBatch(b *testing.B) {
	for _, k := range []struct {
		name string
		kind transportKind
	}{{"InMemory", inMemory}, {"HTTP", loopbackHTTP}} {
		b.Run(k.name, func(b *testing.B) { benchBatch(b, newEnv(b, k.kind)) })
	}
}

func benchBatch(b *testing.B, e *env) {
	slow, ok := e.listing.ToolSet.ExposedName(fixture.ServerID, fixture.SlowTool)
	if !ok {
		b.Fatal(fixture.SlowTool, " is not listed")
	}
	const args = `{"account":"acme","days":30}`
	opts := *e.eopts
	opts.MaxConcurrency = 32
	run := func(n int) func() error {
		resp := chatResponse(slow, args, n)
		return func() error {
			exec, err := adapters.ExecuteToolCalls(e.ctx, e.hub, adapters.OpenAIChat, resp, &opts)
			if err != nil {
				return err
			}
			for i, err := range exec.Errors {
				if err != nil {
					return fmt.Errorf("call %d: %w", i, err)
				}
			}
			if len(exec.Results) != n {
				return fmt.Errorf("%d results for %d calls", len(exec.Results), n)
			}
			return nil
		}
	}
	raw32 := func() error {
		errs := make(chan error, 32)
		for range 32 {
			go func() {
				res, err := e.raw.CallTool(e.ctx, &mcp.CallToolParams{Name: fixture.SlowTool, Arguments: map[string]any{"account": "acme", "days": 30}})
				if err == nil && res.IsError {
					err = fmt.Errorf("isError result")
				}
				errs <- err
			}()
		}
		var first error
		for range 32 {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	one, batch := must(b, run(1)), must(b, run(32))
	for _, c := range []struct {
		name string
		f    func()
	}{{"1", one}, {"32", batch}, {"raw32", must(b, raw32)}} {
		b.Run(c.name, func(b *testing.B) {
			var d samples.Durations
			b.ReportAllocs()
			for b.Loop() {
				d.Time(c.f)
			}
			d.Report(b, "")
		})
	}
	b.Run("ratio", func(b *testing.B) { samples.Pair(b, one, batch) })
	b.Run("ratio-raw32", func(b *testing.B) { samples.Pair(b, one, must(b, raw32)) })
}
