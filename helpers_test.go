package conduit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a stdio MCP server: run with childModeEnv set,
// TestMain serves MCP on stdin/stdout instead of running tests, so the fault
// tests talk to real child processes.
const (
	childModeEnv   = "CONDUIT_TEST_CHILD"
	childMarkerEnv = "CONDUIT_TEST_MARKER"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	probeTimeout = time.Second
	os.Exit(m.Run())
}

// runChild is the child server. Modes:
//
//	basic              tools echo, pid, block, garbage, jsongarbage, rpcgarbage, getenv,
//	                   environ (every variable, a line each), cwd, args, big, exit
//	big-http[-json]    the tool big over Streamable HTTP (SSE or JSON
//	                   responses) on a loopback port it prints first
//	garbage-after-list like basic, but writes a line that is not JSON to
//	                   stdout shortly after answering tools/list
//	noisy              writes stray lines to stdout at start, all along and
//	                   in each call of its tool noisy (stray_test.go)
//	exit               writes to stderr and exits with status 3 at once
//	silent             reads stdin and never answers
//	defs               tools read from files, differing between runs and
//	                   within one (see runDefsChild)
//	tasks              the tool slow, answered as a task (clienttasks_stdio_test.go)
func runChild(mode string) int {
	marker := os.Getenv(childMarkerEnv)
	mark := func(s string) {
		if marker == "" {
			return
		}
		f, err := os.OpenFile(marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, s)
			f.Close()
		}
	}
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: the test server refuses to start")
		return 3
	case "silent":
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
		}
		return 0
	case "defs":
		return runDefsChild(mark)
	case "big-http", "big-http-json":
		return runBigHTTPChild(mode == "big-http-json")
	case "noisy":
		return runNoisyChild(mark)
	case "tasks":
		return runTasksChild(mark)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "child", Version: "1"}, nil)
	addTool(s, "echo", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("echo: " + argString(req, "message")), nil
	})
	addTool(s, "pid", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strconv.Itoa(os.Getpid())), nil
	})
	addTool(s, "block", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mark("blocking")
		<-ctx.Done()
		mark("canceled")
		return nil, ctx.Err()
	})
	addTool(s, "garbage", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Stdout.WriteString("this is not JSON-RPC\n")
		return textResult("after garbage"), nil
	})
	addTool(s, "jsongarbage", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Stdout.WriteString(`{"hello":"world"}` + "\n")
		return textResult("after jsongarbage"), nil
	})
	addTool(s, "rpcgarbage", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// A response without an id: the SDK's reader would fail with a
		// *jsonrpc.Error of code -32600, the type a server's error has.
		os.Stdout.WriteString(`{"jsonrpc":"2.0","result":{}}` + "\n")
		return textResult("after rpcgarbage"), nil
	})
	addTool(s, "getenv", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(os.Getenv(argString(req, "name"))), nil
	})
	addTool(s, "environ", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strings.Join(os.Environ(), "\n")), nil
	})
	addTool(s, "cwd", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		wd, _ := os.Getwd()
		return textResult(wd), nil
	})
	addTool(s, "args", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strings.Join(os.Args[1:], " ")), nil
	})
	addTool(s, "big", bigTool)
	addTool(s, "exit", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "exiting on request")
		os.Exit(4)
		return nil, nil
	})
	if mode == "garbage-after-list" {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if method == "tools/list" {
					go func() {
						time.Sleep(50 * time.Millisecond)
						os.Stdout.WriteString("garbage after the listing\n")
					}()
				}
				return res, err
			}
		})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
	}
	return 0
}

// childServer returns a Server that runs this test binary as a stdio server
// in mode, and the path of its marker file.
func childServer(t *testing.T, id, mode string) (Server, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "marker")
	return Server{ID: id, Command: exe, Env: map[string]string{
		childModeEnv: mode, childMarkerEnv: marker,
		// A race-enabled child otherwise sleeps 1s at exit.
		"GORACE": "atexit_sleep_ms=0",
	}}, marker
}

