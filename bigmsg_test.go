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
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	e := wantKind(t, err, KindLimit)
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

// TestLineBound: lines within the limit pass as they are, in any pieces;
// a longer one is replaced by the error response for its id, wherever the
// id is, or dropped when it is not a response.
func TestLineBound(t *testing.T) {
	big := strings.Repeat("y", 300)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{"a":"short"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"text":"` + big + `"}}`,
		`{"result":{"text":"` + big + `","nested":{"id":9,"x":[{"id":8}]}},"jsonrpc":"2.0","id":"abc\"d"}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"x":"` + big + `"}}`,
		`{"jsonrpc":"2.0","id":{"bad":1},"result":"` + big + `"}`,
		`[{"jsonrpc":"2.0","id":6,"result":"` + big + `"}]`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"small"}}`,
		``,
	}, "\n")
	marker := newResultMarker()
	over := &oversize{server: "s", limit: 100, marker: marker, logger: discardLogger()}
	for _, piece := range []int{1, 7, 64, 1 << 20} {
		b := &lineBound{reader: reader{src: &pieces{data: []byte(in), n: piece}}, limit: 200, reject: over.reject}
		out, err := io.ReadAll(b)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(lines) != 4 {
			t.Fatalf("piece %d: %d lines: %q", piece, len(lines), out)
		}
		if lines[0] != `{"jsonrpc":"2.0","id":1,"result":{"a":"short"}}` || lines[3] != `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"small"}}` {
			t.Fatalf("piece %d: lines within the limit changed: %q", piece, lines)
		}
		for i, want := range []string{"2", `abc"d`} {
			msg, err := jsonrpc.DecodeMessage([]byte(lines[i+1]))
			if err != nil {
				t.Fatal(err)
			}
			resp := msg.(*jsonrpc.Response)
			var we *jsonrpc.Error
			if fmt.Sprint(resp.ID.Raw()) != want || !errors.As(resp.Error, &we) || we.Code != codeResultTooLarge || !bytes.Equal(we.Data, marker) ||
				we.Message != "is larger than the limit of 100 bytes" {
				t.Fatalf("piece %d: line %q", piece, lines[i+1])
			}
		}
	}
}

// pieces reads data n bytes at a time.
type pieces struct {
	data []byte
	n    int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.n)], p.data)
	p.data = p.data[n:]
	return n, nil
}

// TestSSEBound: events within the limit pass as they are; a longer one is
// replaced by an event with its id carrying the error response for the id
// in its data.
func TestSSEBound(t *testing.T) {
	big := strings.Repeat("z", 300)
	in := "id: e1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n" +
		"event: message\ndata: {\"result\":{\"t\":\"" + big + "\"},\r\ndata: \"jsonrpc\":\"2.0\",\"id\":7}\r\nid: e2\r\n\r\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":\"" + big + "\"}\n\n" +
		": a comment\nid: e4\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n"
	over := &oversize{server: "s", limit: 100, marker: newResultMarker(), logger: discardLogger()}
	for _, piece := range []int{1, 5, 64, 1 << 20} {
		b := newSSEBound(io.NopCloser(&pieces{data: []byte(in), n: piece}), 200, over)
		out, err := io.ReadAll(b)
		if err != nil {
			t.Fatal(err)
		}
		events := strings.Split(string(out), "\n\n")
		if len(events) != 4 || events[3] != "" {
			t.Fatalf("piece %d: %q", piece, out)
		}
		if events[0] != "id: e1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}" ||
			events[2] != ": a comment\nid: e4\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}" {
			t.Fatalf("piece %d: events within the limit changed: %q", piece, out)
		}
		if !strings.HasPrefix(events[1], "id: e2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32099,") {
			t.Fatalf("piece %d: stand-in %q", piece, events[1])
		}
	}
}

// FuzzLineBound: whatever a server writes, the bound never panics, the
// SDK's reader reads what it passes without error (nothing ends the
// session), the messages of every line within the limit pass in order
// (judgeLine), and every other line it passes is an error response
// standing in for a response.
func FuzzLineBound(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"a":"` + strings.Repeat("b", 80) + `"}}` + "\n",
		`{"result":"\\\"` + strings.Repeat("c", 80) + `","id":"x"}` + "\n{}\n",
		`[{"id":1,"result":[` + strings.Repeat("[", 70) + "\n",
		`{"id":` + strings.Repeat("9", 300) + `,"result":1}` + "\n",
		"Debugger listening\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n[1]\n",
		`{"jsonrpc":"2.0","id":2,"result":` + strings.Repeat("[", 1001) + "\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	over := &oversize{server: "s", limit: 64, marker: newResultMarker(), logger: discardLogger()}
	f.Fuzz(func(t *testing.T, data []byte, piece uint8) {
		b := &lineBound{reader: reader{src: &pieces{data: data, n: int(piece) + 1}}, limit: 64, reject: over.reject}
		out, err := io.ReadAll(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sdkRead(t, out); err != nil {
			t.Fatalf("the SDK fails on %q from %q: %v", out, data, err)
		}
		var want []string
		for _, l := range strings.Split(string(data), "\n") {
			if len(l) <= 64 {
				msgs, _ := judgeLine([]byte(l))
				for _, m := range msgs {
					want = append(want, string(m))
				}
			}
		}
		i := 0
		for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if l == "" {
				continue
			}
			if i < len(want) && l == want[i] {
				i++
				continue
			}
			msg, err := jsonrpc.DecodeMessage([]byte(l))
			if r, ok := msg.(*jsonrpc.Response); err != nil || !ok || r.Error == nil {
				t.Fatalf("passed %q", l)
			}
		}
		if i != len(want) {
			t.Fatalf("messages within the limit lost: %q from %q", out, data)
		}
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
