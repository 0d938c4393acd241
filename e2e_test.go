package conduit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/modelresult"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The end-to-end tests run the real npm servers pinned in package.json
// (see internal/testenv); they skip when node_modules is missing.

func TestE2EEverything(t *testing.T) {
	t.Parallel()
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		command, args := testenv.Everything(t)
		testEverything(t, Server{ID: "everything", Command: command, Args: args})
	})
	t.Run("streamable http", func(t *testing.T) {
		t.Parallel()
		url := testenv.EverythingHTTP(t)
		testEverything(t, Server{ID: "everything", URL: url})
	})
}

func testEverything(t *testing.T, srv Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h, err := NewHub(ctx, []Server{srv}, &Options{Policy: AllowAll(), Validate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		start := time.Now()
		h.Close()
		t.Logf("Close took %v", time.Since(start))
	}()
	if st := h.Status()[0]; st.State != StateUp {
		t.Fatalf("status %+v", st)
	}
	ts, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"everything__echo", "everything__get-structured-content", "everything__get-tiny-image",
		"everything__get-resource-links", "everything__get-annotated-message", "everything__trigger-long-running-operation"} {
		tool, ok := ts.Lookup(name)
		if !ok {
			t.Fatalf("%s not listed: %v (left out: %v)", name, exposed(ts), skipped(ts))
		}
		if tool.InputSchema == nil || tool.Description == "" {
			t.Errorf("%s: no schema or description", name)
		}
	}
	if tool, _ := ts.Lookup("everything__echo"); tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
		t.Errorf("echo's annotations: %+v", tool.Annotations)
	}
	call := func(name string, args any, opts *CallOptions) *mcp.CallToolResult {
		t.Helper()
		res, err := h.CallTool(ctx, "everything__"+name, args, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: isError: %s", name, resultText(res))
		}
		return res
	}

	if got := resultText(call("echo", map[string]any{"message": "hello"}, nil)); got != "Echo: hello" {
		t.Errorf("echo = %q", got)
	}
	// Validation against the server's (draft-07) schema, before sending.
	_, err = h.CallTool(ctx, "everything__echo", map[string]any{}, nil)
	if e := wantKind(t, err, ErrInvalidArguments); !strings.Contains(e.Message, "message") {
		t.Errorf("validation message %q", e.Message)
	}

	res := call("get-structured-content", map[string]any{"location": "Chicago"}, nil)
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok || sc["temperature"] == nil {
		t.Errorf("structured content = %#v", res.StructuredContent)
	}

	res = modelresult.Shape(call("get-tiny-image", nil, nil))
	var img *mcp.ImageContent
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			img = ic
		}
	}
	if img == nil || img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
		t.Errorf("tiny image = %#v", res.Content)
	}

	res = modelresult.Shape(call("get-resource-links", map[string]any{"count": 2}, nil))
	links := 0
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links++
			if !strings.HasPrefix(l.URI, "demo://") {
				t.Errorf("link %q", l.URI)
			}
		}
	}
	if links != 2 {
		t.Errorf("%d resource links", links)
	}

	res = call("get-annotated-message", map[string]any{"messageType": "error", "includeImage": true}, nil)
	annotated := false
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && tc.Annotations != nil && tc.Annotations.Priority > 0 {
			annotated = true
		}
	}
	if !annotated {
		t.Errorf("no annotated text: %#v", res.Content)
	}

	var progress atomic.Int64
	// Steps a second apart: a notification handled after the result is
	// dropped, and the last goes with the result.
	res = call("trigger-long-running-operation", map[string]any{"duration": 3, "steps": 3}, &CallOptions{
		Progress: func(_ *Call, p Progress) {
			progress.Add(1)
			if p.Total != 3 {
				t.Errorf("progress %+v", p)
			}
		},
	})
	if !strings.Contains(resultText(res), "Long running operation completed") {
		t.Errorf("long running = %q", resultText(res))
	}
	// The last notification may come after the result (see testenv).
	eventually(t, 5*time.Second, func() bool { return progress.Load() >= 2 }, "progress notifications")

	// A tool error is a result, not an *Error.
	h2, err := NewHub(ctx, []Server{srv}, &Options{Policy: AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	res, err = h2.CallTool(ctx, "everything__get-sum", map[string]any{"a": "x", "b": 2}, nil)
	if err != nil || !res.IsError {
		t.Errorf("invalid arguments unvalidated: res %+v err %v", res, err)
	}
	// A timed-out request is cancelled on the server and the session stays.
	_, err = h2.CallTool(ctx, "everything__trigger-long-running-operation", map[string]any{"duration": 10, "steps": 2}, &CallOptions{RequestTimeout: 300 * time.Millisecond})
	wantKind(t, err, ErrTimeout)
	if got := resultText(call("echo", map[string]any{"message": "still here"}, nil)); got != "Echo: still here" {
		t.Errorf("echo after timeout = %q", got)
	}
	// The server registers tools after initialize (each with
	// notifications/tools/list_changed), so the first listing may be
	// followed by another; after that, nothing changes: the same set.
	ts2, _ := h.ListTools(ctx)
	if ts3, _ := h.ListTools(ctx); ts3 != ts2 || ts3.Len() < ts.Len() {
		t.Error("a new tool set with nothing changed")
	}
}

func TestE2EFilesystem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("remember the milk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	command, args := testenv.Filesystem(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h, err := NewHub(ctx, []Server{{ID: "fs", Command: command, Args: args}}, &Options{Policy: NewPolicy(Allow("fs/read_*", "fs/list_*"), Deny("fs/*"))})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ts, err := h.ListToolsFor(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := exposed(ts)
	for _, want := range []string{"fs__list_directory", "fs__read_text_file"} {
		if _, ok := ts.Lookup(want); !ok {
			t.Fatalf("%s not listed: %v", want, got)
		}
	}
	if _, ok := ts.Lookup("fs__write_file"); ok {
		t.Fatal("write_file is listed though the policy denies it")
	}
	res, err := h.CallTool(ctx, "fs__list_directory", map[string]any{"path": dir}, &CallOptions{ToolSet: ts})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "notes.txt") {
		t.Fatalf("list_directory: %q %v", resultText(res), err)
	}
	res, err = h.CallTool(ctx, "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "notes.txt")}, &CallOptions{ToolSet: ts})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "remember the milk") {
		t.Fatalf("read_text_file: %q %v", resultText(res), err)
	}
	_, err = h.CallTool(ctx, "fs__write_file", map[string]any{"path": filepath.Join(dir, "x"), "content": "no"}, nil)
	wantKind(t, err, ErrDenied)
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Fatal("a denied write happened")
	}
}