// waitMarker waits until the marker file holds line.
func waitMarker(t *testing.T, path, line string) {
	t.Helper()
	eventually(t, 10*time.Second, func() bool {
		data, _ := os.ReadFile(path)
		return strings.Contains(string(data), line+"\n")
	}, "marker %q in %s", line, path)
}

func eventually(t *testing.T, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for "+format, args...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// addTool adds a tool with an open object schema.
func addTool(s *mcp.Server, name string, h mcp.ToolHandler) {
	s.AddTool(&mcp.Tool{Name: name, Description: "the " + name + " tool", InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func argString(req *mcp.CallToolRequest, key string) string {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	s, _ := m[key].(string)
	return s
}

func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return "<nil>"
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// testServer is an in-process SDK server that counts the requests it
// receives.
type testServer struct {
	*mcp.Server
	t  testing.TB
	mu sync.Mutex
	// methods counts requests by method; calls counts tools/call by tool.
	methods map[string]int
	calls   map[string]int
	// lastMeta is the _meta of the last tools/call.
	lastMeta map[string]any
}

// stableLists is the cache hint of a test server whose lists change only
// when it says so (list_changed): fresh for an hour, the same for all.
func stableLists(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
	c.TTLMs, c.CacheScope = int(time.Hour/time.Millisecond), "public"
}

func newTestServer(t testing.TB, name string) *testServer {
	return newTestServerWith(t, name, &mcp.ServerOptions{SetCacheable: stableLists})
}

// newTestServerWith is a test server with the SDK server options opts.
func newTestServerWith(t testing.TB, name string, opts *mcp.ServerOptions) *testServer {
	ts := &testServer{
		Server:  mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, opts),
		t:       t,
		methods: map[string]int{},
		calls:   map[string]int{},
	}
	ts.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ts.mu.Lock()
			ts.methods[method]++
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				ts.calls[r.Params.Name]++
				ts.lastMeta = r.Params.Meta
			}
			ts.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	return ts
}

// echoTools adds tools that answer with their own name and arguments.
func (ts *testServer) echoTools(names ...string) *testServer {
	for _, n := range names {
		addTool(ts.Server, n, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(n + " " + string(req.Params.Arguments)), nil
		})
	}
	return ts
}

func (ts *testServer) method(m string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.methods[m]
}

func (ts *testServer) called(tool string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.calls[tool]
}

func (ts *testServer) totalCalls() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := 0
	for _, c := range ts.calls {
		n += c
	}
	return n
}

// transport connects a new server session and returns the client's end.
func (ts *testServer) transport() mcp.Transport {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := ts.Connect(context.Background(), st, nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(func() { ss.Close() })
	return ct
}

// server returns a Server of this test server under id.
func (ts *testServer) server(id string) Server { return Server{ID: id, Transport: ts.transport()} }

func newHub(t testing.TB, servers []Server, opts *Options) *Hub {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Policy == nil {
		opts.Policy = AllowAll()
	}
	h, err := NewHub(context.Background(), servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func newClient(t testing.TB, server Server, opts *Options) *Client {
	t.Helper()
	cl, err := NewClient(context.Background(), server, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func wantKind(t *testing.T, err error, kind *Error) *Error {
	t.Helper()
	var e *Error
	if err == nil {
		t.Fatalf("err = nil, want kind %v", kind)
	}
	if !errors.As(err, &e) {
		t.Fatalf("err = %T %v, want *Error", err, err)
	}
	if e.String() != kind.String() {
		t.Fatalf("kind = %v (%v), want %v", e.String(), err, kind.String())
	}
	return e
}

// jsonRPCError makes a handler's JSON-RPC error.
func jsonRPCError(code int64, msg string) error { return &jsonrpc.Error{Code: code, Message: msg} }
