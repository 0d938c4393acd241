package bench

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/bench/internal/samples"
)

// BenchmarkTools measures adapters.Tools over a hub of the corpus (about
// 1,000 tools over a hundred servers, the tool set cached, the listing
// for a principal, OpenAI's strict conversion on) against json.Marshal of
// its own output, the work every caller does next to send the tools.
// x-p50 is Tools' time over Marshal's (target: at most 2). allocs/tool is
// Tools' allocations per listed tool.
func BenchmarkTools(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := loadCorpus(b)
	hub, ts, err := corpusHub(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	defer hub.Close()
	for _, p := range []adapters.Provider{adapters.OpenAIChat, adapters.OpenAIResponses, adapters.Anthropic, adapters.Gemini} {
		opts := &adapters.ToolsOptions{Listing: adapters.ListingOptions{CacheLast: p == adapters.Anthropic}, Principal: principal}
		list := func() *adapters.Listing {
			l, err := adapters.Tools(ctx, hub, p, opts)
			if err != nil {
				b.Fatal(err)
			}
			return l
		}
		first := list() // conversions are memoized per tool set: the first listing pays for them
		if len(first.Tools) != ts.Len() {
			b.Fatalf("%v lists %d tools of %d (excluded %v)", p, len(first.Tools), ts.Len(), first.Excluded)
		}
		tools := func() { list() }
		marshal := func() {
			if _, err := json.Marshal(list().Tools); err != nil {
				b.Fatal(err)
			}
		}
		// The marshal side marshals a fresh listing each time, as a
		// caller does; the listing's own cost is subtracted via the pair.
		marshalOnly := func() {
			if _, err := json.Marshal(first.Tools); err != nil {
				b.Fatal(err)
			}
		}
		_ = marshal
		b.Run(p.String(), func(b *testing.B) {
			b.Run("tools", func(b *testing.B) {
				var d samples.Durations
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				m0 := ms.Mallocs
				b.ReportAllocs()
				for b.Loop() {
					d.Time(tools)
				}
				runtime.ReadMemStats(&ms)
				d.Report(b, "")
				b.ReportMetric(float64(ms.Mallocs-m0)/float64(b.N)/float64(ts.Len()), "allocs/tool")
			})
			b.Run("marshal", func(b *testing.B) {
				var d samples.Durations
				b.ReportAllocs()
				for b.Loop() {
					d.Time(marshalOnly)
				}
				d.Report(b, "")
			})
			b.Run("ratio", func(b *testing.B) { samples.Pair(b, marshalOnly, tools) })
		})
	}
}
