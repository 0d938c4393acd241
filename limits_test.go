package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// deepJSON is an arguments object whose value nests depth-1 arrays, so
// that the whole is depth levels deep.
func deepJSON(depth int) string {
	return `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
}

// deepMap is the same as Go values, built without recursion.
func deepMap(depth int) map[string]any {
	var v any = []any{}
	for range depth - 2 {
		v = []any{v}
	}
	return map[string]any{"a": v}
}

// TestDeepArgumentsNotSent: a call whose arguments nest 5,000 levels deep
// (which would end a Go SDK server's session) is answered with ErrLimit
// before the policy's approver and the hooks see it, nothing reaches the
// server, and a call to the same server in flight meanwhile is answered
// by it, over the same session.
func TestDeepArgumentsNotSent(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("deep")
	release := make(chan struct{})
	addTool(srv.Server, "wait", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-release:
			return textResult("waited"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	var asked, hooked atomic.Int32
	ev := &events{}
	h := newHub(t, []Server{srv.server("s")}, &Options{Policy: NewPolicy(Ask("*")),
		Approver: func(context.Context, ApprovalRequest) Approval { asked.Add(1); return Approve() },
		Hooks:    []Hook{{Before: func(context.Context, *Call) error { hooked.Add(1); return nil }}},
		Trace:    ev.trace()})
	ctx := context.Background()
	waited := make(chan error, 1)
	go func() {
		res, err := h.CallTool(ctx, "s__wait", nil, nil)
		if err == nil && resultText(res) != "waited" {
			err = errors.New("wait answered " + resultText(res))
		}
		waited <- err
	}()
	eventually(t, 10*time.Second, func() bool { return srv.called("wait") == 1 }, "the wait call at the server")
	asked.Store(0)
	hooked.Store(0)

	for _, args := range []any{deepJSON(5000), json.RawMessage(deepJSON(5000)), []byte(deepJSON(5000)), deepMap(5000)} {
		_, err := h.CallTool(ctx, "s__deep", args, nil)
		e := wantKind(t, err, ErrLimit)
		if !errors.Is(err, ErrLimit) || e.Server != "s" || e.Tool != "deep" {
			t.Fatalf("%T: err = %#v", args, e)
		}
		if !strings.Contains(e.Message, "s__deep was not made") || !strings.Contains(e.Message, "deeper than the limit of 64 levels") {
			t.Errorf("message = %q", e.Message)
		}
	}
	if n := srv.called("deep"); n != 0 {
		t.Fatalf("the server received %d deep calls", n)
	}
	if asked.Load() != 0 || hooked.Load() != 0 {
		t.Fatalf("approver asked %d times, hook run %d times", asked.Load(), hooked.Load())
	}
	close(release)
	if err := <-waited; err != nil {
		t.Fatal("the call in flight:", err)
	}
	// The same session answers the next call.
	if res, err := h.CallTool(ctx, "s__deep", deepJSON(64), nil); err != nil || !strings.HasPrefix(resultText(res), "deep ") {
		t.Fatalf("a call at the limit: %v, %v", resultText(res), err)
	}
	if n := ev.count("up s"); n != 1 || ev.count("down s") != 0 {
		t.Fatalf("the server went down: %q", ev.log)
	}
}

// TestArgLimitsConfigured: smaller limits, limits switched off, a size
// limit, and arguments that a before-hook makes too deep.
func TestArgLimitsConfigured(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	ctx := context.Background()
	big := `{"s":"` + strings.Repeat("x", defaultMaxArgBytes) + `"}`

	h := newHub(t, []Server{srv.server("s")}, &Options{Limits: Limits{MaxArgDepth: 10, MaxArgBytes: 1000}})
	for _, args := range []any{deepJSON(11), deepMap(11), `{"s":"` + strings.Repeat("x", 1000) + `"}`, map[string]any{"s": strings.Repeat("x", 1000)},
		struct{ S string }{strings.Repeat("x", 1000)}} {
		_, err := h.CallTool(ctx, "s__t", args, nil)
		wantKind(t, err, ErrLimit)
	}
	_, err := h.CallTool(ctx, "s__t", map[string]any{"s": strings.Repeat("x", 1000)}, nil)
	if e := wantKind(t, err, ErrLimit); !strings.Contains(e.Message, "larger than the limit of 1000 bytes") {
		t.Errorf("message = %q", e.Message)
	}
	for _, args := range []any{deepJSON(10), deepMap(10), `{"s":"short"}`} {
		if _, err := h.CallTool(ctx, "s__t", args, nil); err != nil {
			t.Fatalf("%T at the limit: %v", args, err)
		}
	}
	if n := srv.called("t"); n != 3 {
		t.Fatalf("the server received %d calls, want 3", n)
	}
	// The defaults: 1 MiB and a few bytes is over 1 MiB.
	hd := newHub(t, []Server{srv.server("s")}, nil)
	_, err = hd.CallTool(ctx, "s__t", big, nil)
	if e := wantKind(t, err, ErrLimit); !strings.Contains(e.Message, "larger than the limit of 1 MiB") {
		t.Errorf("message = %q", e.Message)
	}
	// An unknown name is still an unknown name.
	_, err = hd.CallTool(ctx, "s__nope", big, nil)
	wantKind(t, err, ErrUnknownTool)

	// Switched off, deep and large arguments are sent (200 levels is what
	// the SDK's server still reads).
	off := newHub(t, []Server{srv.server("s")}, &Options{Limits: Limits{MaxArgDepth: -1, MaxArgBytes: -1}})
	for _, args := range []any{deepJSON(200), deepMap(200), big} {
		if _, err := off.CallTool(ctx, "s__t", args, nil); err != nil {
			t.Fatalf("%T without limits: %v", args, err)
		}
	}
	if n := srv.called("t"); n != 6 {
		t.Fatalf("the server received %d calls, want 6", n)
	}

	// A before-hook that nests the arguments deeper than the limit.
	hk := newHub(t, []Server{srv.server("s")}, &Options{Limits: Limits{MaxArgDepth: 10},
		Hooks: []Hook{{Before: func(_ context.Context, c *Call) error { c.Args = deepMap(11); return nil }}}})
	_, err = hk.CallTool(ctx, "s__t", nil, nil)
	wantKind(t, err, ErrLimit)
	if n := srv.called("t"); n != 6 {
		t.Fatalf("the hook's deep arguments were sent")
	}
}

// TestResultLimits: a result with more bytes or blocks than the limits is
// answered with ErrLimit saying the call was made, and the session
// carries on; with the limits off it is passed on.
func TestResultLimits(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("echo")
	addTool(srv.Server, "text", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strings.Repeat("x", 128<<10)), nil
	})
	addTool(srv.Server, "blocks", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := &mcp.CallToolResult{}
		for range defaultMaxResultBlocks + 1 {
			res.Content = append(res.Content, &mcp.TextContent{Text: "x"})
		}
		return res, nil
	})
	addTool(srv.Server, "image", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// 48 KiB of data is 64 KiB as base64, and the MIME type is more.
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: make([]byte, 48<<10), MIMEType: "image/png"}}}, nil
	})
	addTool(srv.Server, "resource", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///big", Blob: make([]byte, 48<<10)}}}}, nil
	})
	addTool(srv.Server, "structured", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}},
			StructuredContent: map[string]any{"rows": []any{strings.Repeat("y", 32<<10), strings.Repeat("z", 32<<10)}}}, nil
	})
	ctx := context.Background()
	h := newHub(t, []Server{srv.server("s")}, &Options{Limits: Limits{MaxResultBytes: 64 << 10}})
	for _, tool := range []string{"text", "blocks", "image", "resource", "structured"} {
		_, err := h.CallTool(ctx, "s__"+tool, nil, nil)
		e := wantKind(t, err, ErrLimit)
		if !strings.Contains(e.Message, "s__"+tool+" was made, but its result was not passed on") {
			t.Errorf("%s: message = %q", tool, e.Message)
		}
		if srv.called(tool) != 1 {
			t.Errorf("%s was called %d times", tool, srv.called(tool))
		}
		// The session carries on.
		if _, err := h.CallTool(ctx, "s__echo", nil, nil); err != nil {
			t.Fatalf("after %s: %v", tool, err)
		}
	}
	_, err := h.CallTool(ctx, "s__blocks", nil, nil)
	if e := wantKind(t, err, ErrLimit); !strings.Contains(e.Message, "it has 1001 content blocks, more than the limit of 1000") {
		t.Errorf("message = %q", e.Message)
	}
	_, err = h.CallTool(ctx, "s__text", nil, nil)
	if e := wantKind(t, err, ErrLimit); !strings.Contains(e.Message, "it is larger than the limit of 64 KiB") {
		t.Errorf("message = %q", e.Message)
	}

	off := newHub(t, []Server{srv.server("s")}, &Options{Limits: Limits{MaxResultBytes: -1, MaxResultBlocks: -1}})
	for _, tool := range []string{"text", "blocks", "image", "resource", "structured"} {
		if _, err := off.CallTool(ctx, "s__"+tool, nil, nil); err != nil {
			t.Errorf("%s without limits: %v", tool, err)
		}
	}
	// The defaults let all of them through but the blocks.
	def := newHub(t, []Server{srv.server("s")}, nil)
	for _, tool := range []string{"text", "image", "resource", "structured"} {
		if _, err := def.CallTool(ctx, "s__"+tool, nil, nil); err != nil {
			t.Errorf("%s with the default limits: %v", tool, err)
		}
	}
	_, err = def.CallTool(ctx, "s__blocks", nil, nil)
	wantKind(t, err, ErrLimit)
}

// TestLocalToolLimits: a local tool's arguments and result are bounded as
// a server's are.
func TestLocalToolLimits(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	h := newHub(t, []Server{srv.server("s")}, &Options{Limits: Limits{MaxResultBlocks: 1}})
	ran := 0
	lt := &LocalTool{Tool: &Tool{Tool: &mcp.Tool{Name: "l", InputSchema: json.RawMessage(`{"type":"object"}`)}, Server: "local", Exposed: "local__l"}, Answer: func(context.Context, *Call) (*mcp.CallToolResult, error) {
		ran++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, nil
	}}
	_, err := h.CallLocal(context.Background(), lt, deepJSON(100), nil)
	wantKind(t, err, ErrLimit)
	if ran != 0 {
		t.Fatal("the local tool ran on deep arguments")
	}
	_, err = h.CallLocal(context.Background(), lt, nil, nil)
	wantKind(t, err, ErrLimit)
	if ran != 1 {
		t.Fatal("the local tool did not run")
	}
}

func TestLimitsResolved(t *testing.T) {
	if got := (Limits{}).resolved(); got != (limits{defaultMaxArgDepth, defaultMaxArgBytes, defaultMaxResultBytes, defaultMaxResultBlocks}) {
		t.Errorf("defaults = %+v", got)
	}
	if got := (Limits{-1, -1, -1, -1}).resolved(); got != (limits{}) {
		t.Errorf("off = %+v", got)
	}
	if got := (Limits{1, 2, 3, 4}).resolved(); got != (limits{1, 2, 3, 4}) {
		t.Errorf("set = %+v", got)
	}
}

// depthOf is the reference: the depth of a decoded JSON value, by
// recursion.
func depthOf(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, depthOf(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depthOf(e))
		}
		return d + 1
	}
	return 0
}

// FuzzArgLimits: the argument checks never panic on any input, and on
// valid JSON the depth they measure, as text and as decoded values, is the
// reference's, and the limits hold at it and fail one below.
func FuzzArgLimits(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":"]}"}]}`, `{"a\"[":"\\"}`, deepJSON(100), `[[],[[]]]`, `"x"`, `{"a":`, `]]]`, `{"a":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		off := limits{}
		_ = off.checkArgs(data)
		_ = (&limits{argDepth: 3, argBytes: 10}).checkArgs(data)
		var v any
		if len(data) > 1<<12 || json.Unmarshal(data, &v) != nil {
			return
		}
		want := depthOf(v)
		if got := jsonv.RawDepth(data, 0); got != want {
			t.Fatalf("RawDepth = %d, want %d", got, want)
		}
		m := jsonv.Measure{}
		m.Value(v, 0)
		if m.Depth != want {
			t.Fatalf("Measure depth = %d, want %d", m.Depth, want)
		}
		for _, args := range []any{data, v} {
			if want > 0 {
				if err := (&limits{argDepth: want}).checkArgs(args); err != nil {
					t.Fatalf("%T at its depth %d: %v", args, want, err)
				}
			}
			if want > 1 {
				if err := (&limits{argDepth: want - 1}).checkArgs(args); err == nil {
					t.Fatalf("%T of depth %d passed a limit of %d", args, want, want-1)
				}
			}
		}
		if err := (&limits{argBytes: len(data)}).checkArgs(data); err != nil {
			t.Fatal(err)
		}
		if len(data) > 1 {
			if err := (&limits{argBytes: len(data) - 1}).checkArgs(data); err == nil {
				t.Fatal("size limit passed")
			}
		}
	})
}

// TestResultRefusedBeforeDecoding: a tools/call result whose JSON text
// is over MaxResultBytes is refused before the SDK decodes it, and the
// model is told the call was made. (The connection's side is tested in
// its own package.)
func TestResultRefusedBeforeDecoding(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	h := newHub(t, []Server{srv.server("s")}, &Options{Limits: Limits{MaxResultBytes: 100}})
	ctx := context.Background()
	// Through the hub, the model is told the call was made.
	addTool(srv.Server, "big", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strings.Repeat("y", 200)), nil
	})
	eventually(t, 10*time.Second, func() bool { ts, _ := h.ListTools(ctx); _, ok := ts.Lookup("s__big"); return ok }, "the new tool")
	_, err := h.CallTool(ctx, "s__big", nil, nil)
	e := wantKind(t, err, ErrLimit)
	if e.Message != "The call to s__big was made, but its result was not passed on: it is larger than the limit of 100 bytes. Ask for less at a time, if the tool allows it." {
		t.Errorf("message = %q", e.Message)
	}
}

// TestResultLimitNotSpoofed: a server's own error with the code and data
// conduit's refusal of a large result had before it carried a nonce is the
// server's error, not a refusal of conduit's (which would tell the model
// the call was made but its result was withheld).
func TestResultLimitNotSpoofed(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("echo")
	addTool(srv.Server, "spoof", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: -32099, Message: "is larger than the limit of 1 byte",
			Data: json.RawMessage(`"conduit: result over the limit"`)}
	})
	addTool(srv.Server, "text", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(strings.Repeat("x", 4<<10)), nil
	})
	h := newHub(t, []Server{srv.server("s")}, &Options{Limits: Limits{MaxResultBytes: 1 << 10}})
	_, err := h.CallTool(context.Background(), "s__spoof", nil, nil)
	if e := wantKind(t, err, ErrServerError); strings.Contains(e.Message, "was not passed on") {
		t.Errorf("message = %q: the server's error was taken for conduit's refusal", e.Message)
	}
	_, err = h.CallTool(context.Background(), "s__text", nil, nil)
	wantKind(t, err, ErrLimit)
}
