package conduit

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestNotificationFloodBounded: a server that sends 10,000 progress
// notifications and 10,000 log messages of 1 KiB each during one call,
// to callbacks that do not return until the call is over, costs the hub
// bounded memory (the SDK would queue them behind the first callback,
// some 25 MiB); the call is answered, the callbacks then get the latest
// progress, and after Close no goroutine is left. FLOOD sets the count
// (FLOOD=100000 takes some 90 s under -race on two cores).
func TestNotificationFloodBounded(t *testing.T) {
	n := 10_000
	if s := os.Getenv("FLOOD"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	baseline := goroutines()
	payload := strings.Repeat("p", 1<<10)
	// A server of protocol 2025-11-25, whose log level the hub sets.
	srv := legacyServer(t)
	addTool(srv.Server, "flood", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for i := range n {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i + 1), Total: float64(n), Message: payload}); err != nil {
				return nil, err
			}
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: payload}); err != nil {
				return nil, err
			}
		}
		return textResult("flooded"), nil
	})
	release := make(chan struct{})
	var logs, progress atomic.Int64
	var last atomic.Value
	h, err := NewHub(context.Background(), []Server{srv.server("s")}, &Options{Policy: AllowAll(),
		Handlers: &Handlers{Logging: func(context.Context, *mcp.LoggingMessageRequest) {
			<-release
			logs.Add(1)
		}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := h.SetLoggingLevel(ctx, "debug"); err != nil {
		t.Fatal(err)
	}
	before := heapInUse()
	start := time.Now()
	res, err := h.CallTool(ctx, "s__flood", nil, &CallOptions{Progress: func(_ *Call, p Progress) {
		<-release
		progress.Add(1)
		last.Store(p.Progress)
	}})
	elapsed := time.Since(start)
	if err != nil || resultText(res) != "flooded" {
		t.Fatalf("flood = %v, %v", resultText(res), err)
	}
	grown := int64(heapInUse()) - int64(before)
	t.Logf("%d progress and %d log notifications in %v; heap grew by %d KiB", n, n, elapsed, grown>>10)
	if limit := int64(16 << 20); grown > limit {
		t.Errorf("the heap grew by %d MiB during the flood, more than %d MiB", grown>>20, limit>>20)
	}
	close(release)
	// The newest progress is delivered; the oldest were dropped.
	eventually(t, 10*time.Second, func() bool { v, _ := last.Load().(float64); return v == float64(n) }, "the last progress")
	eventually(t, 10*time.Second, func() bool { return logs.Load() > 0 }, "log messages")
	h.Close()
	t.Logf("delivered %d progress notifications and %d log messages", progress.Load(), logs.Load())
	// What was held while the callbacks waited: one in each callback, and
	// the mailboxes'.
	if p := progress.Load(); p > progressQueue+1 {
		t.Errorf("%d progress notifications were held", p)
	}
	if l := logs.Load(); l > logQueue+1 {
		t.Errorf("%d log messages were held", l)
	}

	var leaked []string
	eventually(t, 10*time.Second, func() bool {
		leaked = leaked[:0]
		for id, stack := range goroutines() {
			if _, ok := baseline[id]; ok || strings.Contains(stack, "TestNotificationFloodBounded") {
				continue
			}
			if strings.Contains(stack, "conduitmcp/conduit.") || strings.Contains(stack, "go-sdk") {
				leaked = append(leaked, stack)
			}
		}
		return len(leaked) == 0
	}, "goroutines to end")
}
