package conduit

// Tests of stray lines on a stdio server's stdout: a real child process
// prints them at start, all along and in its calls, and the session with
// it must stay up, every call answered.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// strayLines are what servers print to stdout besides their messages:
// Node's inspector banner, text with a terminal escape and an invisible
// character, JSON that is not a message, JSON nested 20,000 deep (past
// encoding/json's 10,000 and the SDK's 1,000), a line of 1 MiB.
var strayLines = []string{
	"Debugger listening on ws://127.0.0.1:9229/5f1e9c1a-8b1d-4b7a-9d8e-3c2f1a0b9e7d",
	"For help, see: https://nodejs.org/en/docs/inspector",
	"\x1b[33mwarning\x1b[0m: plain text with a zero\u200bwidth space",
	`[1,"two",{"three":3}]`,
	`[]`,
	"42",
	`"a string"`,
	`{"hello":"world"}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":1,"result":{}} {"trailing":"data"}`,
	`{"jsonrpc":"2.0","id":"not-a-request-of-ours","result":{}}`,
	strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
	strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000),
	strings.Repeat("x", 1<<20),
	"   ",
}

// lineWriter writes whole lines one at a time: stray lines of the noisy
// child must not split its messages (a pipe write over 4 KiB is not
// atomic).
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWriter) Close() error { return nil }

// runNoisyChild serves the tool noisy over stdio, printing strayLines at
// start (and a line of 17 MiB, past the bound on a message), every 10ms
// while it runs, and in each call before its answer. Each connection
// (initialize or server/discover) is marked.
func runNoisyChild(mark func(string)) int {
	out := &lineWriter{w: os.Stdout}
	stray := func() {
		for _, l := range strayLines {
			out.Write([]byte(l + "\n"))
		}
	}
	stray()
	out.Write(append(bytes.Repeat([]byte("z"), 17<<20), '\n'))
	go func() {
		for i := 0; ; i++ {
			time.Sleep(20 * time.Millisecond)
			out.Write([]byte(strayLines[i%len(strayLines)] + "\n"))
		}
	}()
	s := mcp.NewServer(&mcp.Implementation{Name: "noisy", Version: "1"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" || method == "server/discover" {
				mark("connect")
			}
			return next(ctx, method, req)
		}
	})
	addTool(s, "noisy", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		stray()
		return textResult("noisy: " + argString(req, "message")), nil
	})
	addTool(s, "pid", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(fmt.Sprint(os.Getpid())), nil
	})
	addTool(s, "deep", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// A result nested 1,500 deep: its response is past the SDK's
		// limit on nesting.
		var v any = "bottom"
		for range 1500 {
			v = []any{v}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deep"}}, StructuredContent: v}, nil
	})
	if err := s.Run(context.Background(), &mcp.IOTransport{Reader: os.Stdin, Writer: out}); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
	}
	return 0
}

