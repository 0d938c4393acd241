package bench

import (
	"slices"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
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

// BenchmarkParts is BenchmarkRatio's in-memory Hub.CallTool with the
// governance added one piece at a time, each against the raw call: what
// the governed call's cost is made of. none is a hub with no governance
// but conduit.AllowAll(); policy adds the four-rule policy and approver (the call is
// allowed, so the approver is not asked); validate adds argument
// validation; before adds the audit hook's Before, after the whole hook,
// Before and After (the full governance of BenchmarkRatio); shape adds
// ShapeLLM; inline is shape with the hook marked Inline.
func BenchmarkParts(b *testing.B) {
	p, a, hooks := fixture.Governance()
	audit := hooks[0]
	for _, part := range []struct {
		name  string
		edit  func(*conduit.Options)
		shape bool
	}{
		{"none", func(o *conduit.Options) {
			*o = conduit.Options{Logger: o.Logger, Policy: conduit.AllowAll()}
		}, false},
		{"policy", func(o *conduit.Options) {
			*o = conduit.Options{Logger: o.Logger, Policy: p, Approver: a}
		}, false},
		{"validate", func(o *conduit.Options) {
			*o = conduit.Options{Logger: o.Logger, Policy: p, Approver: a, Validate: true}
		}, false},
		{"before", func(o *conduit.Options) {
			*o = conduit.Options{Logger: o.Logger, Policy: p, Approver: a, Validate: true,
				Hooks: []conduit.Hook{{Name: audit.Name, Before: audit.Before}}}
		}, false},
		{"after", func(o *conduit.Options) {
			*o = conduit.Options{Logger: o.Logger, Policy: p, Approver: a, Validate: true,
				Hooks: hooks}
		}, false},
		{"shape", nil, true},
		{"inline", func(o *conduit.Options) {
			o.Hooks = slices.Clone(o.Hooks)
			for i := range o.Hooks {
				o.Hooks[i].Inline = true
			}
		}, true},
	} {
		b.Run(part.name, func(b *testing.B) {
			e := newEnvWith(b, inMemory, part.edit)
			e.shape = part.shape
			samples.Pair(b, must(b, e.rawCall), must(b, e.hubCall))
		})
	}
}
