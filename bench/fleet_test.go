package bench

// A governed call through one replica of conduit serve, with what replicas
// share kept in Redis against the same kept in memory (issue 32's goal:
// at most 1.10×).

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/conduitmcp/conduit/bench/internal/samples"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/redisstore"
)

// replicaEnv is the fixture's server over loopback Streamable HTTP behind
// two gateways as replicas run them: the fixture's policy (its taint
// rules read the principal's taint in the store, and each answer adds to
// it), a limit per principal (a window counted and a slot held in the
// store for every call), state keys, a bearer token; one with the memory
// store, one with a real redis-server's. The SDK's client calls each on
// MCP 2026-07-28, without a session, as a client of a fleet does.
type replicaEnv struct {
	ctx           context.Context
	memory, redis *mcp.ClientSession
	// The same without limits: the taint is all they share per call.
	memoryFree, redisFree *mcp.ClientSession
}

func newReplicaEnv(tb testing.TB) *replicaEnv {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	srv, err := fixture.CallServer()
	if err != nil {
		tb.Fatal(err)
	}
	up := fixture.HTTP(srv)
	tb.Cleanup(up.Close)
	rs, err := redisstore.Open(testenv.Redis(tb, nil).URL, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rs.Close() })
	mem := store.NewMemory()
	tb.Cleanup(func() { mem.Close() })
	replica := func(s store.Store, limited bool) *mcp.ClientSession {
		p, _, _ := fixture.Governance()
		var limits []gateway.Limit
		if limited {
			limits = []gateway.Limit{{PerMinute: 1 << 30, AtOnce: 1 << 10}}
		}
		g, err := gateway.New(ctx, []conduit.Server{{ID: fixture.ServerID, URL: up.URL}}, &gateway.Options{
			Hub:         &conduit.Options{Policy: p, Logger: slog.New(slog.DiscardHandler), Store: s},
			Transparent: true,
			StateKeys:   [][]byte{[]byte("bench-state-key-0123456789abcdef0123")},
			Limits:      limits,
		})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { g.Close() })
		h, err := g.Handler(&gateway.HTTPOptions{Tokens: map[string]string{gatewayToken: "bench"}})
		if err != nil {
			tb.Fatal(err)
		}
		hs := httptest.NewServer(h)
		tb.Cleanup(hs.Close)
		cs, err := fixture.RawClient().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: bearer{gatewayToken}}}, nil)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			tb.Fatalf("negotiated %s, want 2026-07-28", v)
		}
		return cs
	}
	return &replicaEnv{ctx: ctx, memory: replica(mem, true), redis: replica(rs, true),
		memoryFree: replica(mem, false), redisFree: replica(rs, false)}
}

func (e *replicaEnv) call(s *mcp.ClientSession) func() error {
	return func() error { return fixture.RawCall(e.ctx, s) }
}

// BenchmarkReplicaStore: a governed call through a replica with the
// memory store ("store=memory") and with Redis ("store=redis"), each alone for
// benchstat, and both alternately in one loop (samples.Pair) for the
// ratio of their p50s, x-p50 (the figure to compare with 1.10).
func BenchmarkReplicaStore(b *testing.B) {
	e := newReplicaEnv(b)
	b.Run("store=memory", func(b *testing.B) {
		call := must(b, e.call(e.memory))
		for b.Loop() {
			call()
		}
	})
	b.Run("store=redis", func(b *testing.B) {
		call := must(b, e.call(e.redis))
		for b.Loop() {
			call()
		}
	})
	b.Run("redis-vs-memory", func(b *testing.B) { samples.Pair(b, must(b, e.call(e.memory)), must(b, e.call(e.redis))) })
	// Without limits, a call's only round trip to the store is the
	// principal's taint read.
	b.Run("redis-vs-memory-nolimits", func(b *testing.B) {
		samples.Pair(b, must(b, e.call(e.memoryFree)), must(b, e.call(e.redisFree)))
	})
}

// TestReplicaStoreFixture checks that both replicas of
// BenchmarkReplicaStore answer.
func TestReplicaStoreFixture(t *testing.T) {
	e := newReplicaEnv(t)
	for name, s := range map[string]*mcp.ClientSession{"memory": e.memory, "redis": e.redis, "memory, no limits": e.memoryFree, "redis, no limits": e.redisFree} {
		if err := e.call(s)(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