// TestStrayLinesKeepSession: a shared stdio server that prints stray lines
// at start, all along and inside its calls, while three principals call it
// from eight goroutines: every call is answered with its own result, the
// session is never restarted (one initialize, one ServerUp, no
// ServerDown, one process), and the dropped lines are logged with the
// server and the start of the line, escaped.
func TestStrayLinesKeepSession(t *testing.T) {
	t.Parallel()
	kid, marker := childServer(t, "kid", "noisy")
	ev := &events{}
	logs := &testenv.Buffer{}
	h := newHub(t, []Server{kid}, &Options{Reconnect: fastReconnect, Trace: ev.trace(),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ctx := context.Background()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%.3000s", logs.String())
		}
	})
	pid := callPID(t, h, "kid__pid")

	principals := []string{"alice", "bob", "carol"}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				msg := fmt.Sprintf("g%d-%d", g, i)
				res, err := h.CallTool(ctx, "kid__noisy", map[string]any{"message": msg},
					&CallOptions{Principal: principals[(g+i)%len(principals)]})
				if err != nil {
					errs <- fmt.Errorf("%s: %v", msg, err)
					return
				}
				if got := resultText(res); got != "noisy: "+msg {
					errs <- fmt.Errorf("%s: answered %q", msg, got)
					return
				}
			}
		})
	}
	// A response nested too deep answers its call with an error at once.
	wg.Go(func() {
		_, err := h.CallTool(ctx, "kid__deep", nil, &CallOptions{Principal: "alice"})
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrServerError || !strings.Contains(e.Message, "nested deeper than 1000 levels") {
			errs <- fmt.Errorf("deep: %v", err)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := callPID(t, h, "kid__pid"); got != pid {
		t.Errorf("the child was restarted: pid %d, then %d", pid, got)
	}
	if up, down := ev.count("up kid"), ev.count("down kid"); up != 1 || down != 0 {
		t.Errorf("sessions: %d up, %d down", up, down)
	}
	data, _ := os.ReadFile(marker)
	if n := strings.Count(string(data), "connect\n"); n != 1 {
		t.Errorf("%d connections (initialize or server/discover): %q", n, data)
	}
	if st := statusOf(h, "kid"); st.State != StateUp || st.Attempts != 0 {
		t.Errorf("status %+v", st)
	}
	// The first drop is logged as it is: the inspector's banner, cut.
	log := logs.String()
	if !strings.Contains(log, `level=WARN msg="conduit: a line of the server's stdout was dropped" server=kid reason="not JSON" bytes=78 start="Debugger listening on ws://127.0.0.1:9229/5f1e9c1a-8b1d-4b7a..."`) {
		t.Errorf("no WARN of the first stray line in\n%.2000s", log)
	}
	if strings.Contains(log, "\x1b") || strings.Contains(log, "\u200b") || strings.Contains(log, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx") {
		t.Errorf("a dropped line was logged unescaped or whole")
	}
	// Rate-limited: far fewer WARNs than lines dropped.
	if n := strings.Count(log, "stdout was dropped"); n == 0 || n > 30 {
		t.Errorf("%d WARNs of dropped lines", n)
	}
}

// TestStrayLinesKilledMidSession: the noisy server killed while calls are
// in flight: each call is answered with its result or as unavailable;
// while the server is reconnected (a new process, printing its stray
// lines), a call by a name the model was offered, against the offered set
// or the current one, is unavailable, never an unknown tool; once it is
// back, calls are answered.
func TestStrayLinesKilledMidSession(t *testing.T) {
	t.Parallel()
	kid, _ := childServer(t, "kid", "noisy")
	ev := &events{}
	h := newHub(t, []Server{kid}, &Options{Reconnect: fastReconnect, Trace: ev.trace()})
	ctx := context.Background()
	offered, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := callPID(t, h, "kid__pid")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				msg := fmt.Sprintf("g%d-%d", g, i)
				res, err := h.CallTool(ctx, "kid__noisy", map[string]any{"message": msg}, &CallOptions{ToolSet: offered})
				var e *Error
				switch {
				case err == nil && resultText(res) != "noisy: "+msg:
					errs <- fmt.Errorf("%s: answered %q", msg, resultText(res))
				case err != nil && (!errors.As(err, &e) || e.Kind != ErrUnavailable):
					errs <- fmt.Errorf("%s: %v", msg, err)
				}
				if err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	syscall.Kill(pid, syscall.SIGKILL)
	eventually(t, 15*time.Second, func() bool { return ev.count("down kid") >= 1 }, "kid down")
	during := 0
	for statusOf(h, "kid").State != StateUp {
		for _, ts := range []*ToolSet{offered, nil} {
			_, err := h.CallTool(ctx, "kid__noisy", map[string]any{"message": "m"}, &CallOptions{ToolSet: ts})
			if statusOf(h, "kid").State == StateUp {
				break // back meanwhile: the call may have been answered
			}
			if e := wantKind(t, err, ErrUnavailable); e.Message != "The server of kid__noisy is unavailable; try again later." {
				t.Errorf("during the reconnect: %+v", e)
			}
			during++
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if during == 0 {
		t.Error("no call was made during the reconnect")
	}
	if res, err := h.CallTool(ctx, "kid__noisy", map[string]any{"message": "back"}, &CallOptions{ToolSet: offered}); err != nil || resultText(res) != "noisy: back" {
		t.Errorf("after the reconnect: %v, %v", resultText(res), err)
	}
	if got := callPID(t, h, "kid__pid"); got == pid {
		t.Errorf("the same process %d after the kill", pid)
	}
}
