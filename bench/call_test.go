package bench

import (
	"testing"

	"github.com/conduitmcp/conduit/bench/internal/samples"
)

// BenchmarkCall measures one call of read_text_file each way, alone:
// raw (mcp.ClientSession.CallTool), glue (the raw call with the decoding
// of an OpenAI response and the answer written by hand), hub (Hub.CallTool: policy, hooks,
// validation, shaping) and adapters (adapters.ExecuteToolCalls on an
// OpenAI Chat response: parsing, strict-mode null stripping, the same
// pipeline, the answer message). Its allocs/op and B/op are the cost per
// call; its p50 and p99 are per-call latencies.
func BenchmarkCall(b *testing.B) {
	for _, k := range []struct {
		name string
		kind transportKind
	}{{"InMemory", inMemory}, {"HTTP", loopbackHTTP}, {"Stdio", stdio}} {
		b.Run(k.name, func(b *testing.B) {
			e := newEnv(b, k.kind)
			for _, side := range []struct {
				name string
				f    func() error
			}{{"raw", e.rawCall}, {"glue", e.glueCall}, {"hub", e.hubCall}, {"adapters", e.adaptersCall}} {
				b.Run(side.name, func(b *testing.B) {
					f := must(b, side.f)
					var d samples.Durations
					b.ReportAllocs()
					for b.Loop() {
						d.Time(f)
					}
					d.Report(b, "")
				})
			}
		})
	}
}

// BenchmarkRatio runs the governed call and the raw call alternately in
// one loop and reports the ratio governed/raw of their p50s (x-p50): the
// figure the targets are about. adapters-vs-glue compares
// ExecuteToolCalls with the raw call plus the glue it replaces.
func BenchmarkRatio(b *testing.B) {
	for _, k := range []struct {
		name string
		kind transportKind
	}{{"InMemory", inMemory}, {"HTTP", loopbackHTTP}} {
		b.Run(k.name, func(b *testing.B) {
			e := newEnv(b, k.kind)
			b.Run("hub", func(b *testing.B) { samples.Pair(b, must(b, e.rawCall), must(b, e.hubCall)) })
			b.Run("adapters", func(b *testing.B) { samples.Pair(b, must(b, e.rawCall), must(b, e.adaptersCall)) })
			// The fairer floor of ExecuteToolCalls: the raw call plus the
			// glue a hand-written program needs around it.
			b.Run("adapters-vs-glue", func(b *testing.B) { samples.Pair(b, must(b, e.glueCall), must(b, e.adaptersCall)) })
		})
	}
}
