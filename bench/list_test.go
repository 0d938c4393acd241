package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/conduitmcp/conduit/bench/internal/samples"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ListDelay is how long each server of BenchmarkList takes to answer
// tools/list.
const listDelay = 20 * time.Millisecond

// firstListing starts n fresh in-memory servers of tools whose tools/list
// takes listDelay, connects to them (not timed) and times the first
// listing: a hub's ListTools, or, for raw, ListTools on n raw SDK sessions
// from n goroutines (the floor: a fan-out written by hand).
func firstListing(ctx context.Context, tools []*mcp.Tool, n int, raw bool) (time.Duration, error) {
	var ts []mcp.Transport
	for range n {
		t, err := fixture.InMemory(ctx, fixture.NewServer(fixture.ServerOptions{Tools: tools, ListDelay: listDelay}))
		if err != nil {
			return 0, err
		}
		ts = append(ts, t)
	}
	if raw {
		var sessions []*mcp.ClientSession
		for _, t := range ts {
			s, err := fixture.RawClient().Connect(ctx, t, nil)
			if err != nil {
				return 0, err
			}
			defer s.Close()
			sessions = append(sessions, s)
		}
		start := time.Now()
		errs := make(chan error, n)
		for _, s := range sessions {
			go func() {
				res, err := s.ListTools(ctx, nil)
				if err == nil && len(res.Tools) != len(tools) {
					err = fmt.Errorf("listed %d tools of %d", len(res.Tools), len(tools))
				}
				errs <- err
			}()
		}
		var first error
		for range n {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return time.Since(start), first
	}
	var servers []conduit.Server
	for i, t := range ts {
		servers = append(servers, conduit.Server{ID: fmt.Sprintf("files%02d", i), Transport: t})
	}
	hub, err := conduit.NewHub(ctx, servers, fixture.Options())
	if err != nil {
		return 0, err
	}
	defer hub.Close()
	start := time.Now()
	set, err := hub.ListTools(ctx)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if set.Len() != n*len(tools) {
		return 0, fmt.Errorf("listed %d tools of %d", set.Len(), n*len(tools))
	}
	return d, nil
}

// BenchmarkList measures a hub's first listing of 50 servers that each
// take 20 ms to list against a hub of one such server: x-p50 of "ratio" is
// the 50 servers' time over the one's (target: at most 1.5). The servers
// run in this process, so their work and the SDK's decoding of their
// lists share the machine's cores with the hub: "fs" servers list
// server-filesystem's 14 tools (700 in all), "one" servers a single small
// tool, which leaves the fan-out itself. "raw50" is the floor, 50 raw SDK
// sessions listed from 50 goroutines; "ratio-raw" the hub's 50 over it.
// "cached" is a listing that asks no server.
func BenchmarkList(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fs, err := fixture.FilesystemTools()
	if err != nil {
		b.Fatal(err)
	}
	for _, set := range []struct {
		name  string
		tools []*mcp.Tool
	}{{"fs", fs}, {"one", []*mcp.Tool{fixture.SlowToolDef()}}} {
		list := func(n int, raw bool) time.Duration {
			d, err := firstListing(ctx, set.tools, n, raw)
			if err != nil {
				b.Fatal(err)
			}
			return d
		}
		b.Run(set.name, func(b *testing.B) {
			for _, c := range []struct {
				name string
				n    int
				raw  bool
			}{{"1", 1, false}, {"50", 50, false}, {"raw50", 50, true}} {
				b.Run(c.name, func(b *testing.B) {
					var d samples.Durations
					for b.Loop() {
						d.Add(list(c.n, c.raw))
					}
					d.Report(b, "")
				})
			}
			pair := func(b *testing.B, base, subj func() time.Duration) {
				var sb, ss samples.Durations
				for i := 0; b.Loop(); i++ {
					if i%2 == 0 {
						sb.Add(base())
						ss.Add(subj())
					} else {
						ss.Add(subj())
						sb.Add(base())
					}
				}
				samples.ReportPair(b, &sb, &ss)
			}
			hub50 := func() time.Duration { return list(50, false) }
			b.Run("ratio", func(b *testing.B) { pair(b, func() time.Duration { return list(1, false) }, hub50) })
			b.Run("ratio-raw", func(b *testing.B) { pair(b, func() time.Duration { return list(50, true) }, hub50) })
		})
	}
	b.Run("cached", func(b *testing.B) {
		var servers []conduit.Server
		for i := range 50 {
			t, err := fixture.InMemory(ctx, fixture.NewServer(fixture.ServerOptions{Tools: fs, ListDelay: listDelay}))
			if err != nil {
				b.Fatal(err)
			}
			servers = append(servers, conduit.Server{ID: fmt.Sprintf("files%02d", i), Transport: t})
		}
		hub, err := conduit.NewHub(ctx, servers, fixture.Options())
		if err != nil {
			b.Fatal(err)
		}
		defer hub.Close()
		if _, err := hub.ListTools(ctx); err != nil {
			b.Fatal(err)
		}
		var d samples.Durations
		b.ReportAllocs()
		for b.Loop() {
			d.Time(func() {
				if _, err := hub.ListTools(ctx); err != nil {
					b.Fatal(err)
				}
			})
		}
		d.Report(b, "")
	})
}
