package bench

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// liveHeap returns the live heap after a full collection, plus the
// goroutine stacks in use, and the number of goroutines.
func liveHeap() (uint64, int) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse, runtime.NumGoroutine()
}

const memServers = 100

// memServersUp makes memServers in-process servers of server-filesystem's
// tools and connects each to an in-memory transport, returning the
// clients' ends.
func memServersUp(ctx context.Context, tools []*mcp.Tool) ([]mcp.Transport, []*mcp.Server, error) {
	var ts []mcp.Transport
	var ss []*mcp.Server
	for range memServers {
		s := fixture.NewServer(fixture.ServerOptions{Tools: tools})
		t, err := fixture.InMemory(ctx, s)
		if err != nil {
			return nil, nil, err
		}
		ts, ss = append(ts, t), append(ss, s)
	}
	return ts, ss, nil
}

// BenchmarkMemory measures the live heap of a hub holding 100 in-process
// servers (each with server-filesystem's 14 tools, listed), against 100
// raw SDK sessions to the same servers, each with its tool list kept.
// Memory is the live heap plus goroutine stacks. The server sides are
// measured first and subtracted: hub-B/server and raw-B/server are the
// client side's memory per server (the in-memory transport's and the
// server's per-session state included, alike on both sides),
// hub-goroutines/server and raw-goroutines/server its goroutines. total-B
// is the whole process's memory with the 100 servers and the hub.
func BenchmarkMemory(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tools, err := fixture.FilesystemTools()
	if err != nil {
		b.Fatal(err)
	}
	var hubB, rawB, hubG, rawG, total float64
	for b.Loop() {
		// The raw floor.
		h0, g0 := liveHeap()
		ts, ss, err := memServersUp(ctx, tools)
		if err != nil {
			b.Fatal(err)
		}
		h1, g1 := liveHeap()
		var sessions []*mcp.ClientSession
		var lists [][]*mcp.Tool
		for _, t := range ts {
			s, err := fixture.RawClient().Connect(ctx, t, nil)
			if err != nil {
				b.Fatal(err)
			}
			res, err := s.ListTools(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			sessions, lists = append(sessions, s), append(lists, res.Tools)
		}
		h2, g2 := liveHeap()
		rawB += float64(h2-h1) / memServers
		rawG += float64(g2-g1) / memServers
		runtime.KeepAlive(lists)
		runtime.KeepAlive(ss)
		for _, s := range sessions {
			s.Close()
		}
		sessions, lists, ss, ts = nil, nil, nil, nil
		_ = h0
		_ = g0

		// The hub.
		h0, _ = liveHeap()
		ts, ss, err = memServersUp(ctx, tools)
		if err != nil {
			b.Fatal(err)
		}
		h1, g1 = liveHeap()
		var servers []conduit.Server
		for i, t := range ts {
			servers = append(servers, conduit.Server{ID: fmt.Sprintf("files%03d", i), Transport: t})
		}
		hub, err := conduit.NewHub(ctx, servers, fixture.Options())
		if err != nil {
			b.Fatal(err)
		}
		set, err := hub.ListTools(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if set.Len() != memServers*len(tools) {
			b.Fatalf("listed %d tools", set.Len())
		}
		h2, g2 = liveHeap()
		hubB += float64(h2-h1) / memServers
		hubG += float64(g2-g1) / memServers
		total += float64(h2 - h0)
		runtime.KeepAlive(ss)
		hub.Close()
	}
	n := float64(b.N)
	b.ReportMetric(hubB/n, "hub-B/server")
	b.ReportMetric(rawB/n, "raw-B/server")
	b.ReportMetric(hubG/n, "hub-goroutines/server")
	b.ReportMetric(rawG/n, "raw-goroutines/server")
	b.ReportMetric(total/n, "total-B")
}
