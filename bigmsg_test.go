package conduit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigTool answers with a text of the bytes its arguments ask for, of
// which it keeps no copy.
func bigTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct{ Bytes int }
	_ = json.Unmarshal(req.Params.Arguments, &a)
	return textResult(strings.Repeat("x", a.Bytes)), nil
}

// runBigHTTPChild serves the tool big over Streamable HTTP on a
// loopback port, which it prints first, with SSE or JSON responses.
func runBigHTTPChild(jsonResponse bool) int {
	s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
	addTool(s, "big", bigTool)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
	// It ends with the test, which closes its stdin.
	go func() { io.Copy(io.Discard, os.Stdin); os.Exit(0) }()
	http.Serve(ln, h)
	return 0
}

// heapWatch samples the heap in use until stopped, and reports its peak
// over the heap when it started.
func heapWatch() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > peak.Load() {
				peak.Store(ms.HeapInuse - base)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); <-ended; return peak.Load() }
}

const bigBytes = 50 << 20

// checkBigResult calls big (which answers 50 MB) while during makes
// other calls to the same server: the big call gets the limit error, the
// others are answered, the session is never lost, and the hub's heap
// grows by well under the result's size.
func checkBigResult(t *testing.T, h *Hub, ev *events, server, big string, bigArgs any, during func(context.Context, <-chan struct{}) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	other := make(chan error, 1)
	bigDone := make(chan struct{})
	go func() { other <- during(ctx, bigDone) }()
	stop := heapWatch()
	_, err := h.CallTool(ctx, server+"__"+big, bigArgs, nil)
	peak := stop()
	close(bigDone)
	e := wantKind(t, err, ErrLimit)
	if !strings.Contains(e.Message, "was made, but its result was not passed on") || !strings.Contains(e.Message, "Ask for less") {
		t.Errorf("message = %q", e.Message)
	}
	t.Logf("the hub's heap grew by at most %.1f MB during the 50 MB result", float64(peak)/(1<<20))
	if peak > 36<<20 { // 16 MiB held at most, and garbage the collector has not reached yet
		t.Errorf("the hub's heap grew by %d MB during a 50 MB result", peak>>20)
	}
	if err := <-other; err != nil {
		t.Fatal("the other calls:", err)
	}
	if ups, downs := ev.count("up "+server), ev.count("down "+server); ups != 1 || downs != 0 {
		t.Fatalf("the server's session was lost: %q", ev.log)
	}
	if st := h.Status()[0]; st.State != StateUp {
		t.Fatalf("status %+v", st)
	}
}

// callsDuring calls tool every few milliseconds until the big call is
// answered, checking its answers with check.
func callsDuring(h *Hub, tool string, args any, check func(string) bool) func(context.Context, <-chan struct{}) error {
	return func(ctx context.Context, bigDone <-chan struct{}) error {
		for n := 0; ; n++ {
			res, err := h.CallTool(ctx, tool, args, nil)
			if err != nil {
				return err
			}
			if !check(resultText(res)) {
				return errors.New("answered " + resultText(res))
			}
			select {
			case <-bigDone:
				if n == 0 {
					return errors.New("no call was answered while the big one was in flight")
				}
				return nil
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// TestBigResultStdio: over stdio, a 50 MB result (a line three times the
// SDK's 16 MiB, at which the SDK ends the session) is answered with the
// limit error while calls to the same child process are answered, and
// the session stays up.
func TestBigResultStdio(t *testing.T) {
	srv, _ := childServer(t, "s", "basic")
	ev := &events{}
	h := newHub(t, []Server{srv}, &Options{Trace: ev.trace()})
	checkBigResult(t, h, ev, "s", "big", map[string]any{"bytes": bigBytes}, callsDuring(h, "s__echo", map[string]any{"message": "m"},
		func(s string) bool { return s == "echo: m" }))
}

// TestBigResultFilesystem: server-filesystem (the TypeScript SDK, which
// writes a response's result before its id) reading a 50 MB file over
// stdio: the read gets the limit error, calls made meanwhile are
// answered, the session stays up.
func TestBigResultFilesystem(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("conduit keeps the session up. ", 3) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), bytes.Repeat([]byte(line), bigBytes/len(line)+1), 0o600); err != nil {
		t.Fatal(err)
	}
	command, args := testenv.Filesystem(t, dir)
	ev := &events{}
	h := newHub(t, []Server{{ID: "fs", Command: command, Args: args}}, &Options{Trace: ev.trace()})
	checkBigResult(t, h, ev, "fs", "read_text_file", map[string]any{"path": filepath.Join(dir, "big.txt")},
		callsDuring(h, "fs__list_allowed_directories", nil, func(s string) bool { return strings.Contains(s, filepath.Base(dir)) }))
}

// bigHTTPChild starts this test binary as a Streamable HTTP server in
// mode and returns its URL.
func bigHTTPChild(t *testing.T, mode string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(url)
}

// TestBigResultHTTP: a 50 MB result from a Streamable HTTP server in
// another process, as one JSON body and as a server-sent event, is
// answered with the limit error while a call in flight is answered, over
// the same session.
func TestBigResultHTTP(t *testing.T) {
	for _, mode := range []string{"big-http", "big-http-json"} {
		t.Run(mode, func(t *testing.T) {
			url := bigHTTPChild(t, mode)
			ev := &events{}
			h := newHub(t, []Server{{ID: "h", URL: url}}, &Options{Trace: ev.trace()})
			checkBigResult(t, h, ev, "h", "big", map[string]any{"bytes": bigBytes}, callsDuring(h, "h__big", map[string]any{"bytes": 10},
				func(s string) bool { return s == "xxxxxxxxxx" }))
		})
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
