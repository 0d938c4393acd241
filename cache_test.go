package conduit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hintedServer is a test server whose list results carry the cache hint
// hint returns, and which speaks versions (all of the SDK's when nil).
func hintedServer(t *testing.T, versions []string, hint func() (time.Duration, string)) *testServer {
	ts := newTestServerWith(t, "s", &mcp.ServerOptions{
		SupportedProtocolVersions: versions,
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			ttl, scope := hint()
			c.TTLMs, c.CacheScope = int(ttl/time.Millisecond), scope
		},
	})
	ts.echoTools("a")
	ts.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	return ts
}

// A list whose hint ran out is listed again; one listed again as it was
// is the same tool set; ttlMs 0 means at every listing. Sessions of
// 2025-11-25 have no hints: their lists are kept until the server says
// they changed.
func TestCacheHintTTL(t *testing.T) {
	ctx := context.Background()
	var ttl atomic.Int64
	srv := hintedServer(t, nil, func() (time.Duration, string) { return time.Duration(ttl.Load()), "public" })
	h := newHub(t, []Server{srv.server("s")}, nil)

	ttl.Store(int64(50 * time.Millisecond))
	ts1, err := h.ListTools(ctx)
	if err != nil || ts1.Len() != 1 {
		t.Fatalf("ListTools: %v, %v", ts1, err)
	}
	time.Sleep(100 * time.Millisecond)
	ts2, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.method("tools/list"); n != 2 {
		t.Fatalf("tools/list = %d after the hint ran out, want 2", n)
	}
	if ts2 != ts1 {
		t.Fatal("the same tools listed again made a new tool set")
	}

	ttl.Store(0)
	time.Sleep(100 * time.Millisecond)
	for range 3 {
		if _, err := h.ListTools(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := h.ListPromptsFor(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n, p := srv.method("tools/list"), srv.method("prompts/list"); n != 5 || p != 3 {
		t.Fatalf("with ttlMs 0: tools/list = %d (want 5), prompts/list = %d (want 3)", n, p)
	}

	old := hintedServer(t, []string{"2025-11-25"}, func() (time.Duration, string) { return 0, "private" })
	h = newHub(t, []Server{old.server("s")}, nil)
	for range 3 {
		if _, err := h.ListToolsFor(ctx, &ListOptions{Principal: "p"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := old.method("tools/list"); n != 1 {
		t.Fatalf("a 2025-11-25 session listed %d times, want once", n)
	}
}

// A private list is kept for the principal it was listed for: a listing
// for another principal asks the session again (which answers from its
// own cache, that of its one authorization context, while the hint
// lasts). A public one is everyone's.
func TestCacheHintPrivate(t *testing.T) {
	ctx := context.Background()
	for _, scope := range []string{"private", "public"} {
		t.Run(scope, func(t *testing.T) {
			srv := hintedServer(t, nil, func() (time.Duration, string) { return time.Hour, scope })
			var mu sync.Mutex
			var asked []string
			h := newHub(t, []Server{srv.server("s")}, &Options{Trace: &Trace{
				ListStart: func(i ListInfo) context.Context {
					mu.Lock()
					asked = append(asked, i.Method)
					mu.Unlock()
					return nil
				},
			}})
			for _, p := range []string{"alice", "alice", "bob", "bob", ""} {
				if _, err := h.ListToolsFor(ctx, &ListOptions{Principal: p}); err != nil {
					t.Fatal(err)
				}
				if _, err := h.ListPromptsFor(ctx, &ListOptions{Principal: p}); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			want := map[string]int{"private": 6, "public": 2}[scope] // 3 owners, 2 lists
			if len(asked) != want {
				t.Fatalf("conduit asked its session for lists %d times (%v), want %d", len(asked), asked, want)
			}
			if n := srv.method("tools/list"); n != 1 {
				t.Fatalf("tools/list reached the server %d times, want once: the session's own cache answers while the hint lasts", n)
			}
		})
	}
}

// A hint that says nothing sensible keeps a list for no time, or for a
// day at most.
func TestCacheHintBounds(t *testing.T) {
	ctx, rec := withHints(context.Background())
	next := func(ttl int) mcp.MethodHandler {
		return func(context.Context, string, mcp.Request) (mcp.Result, error) {
			return &mcp.ListToolsResult{Cacheable: mcp.Cacheable{TTLMs: ttl, CacheScope: "weird"}}, nil
		}
	}
	for _, ttl := range []int{1 << 62, -5} {
		if _, err := hintMiddleware(next(ttl))(ctx, "tools/list", nil); err != nil {
			t.Fatal(err)
		}
	}
	if rec.ttl != 0 || !rec.priv {
		t.Fatalf("ttl %v, private %v: want the shortest (a negative one is none), and an unknown scope private", rec.ttl, rec.priv)
	}
	_, rec = withHints(context.Background())
	ctx = context.WithValue(context.Background(), hintKey{}, rec)
	if _, err := hintMiddleware(next(1<<62))(ctx, "tools/list", nil); err != nil || rec.ttl != maxHint {
		t.Fatalf("ttl %v (%v), want %v", rec.ttl, err, maxHint)
	}
}
