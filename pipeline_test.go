package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recorder collects pipeline events in order.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

var svgBytes = []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg>`)

func TestPipelineOrder(t *testing.T) {
	rec := &recorder{}
	srv := newTestServer(t, "s")
	srv.AddTool(&mcp.Tool{Name: "write", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rec.add("server %s", req.Params.Arguments)
			return textResult("written"), nil
		})
	h := newHub(t, []Server{srv.server("s")}, &Options{Policy: NewPolicy(Ask("s/*")),
		Validate: true,
		Approver: func(_ context.Context, req ApprovalRequest) Approval {
			rec.add("approver %s rule=%q", req.Call.Exposed, req.Rule)
			return Approve()
		},
		Hooks: []Hook{
			{
				Name: "first",
				Before: func(_ context.Context, c *Call) error {
					rec.add("before first %v", c.Args)
					return nil
				},
				After: func(_ context.Context, c *Call, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
					rec.add("after first %s", resultText(res))
					// An SVG: results are not shaped, so it stays.
					return &mcp.CallToolResult{Content: append(res.Content, &mcp.ImageContent{MIMEType: "image/svg+xml", Data: svgBytes})}, nil
				},
			},
			{
				Name: "second",
				Before: func(_ context.Context, c *Call) error {
					rec.add("before second %v", c.Args)
					// Rewrite the arguments: the original ones would fail
					// validation, which runs after the hooks.
					c.Args = map[string]any{"path": c.Args["file"]}
					return nil
				},
				After: func(_ context.Context, c *Call, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
					rec.add("after second %d", len(res.Content))
					return nil, nil // keep res
				},
			},
		},
		Trace: &Trace{
			Decided: func(i StepInfo) { rec.add("policy %s %v", i.Call.Exposed, i.Decision) },
			CallDone: func(i CallDoneInfo) {
				rec.add("done %s err=%v", i.Call.Exposed, i.Err)
			},
		}})
	args := map[string]any{"file": "/tmp/x"}
	res, err := h.CallTool(context.Background(), "s__write", args, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"policy s__write ask",
		`approver s__write rule="ask s/*"`,
		"before first map[file:/tmp/x]",
		"before second map[file:/tmp/x]",
		`server {"path":"/tmp/x"}`,
		"after first written",
		"after second 2",
		"done s__write err=<nil>",
	}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(res.Content) != 2 || resultText(res) != "written" {
		t.Fatalf("result = %q, %d blocks: not the after-hooks' result", resultText(res), len(res.Content))
	}
	if img, ok := res.Content[1].(*mcp.ImageContent); !ok || img.MIMEType != "image/svg+xml" {
		t.Fatalf("result[1] = %#v: changed after the after-hooks", res.Content[1])
	}
	if _, ok := args["path"]; ok || args["file"] != "/tmp/x" {
		t.Fatalf("the caller's arguments changed: %v", args)
	}

	// An unknown name and non-object arguments stop before the policy.
	rec.events = nil
	_, err = h.CallTool(context.Background(), "s__nope", nil, nil)
	wantKind(t, err, ErrUnknownTool)
	_, err = h.CallTool(context.Background(), "s__write", []any{1}, nil)
	wantKind(t, err, ErrInvalidArguments)
	if got := rec.get(); !slices.Equal(got, []string{"done s__nope err=" + errString(h, "s__nope"), "done s__write err=" + errString(h, "s__write")}) {
		t.Fatalf("events = %q", got)
	}
}

// errString is the error a call to name with array arguments gets; it keeps
// TestPipelineOrder's expectations readable.
func errString(h *Hub, name string) string {
	if name == "s__nope" {
		return `conduit: unknown_tool: Unknown tool "s__nope": it is not among the tools offered.`
	}
	return "conduit: invalid_arguments (s/write): Invalid arguments for s__write: the arguments must be a JSON object."
}

func TestPipelineArguments(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	cl := newClient(t, srv.server("s"), &Options{})
	ctx := context.Background()
	type params struct {
		Path string `json:"path"`
	}
	ok := []any{nil, map[string]any(nil), map[string]any{"path": "p"}, json.RawMessage(`{"path":"p"}`), []byte(`{"path":"p"}`),
		`{"path":"p"}`, "", "  ", params{Path: "p"}, &params{Path: "p"}}
	for _, a := range ok {
		if _, err := cl.CallTool(ctx, "t", a, nil); err != nil {
			t.Errorf("args %#v: %v", a, err)
		}
	}
	if n := srv.called("t"); n != len(ok) {
		t.Fatalf("server got %d calls, want %d", n, len(ok))
	}
	bad := []any{[]any{1}, "[1]", `"str"`, "null", 42, json.RawMessage(`nope`), []string{"a"}, func() {}}
	for _, a := range bad {
		_, err := cl.CallTool(ctx, "t", a, nil)
		e := wantKind(t, err, ErrInvalidArguments)
		if e.Server != "s" || e.Tool != "t" {
			t.Errorf("args %#v: %+v", a, e)
		}
	}
	if n := srv.called("t"); n != len(ok) {
		t.Fatal("a call with bad arguments was sent")
	}
}

func TestUngovernedClientSendsAsAsked(t *testing.T) {
	srv := newTestServer(t, "s")
	srv.AddTool(&mcp.Tool{Name: "strict", InputSchema: json.RawMessage(`{"type":"object","required":["x"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(string(req.Params.Arguments)), nil
		})
	srv.echoTools("danger.zone")
	cl := newClient(t, srv.server("s"), &Options{})
	ctx := context.Background()
	// No validation: arguments the schema refuses are sent as they are.
	res, err := cl.CallTool(ctx, "strict", map[string]any{"y": 1}, nil)
	if err != nil || resultText(res) != `{"y":1}` {
		t.Fatalf("res = %q, err = %v", resultText(res), err)
	}
	// Sanitized names resolve to the tool's own name.
	if _, err := cl.CallTool(ctx, "danger_zone", nil, nil); err != nil || srv.called("danger.zone") != 1 {
		t.Fatalf("err = %v, calls = %d", err, srv.called("danger.zone"))
	}
	// Governance without a policy allows every call, and the rest of it
	// still applies: an approver is never asked, validation refuses what
	// the schema refuses.
	asked := false
	for _, o := range []Options{
		{Policy: AllowAll()}, {Approver: func(context.Context, ApprovalRequest) Approval { asked = true; return Approval{} }},
		{Hooks: []Hook{{}}}, {Filter: func(string, *mcp.Tool) bool { return true }}, {Validate: true},
	} {
		g := newClient(t, srv.server("s"), &o)
		if _, err := g.CallTool(ctx, "danger_zone", nil, nil); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
		_, err := g.CallTool(ctx, "strict", map[string]any{"y": 1}, nil)
		if o.Validate != errors.Is(err, ErrInvalidArguments) {
			t.Errorf("%+v: strict call: %v", o, err)
		}
	}
	if asked {
		t.Error("an approver without a policy was asked")
	}
}

func TestClientPrefix(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("get", "list.all")
	cl := newClient(t, srv.server("gh"), &Options{Prefix: "gh_"})
	ts, err := cl.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := exposed(ts); !slices.Equal(got, []string{"gh_get", "gh_list_all"}) {
		t.Fatalf("exposed = %v", got)
	}
	if _, err := cl.CallTool(context.Background(), "gh_list_all", nil, nil); err != nil || srv.called("list.all") != 1 {
		t.Fatal(err)
	}
	if st := cl.Status(); len(st) != 1 || st[0].ID != "gh" || st[0].State != StateUp || st[0].Tools != 2 {
		t.Fatalf("status = %+v", st)
	}
}

func TestHooks(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	ctx := context.Background()
	t.Run("denial", func(t *testing.T) {
		h := newHub(t, []Server{srv.server("s")}, &Options{Hooks: []Hook{
			{Name: "guard", Before: func(context.Context, *Call) error { return errors.New("no writes on Sundays") }},
		}})
		_, err := h.CallTool(ctx, "s__t", nil, nil)
		e := wantKind(t, err, ErrDenied)
		if !strings.Contains(e.Message, "guard") || !strings.Contains(e.Message, "no writes on Sundays") {
			t.Fatalf("message = %q", e.Message)
		}
		if !errors.Is(err, ErrDenied) || errors.Is(err, ErrTimeout) {
			t.Fatal("errors.Is")
		}
	})
	t.Run("own error passed through", func(t *testing.T) {
		mine := &Error{Kind: ErrInvalidArguments, Message: "path must be absolute"}
		h := newHub(t, []Server{srv.server("s")}, &Options{Hooks: []Hook{
			{Before: func(context.Context, *Call) error { return fmt.Errorf("wrapped: %w", mine) }},
		}})
		_, err := h.CallTool(ctx, "s__t", nil, nil)
		var e *Error
		if !errors.As(err, &e) || e != mine {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("after-hook error withholds the result", func(t *testing.T) {
		h := newHub(t, []Server{srv.server("s")}, &Options{Hooks: []Hook{
			{Name: "dlp", After: func(context.Context, *Call, *mcp.CallToolResult) (*mcp.CallToolResult, error) {
				return nil, errors.New("secret in output")
			}},
		}})
		res, err := h.CallTool(ctx, "s__t", nil, nil)
		if res != nil || !strings.Contains(wantKind(t, err, ErrDenied).Message, "secret in output") {
			t.Fatalf("res = %v, err = %v", res, err)
		}
	})
	t.Run("panic", func(t *testing.T) {
		h := newHub(t, []Server{srv.server("s")}, &Options{Hooks: []Hook{
			{Name: "buggy", Before: func(context.Context, *Call) error { panic("oops") }},
		}})
		_, err := h.CallTool(ctx, "s__t", nil, nil)
		if e := wantKind(t, err, ErrInternal); !strings.Contains(e.Err.Error(), "oops") || !strings.Contains(e.Message, "hook buggy") {
			t.Fatalf("err = %+v", e)
		}
	})
	t.Run("cannot redirect the call", func(t *testing.T) {
		srv2 := newTestServer(t, "s").echoTools("safe", "dangerous")
		h := newHub(t, []Server{srv2.server("s")}, &Options{Policy: NewPolicy(Allow("s/safe")),
			Hooks: []Hook{
				{Before: func(_ context.Context, c *Call) error { c.Tool, c.Server = "dangerous", "x"; return nil }},
			}})
		if _, err := h.CallTool(ctx, "s__safe", nil, nil); err != nil {
			t.Fatal(err)
		}
		if srv2.called("dangerous") != 0 || srv2.called("safe") != 1 {
			t.Fatal("a hook redirected the call")
		}
	})
	// Only the after-hook's call was sent.
	if n := srv.called("t"); n != 1 {
		t.Fatalf("%d calls reached the server", n)
	}
}

func TestValidation(t *testing.T) {
	srv := newTestServer(t, "s")
	srv.AddTool(&mcp.Tool{Name: "read", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer","minimum":1}},"required":["path"]}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil })
	h := newHub(t, []Server{srv.server("s")}, &Options{Validate: true})
	ctx := context.Background()
	ts, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{}, []string{"Invalid arguments for s__read", "path"}},
		{map[string]any{"path": 3}, []string{"path", "string"}},
		{map[string]any{"path": "p", "limit": 0}, []string{"limit", "minimum"}},
		{map[string]any{"path": "p", "limit": 1.5}, []string{"limit", "integer"}},
	} {
		_, err := h.CallTool(ctx, "s__read", tt.args, &CallOptions{ToolSet: ts})
		e := wantKind(t, err, ErrInvalidArguments)
		for _, w := range tt.want {
			if !strings.Contains(e.Message, w) {
				t.Errorf("%v: message %q lacks %q", tt.args, e.Message, w)
			}
		}
	}
	if srv.called("read") != 0 {
		t.Fatal("an invalid call was sent")
	}
	if _, err := h.CallTool(ctx, "s__read", map[string]any{"path": "p", "limit": 2}, &CallOptions{ToolSet: ts}); err != nil {
		t.Fatal(err)
	}
	// The schema is compiled once per tool set.
	tool, _ := ts.Lookup("s__read")
	v := tool.validator
	if v == nil {
		t.Fatal("no compiled schema")
	}
	h.CallTool(ctx, "s__read", map[string]any{}, &CallOptions{ToolSet: ts})
	if tool.validator != v {
		t.Fatal("the schema was compiled again")
	}
	// A schema the validator cannot compile is left to the server.
	bad := &Tool{Tool: &mcp.Tool{Name: "x", InputSchema: map[string]any{"type": "object", "$ref": "https://example.com/remote.json"}}}
	if err := bad.validate(map[string]any{}); err != nil {
		t.Fatalf("uncompilable schema: %v", err)
	}
}

func TestApproval(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	ctx := context.Background()
	answer := Approve()
	var asked []*Call
	h := newHub(t, []Server{srv.server("s")}, &Options{Policy: NewPolicy(Ask("*")),
		Approver: func(_ context.Context, req ApprovalRequest) Approval {
			asked = append(asked, req.Call)
			return answer
		}})
	call := func() error {
		_, err := h.CallTool(ctx, "s__t", map[string]any{"a": 1}, &CallOptions{Principal: "alice", Taint: []string{"web"}, Assigns: map[string]any{"k": "v"}})
		return err
	}
	if err := call(); err != nil || srv.called("t") != 1 {
		t.Fatalf("allow: %v", err)
	}
	c := asked[0]
	if c.Principal != "alice" || !slices.Equal(c.Taint, []string{"web"}) || c.Assigns["k"] != "v" || c.Args["a"] != 1 || c.Def == nil || c.Server != "s" || c.Tool != "t" {
		t.Fatalf("the approver saw %+v", c)
	}

	answer = Reject("not during the freeze")
	e := wantKind(t, call(), ErrDenied)
	if e.Halt || e.Message != "The call to s__t was denied: not during the freeze." {
		t.Fatalf("deny: %+v", e)
	}
	answer = Approval{} // the zero value denies, without a reason
	if e := wantKind(t, call(), ErrDenied); e.Message != "The call to s__t was denied." {
		t.Fatalf("zero approval: %q", e.Message)
	}
	answer = RejectAndHalt("stop everything")
	e = wantKind(t, call(), ErrDenied)
	if !e.Halt || !strings.Contains(e.Message, "stop everything") || !errors.Is(e, ErrDenied) {
		t.Fatalf("halt: %+v", e)
	}
	if srv.called("t") != 1 {
		t.Fatal("a denied call was sent")
	}

	t.Run("no approver", func(t *testing.T) {
		h := newHub(t, []Server{srv.server("s")}, &Options{Policy: NewPolicy(Ask("*"))})
		_, err := h.CallTool(ctx, "s__t", nil, nil)
		e := wantKind(t, err, ErrApprovalRequired)
		if !strings.Contains(e.Message, "needs approval") || !errors.Is(err, ErrApprovalRequired) {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("policy deny", func(t *testing.T) {
		h := newHub(t, []Server{srv.server("s")}, &Options{Policy: NewPolicy(Deny("s/t"), Allow("*"))})
		_, err := h.CallTool(ctx, "s__t", nil, nil)
		if e := wantKind(t, err, ErrDenied); e.Message != "The policy does not allow calling s__t." {
			t.Fatalf("%q", e.Message)
		}
		h2 := newHub(t, []Server{srv.server("s")}, &Options{Policy: NewPolicy(Allow("s/other"))})
		_, err = h2.CallTool(ctx, "s__t", nil, nil)
		if e := wantKind(t, err, ErrDenied); !strings.Contains(e.Message, "no rule allows it") {
			t.Fatalf("%q", e.Message)
		}
	})
	t.Run("panicking approver", func(t *testing.T) {
		h := newHub(t, []Server{srv.server("s")}, &Options{Policy: NewPolicy(Ask("*")),
			Approver: func(context.Context, ApprovalRequest) Approval { panic("approver bug") }})
		_, err := h.CallTool(ctx, "s__t", nil, nil)
		wantKind(t, err, ErrInternal)
	})
	if srv.called("t") != 1 {
		t.Fatal("a denied call was sent")
	}
}

func TestHalt(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	halt := make(chan struct{})
	close(halt)
	approverCalled := false
	for _, p := range []*Policy{AllowAll(), NewPolicy(Ask("*"))} {
		h := newHub(t, []Server{srv.server("s")}, &Options{Policy: p,
			Approver: func(context.Context, ApprovalRequest) Approval { approverCalled = true; return Approve() }})
		_, err := h.CallTool(context.Background(), "s__t", nil, &CallOptions{Halt: halt})
		if e := wantKind(t, err, ErrHalted); !errors.Is(e, ErrHalted) || !strings.Contains(e.Message, "halted") {
			t.Fatalf("%+v", e)
		}
	}
	if srv.totalCalls() != 0 || approverCalled {
		t.Fatal("a halted call went on")
	}
	// An open channel does not halt.
	h := newHub(t, []Server{srv.server("s")}, &Options{})
	if _, err := h.CallTool(context.Background(), "s__t", nil, &CallOptions{Halt: make(chan struct{})}); err != nil {
		t.Fatal(err)
	}
}

func TestProgressAndMeta(t *testing.T) {
	srv := newTestServer(t, "s")
	got := make(chan Progress, 10)
	tokens := make(chan any, 2) // each call's progress token, as the handler saw it
	srv.AddTool(&mcp.Tool{Name: "long", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			token := req.Params.GetProgressToken()
			tokens <- token
			if token == nil {
				return textResult("no progress"), nil
			}
			for i := 1; i <= 3; i++ {
				err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)})
				if err != nil {
					return nil, err
				}
			}
			// Wait until the client has seen them: notifications are
			// handled apart from the response, which could overtake them.
			deadline := time.Now().Add(30 * time.Second)
			for len(got) < 3 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			return textResult("done"), nil
		})
	h := newHub(t, []Server{srv.server("s")}, &Options{})
	res, err := h.CallTool(context.Background(), "s__long", nil, &CallOptions{
		Meta:     mcp.Meta{"trace_id": "abc123"},
		Progress: func(_ *Call, p Progress) { got <- p },
	})
	if err != nil || resultText(res) != "done" {
		t.Fatalf("res = %v, err = %v", res, err)
	}
	if token, _ := (<-tokens).(string); !strings.HasPrefix(token, "conduit-") {
		t.Fatalf("progress token %#v", token)
	}
	// Progress is delivered on a goroutine of its own: the channel is
	// read, not closed, as that goroutine may still hold it.
	var ps []Progress
	for range 3 {
		select {
		case p := <-got:
			ps = append(ps, p)
		case <-time.After(10 * time.Second):
			t.Fatalf("progress = %v, want 3", ps)
		}
	}
	want := []Progress{{1, 3, "step 1"}, {2, 3, "step 2"}, {3, 3, "step 3"}}
	if !slices.Equal(ps, want) {
		t.Fatalf("progress = %v, want %v", ps, want)
	}
	srv.mu.Lock()
	meta := srv.lastMeta
	srv.mu.Unlock()
	if meta["trace_id"] != "abc123" {
		t.Fatalf("_meta = %v", meta)
	}
	// A call without Progress sends no token, and the caller's Meta map is
	// not changed by the SDK's own keys.
	m := mcp.Meta{"k": "v"}
	res, err = h.CallTool(context.Background(), "s__long", nil, &CallOptions{Meta: m})
	if err != nil || resultText(res) != "no progress" {
		t.Fatalf("res = %v, err = %v", res, err)
	}
	if token := <-tokens; token != nil || len(m) != 1 {
		t.Fatalf("token = %v, meta = %v", token, m)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	srv := newTestServer(t, "s")
	canceled := make(chan error, 10)
	started := make(chan struct{}, 10)
	srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-ctx.Done()
			canceled <- ctx.Err()
			return nil, ctx.Err()
		})
	srv.AddTool(&mcp.Tool{Name: "rpcerr", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, jsonRPCError(-32000, "the database is on fire")
		})
	srv.AddTool(&mcp.Tool{Name: "iserr", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "file not found"}}}, nil
		})
	h := newHub(t, []Server{srv.server("s")}, &Options{RequestTimeout: time.Minute})
	ctx := context.Background()

	t.Run("request timeout", func(t *testing.T) {
		start := time.Now()
		_, err := h.CallTool(ctx, "s__hang", nil, &CallOptions{RequestTimeout: 100 * time.Millisecond})
		e := wantKind(t, err, ErrTimeout)
		if time.Since(start) > 5*time.Second {
			t.Fatal("the timeout did not end the call")
		}
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrTimeout) || errors.Is(err, ErrCanceled) {
			t.Fatalf("errors.Is on %v", err)
		}
		if !strings.Contains(e.Message, "timed out after 100ms") {
			t.Fatalf("message %q", e.Message)
		}
		select {
		case err := <-canceled:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("server ctx err = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the server never saw notifications/cancelled")
		}
	})
	t.Run("hub default timeout", func(t *testing.T) {
		h := newHub(t, []Server{srv.server("s")}, &Options{RequestTimeout: 50 * time.Millisecond})
		_, err := h.CallTool(ctx, "s__hang", nil, nil)
		wantKind(t, err, ErrTimeout)
		waitCanceled(t, canceled)
	})
	t.Run("caller deadline", func(t *testing.T) {
		// Listed beforehand: the deadline must find the call at the
		// server, however slowly the machine lists.
		ts, err := h.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, err = h.CallTool(dctx, "s__hang", nil, &CallOptions{ToolSet: ts})
		wantKind(t, err, ErrTimeout)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		waitCanceled(t, canceled)
	})
	t.Run("caller cancel", func(t *testing.T) {
		for len(started) > 0 {
			<-started // the earlier subtests' calls
		}
		cctx, cancel := context.WithCancel(ctx)
		go func() { <-started; cancel() }()
		_, err := h.CallTool(cctx, "s__hang", nil, nil)
		wantKind(t, err, ErrCanceled)
		if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCanceled) {
			t.Fatal(err)
		}
		select {
		case err := <-canceled:
			if !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the server never saw notifications/cancelled")
		}
	})
	t.Run("JSON-RPC error", func(t *testing.T) {
		_, err := h.CallTool(ctx, "s__rpcerr", nil, nil)
		e := wantKind(t, err, ErrServerError)
		if !strings.Contains(e.Message, "the database is on fire") || !errors.Is(err, ErrServerError) {
			t.Fatalf("%+v", e)
		}
		// The session survives a JSON-RPC error.
		if st := h.Status()[0]; st.State != StateUp {
			t.Fatalf("status %+v", st)
		}
	})
	t.Run("isError result", func(t *testing.T) {
		res, err := h.CallTool(ctx, "s__iserr", nil, nil)
		if err != nil || !res.IsError || resultText(res) != "file not found" {
			t.Fatalf("res = %+v, err = %v", res, err)
		}
	})
	t.Run("unknown to the server", func(t *testing.T) {
		ts := NewToolSet(&ToolSetOptions{Namespace: true}, ServerTools{Server: "s", Tools: tools("ghost")})
		_, err := h.CallTool(ctx, "s__ghost", nil, &CallOptions{ToolSet: ts})
		// The hub's listing does not hold it: answered without asking.
		wantKind(t, err, ErrUnknownTool)
	})
	t.Run("tool set of another source", func(t *testing.T) {
		ts := NewToolSet(&ToolSetOptions{Namespace: true}, ServerTools{Server: "elsewhere", Tools: tools("t")})
		_, err := h.CallTool(ctx, "elsewhere__t", nil, &CallOptions{ToolSet: ts})
		wantKind(t, err, ErrUnknownTool)
	})
}

func TestCallbacksIgnoringContext(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	release := make(chan struct{})
	defer close(release)
	// sleepy lasts far longer than the bounds below.
	sleepy := func(ctx context.Context) {
		select {
		case <-release:
		case <-time.After(time.Minute):
		}
	}
	// Each hub's tools are listed beforehand, so that the deadline finds
	// the call in the callback, however slowly the machine lists.
	listed := func(t *testing.T, h *Hub) *CallOptions {
		ts, err := h.ListTools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return &CallOptions{ToolSet: ts}
	}
	for _, tt := range []struct {
		name string
		opts Options
		who  string
	}{
		{"approver", Options{Policy: NewPolicy(Ask("*")), Approver: func(ctx context.Context, _ ApprovalRequest) Approval { sleepy(ctx); return Approve() }}, "the approver"},
		{"before hook", Options{Hooks: []Hook{{Name: "slow", Before: func(ctx context.Context, _ *Call) error { sleepy(ctx); return nil }}}}, "hook slow"},
		{"after hook", Options{Hooks: []Hook{{Name: "slow", After: func(ctx context.Context, _ *Call, r *mcp.CallToolResult) (*mcp.CallToolResult, error) {
			sleepy(ctx)
			return r, nil
		}}}}, "hook slow"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHub(t, []Server{srv.server("s")}, &tt.opts)
			o := listed(t, h)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			_, err := h.CallTool(ctx, "s__t", nil, o)
			elapsed := time.Since(start)
			e := wantKind(t, err, ErrTimeout)
			if elapsed > 20*time.Second {
				t.Fatalf("answered after %v", elapsed)
			}
			if !strings.Contains(e.Message, "waiting for "+tt.who) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%+v", e)
			}
		})
		// The call's own time limit bounds it the same way, and its
		// message says how long the call had; so does the hub's default.
		for _, limit := range []struct {
			name      string
			call, hub time.Duration
		}{{"CallOptions", time.Second, 0}, {"Options", 0, time.Second}} {
			t.Run(tt.name+"/"+limit.name, func(t *testing.T) {
				o := tt.opts
				o.CallTimeout = limit.hub
				h := newHub(t, []Server{srv.server("s")}, &o)
				co := listed(t, h)
				co.CallTimeout = limit.call
				_, err := h.CallTool(context.Background(), "s__t", nil, co)
				e := wantKind(t, err, ErrTimeout)
				want := "The call to s__t timed out after 1s, waiting for " + tt.who + "."
				if e.Message != want || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("%q, want %q", e.Message, want)
				}
			})
		}
	}
}

// endedError tells a call's own limit from the caller's deadline and
// from a cancellation.
func TestContextError(t *testing.T) {
	tool := &Tool{Tool: &mcp.Tool{Name: "t"}, Server: "s", Exposed: "s__t"}
	limited, cancel := (&core{}).withLimit(context.Background(), time.Nanosecond)
	defer cancel()
	<-limited.Done()
	deadline, cancel2 := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel2()
	<-deadline.Done()
	canceled, cancel3 := context.WithCancel(context.Background())
	cancel3()
	for _, tc := range []struct {
		ctx   context.Context
		t     *Tool
		limit time.Duration
		kind  *Error
		msg   string
	}{
		{limited, tool, 0, ErrTimeout, "The call to s__t timed out after 1ns."},
		{deadline, tool, 0, ErrTimeout, "The call to s__t ran out of time."},
		{deadline, tool, time.Minute, ErrTimeout, "The call to s__t timed out after 1m0s."},
		{canceled, tool, 0, ErrCanceled, "The call to s__t was canceled."},
		{canceled, nil, 0, ErrCanceled, "The call was canceled."},
		{context.Background(), tool, 0, ErrInternal, "The call to s__t failed."},
	} {
		e := endedError(tc.ctx, tc.t, tc.limit, errors.New("cause"))
		if e.Kind != tc.kind || e.Message != tc.msg {
			t.Errorf("%v: %v %q, want %v %q", tc.ctx, e.Kind, e.Message, tc.kind, tc.msg)
		}
		if tc.kind == ErrTimeout && !errors.Is(e, context.DeadlineExceeded) || tc.kind == ErrCanceled && !errors.Is(e, context.Canceled) {
			t.Errorf("%q does not match its context error", e.Message)
		}
	}
}

func TestErrorFormatting(t *testing.T) {
	e := &Error{Kind: ErrDenied, Server: "gh", Tool: "delete", Message: "No."}
	if e.Error() != "conduit: denied (gh/delete): No." {
		t.Fatal(e.Error())
	}
	if (&Error{Kind: ErrUnknownTool, Message: "x"}).Error() != "conduit: unknown_tool: x" {
		t.Fatal("no server")
	}
	if (&Error{Kind: ErrUnavailable, Server: "gh", Err: errors.New("boom")}).Error() != "conduit: unavailable (gh): boom" {
		t.Fatal("message from cause")
	}
	wrapped := fmt.Errorf("ctx: %w", e)
	if k := (*Error)(nil); !errors.As(wrapped, &k) || k.Kind != ErrDenied {
		t.Fatal("errors.As")
	}
	if !errors.Is(wrapped, ErrDenied) || errors.Is(wrapped, ErrTimeout) {
		t.Fatal("errors.Is")
	}
	// Only sentinels match by kind.
	if errors.Is(e, &Error{Kind: ErrDenied, Server: "gh"}) {
		t.Fatal("a non-sentinel matched")
	}
	names := map[string]bool{}
	for _, k := range []*Error{ErrInternal, ErrUnknownTool, ErrInvalidArguments, ErrDenied, ErrApprovalRequired,
		ErrHalted, ErrTimeout, ErrCanceled, ErrUnavailable, ErrServerError, ErrLimit, ErrDeferred} {
		if names[k.String()] || k.Kind != k || !errors.Is(&Error{Kind: k, Message: "x"}, k) {
			t.Errorf("kind %q is not a sentinel of its own", k.String())
		}
		names[k.String()] = true
	}
	// No kind, or a kind that is no sentinel, reads as internal.
	if (&Error{}).String() != "internal" || (&Error{Kind: e}).String() != "internal" || !errors.Is(&Error{}, ErrInternal) {
		t.Fatal("unknown kind")
	}
}

func TestClosedHub(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	h := newHub(t, []Server{srv.server("s")}, &Options{})
	ts, _ := h.ListTools(context.Background())
	h.Close()
	h.Close() // idempotent
	if _, err := h.ListTools(context.Background()); err == nil {
		t.Fatal("ListTools on a closed hub")
	}
	_, err := h.CallTool(context.Background(), "s__t", nil, nil)
	wantKind(t, err, ErrUnavailable)
	_, err = h.CallTool(context.Background(), "s__t", nil, &CallOptions{ToolSet: ts})
	wantKind(t, err, ErrUnavailable)
	if st := h.Status()[0]; st.State != StateClosed {
		t.Fatalf("status %+v", st)
	}
}

func TestCloseWithCallInFlight(t *testing.T) {
	srv := newTestServer(t, "s")
	started := make(chan struct{})
	srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	h, err := NewHub(context.Background(), []Server{srv.server("s")}, &Options{Policy: AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := h.CallTool(context.Background(), "s__hang", nil, nil)
		errc <- err
	}()
	<-started
	done := make(chan struct{})
	go func() { h.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waits for a call that never ends")
	}
	e := wantKind(t, <-errc, ErrUnavailable)
	if !strings.Contains(e.Message, "closed") {
		t.Fatalf("%q", e.Message)
	}
}

func waitCanceled(t *testing.T, canceled <-chan error) {
	t.Helper()
	select {
	case err := <-canceled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("server ctx err = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server never saw notifications/cancelled")
	}
}

// A before-hook that returns after the call was answered on ctx's end must
// not get the call sent, and the trace must not see its late rewrites.
// So with an after-hook too.
func TestLateHookSendsNothing(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("after=%v", after), func(t *testing.T) {
			srv := newTestServer(t, "s").echoTools("t")
			release := make(chan struct{})
			returned := make(chan struct{})
			var traced atomic.Pointer[Call]
			hook := Hook{Name: "late", Before: func(_ context.Context, c *Call) error {
				defer close(returned)
				<-release
				c.Args["rewritten"] = true
				return nil
			}}
			if after {
				hook.After = func(_ context.Context, _ *Call, r *mcp.CallToolResult) (*mcp.CallToolResult, error) { return r, nil }
			}
			h := newHub(t, []Server{srv.server("s")}, &Options{Trace: &Trace{CallDone: func(i CallDoneInfo) { traced.Store(i.Call) }},
				Hooks: []Hook{hook}})
			// Listed beforehand: the deadline must find the call in its hook,
			// which would otherwise never run, and returned never close.
			ts, err := h.ListTools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_, err = h.CallTool(ctx, "s__t", map[string]any{"a": 1}, &CallOptions{ToolSet: ts})
			wantKind(t, err, ErrTimeout)
			c := traced.Load()
			if c == nil || c.Args["a"] != 1 {
				t.Fatalf("traced %+v", c)
			}
			close(release)
			<-returned
			// A sent call would be counted before Close returns.
			h.Close()
			if n := srv.called("t"); n != 0 {
				t.Fatalf("the server got %d calls", n)
			}
			if _, ok := c.Args["rewritten"]; ok {
				t.Fatal("the trace saw the late rewrite")
			}
		})
	}
}

// An after-hook that overruns is named in the error. The trace sees the
// call as the before-hooks left it, and the call was sent once.
func TestLateAfterHook(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	release := make(chan struct{})
	defer close(release)
	var traced atomic.Pointer[Call]
	h := newHub(t, []Server{srv.server("s")}, &Options{Trace: &Trace{CallDone: func(i CallDoneInfo) { traced.Store(i.Call) }},
		Hooks: []Hook{{Name: "slow",
			Before: func(_ context.Context, c *Call) error { c.Args["b"] = 2; return nil },
			After: func(_ context.Context, _ *Call, r *mcp.CallToolResult) (*mcp.CallToolResult, error) {
				<-release
				return r, nil
			}}}})
	ts, err := h.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = h.CallTool(ctx, "s__t", map[string]any{"a": 1}, &CallOptions{ToolSet: ts})
	if e := wantKind(t, err, ErrTimeout); !strings.Contains(e.Message, "waiting for hook slow") {
		t.Fatalf("%+v", e)
	}
	if c := traced.Load(); c == nil || c.Args["a"] != 1 || c.Args["b"] != 2 {
		t.Fatalf("traced %+v", c)
	}
	if n := srv.called("t"); n != 1 {
		t.Fatalf("the server got %d calls", n)
	}
}

// Inline hooks run on the caller's goroutine: one that overruns ctx holds
// the call until it returns, and still gets nothing sent. A stretch with any
// hook that is not inline stays guarded.
func TestInlineHooks(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	t.Run("results", func(t *testing.T) {
		var before, after atomic.Int32
		h := newHub(t, []Server{srv.server("s")}, &Options{Hooks: []Hook{{
			Name: "count", Inline: true,
			Before: func(_ context.Context, c *Call) error { before.Add(1); c.Args["seen"] = true; return nil },
			After: func(_ context.Context, _ *Call, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
				after.Add(1)
				return textResult("replaced"), nil
			},
		}}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		args := map[string]any{"a": 1}
		res, err := h.CallTool(ctx, "s__t", args, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != "replaced" || before.Load() != 1 || after.Load() != 1 {
			t.Fatalf("result %q, before %d, after %d", got, before.Load(), after.Load())
		}
		if _, ok := args["seen"]; ok {
			t.Fatal("an inline hook changed the caller's map")
		}
	})
	t.Run("overrun holds the call", func(t *testing.T) {
		var returned atomic.Bool
		h := newHub(t, []Server{srv.server("s")}, &Options{Hooks: []Hook{{
			Name: "slow", Inline: true,
			// It returns only past the call's deadline.
			Before: func(ctx context.Context, _ *Call) error {
				select {
				case <-ctx.Done():
				case <-time.After(time.Minute):
				}
				returned.Store(true)
				return nil
			},
		}}})
		// Listed beforehand, so that the deadline finds the call in its
		// hook, however slowly the machine lists.
		ts, err := h.ListTools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err = h.CallTool(ctx, "s__t", nil, &CallOptions{ToolSet: ts})
		wantKind(t, err, ErrTimeout)
		if !returned.Load() {
			t.Fatal("the call was answered before its inline hook returned")
		}
	})
	t.Run("mixed stays guarded", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		h := newHub(t, []Server{srv.server("s")}, &Options{Hooks: []Hook{
			{Name: "fast", Inline: true, Before: func(context.Context, *Call) error { return nil }},
			{Name: "stuck", Before: func(context.Context, *Call) error { <-release; return nil }},
		}})
		// Listed beforehand: a deadline that came during the listing would
		// be answered as a timeout of the listing, not of the hook.
		ts, err := h.ListTools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err = h.CallTool(ctx, "s__t", nil, &CallOptions{ToolSet: ts})
		if e := wantKind(t, err, ErrTimeout); !strings.Contains(e.Message, "hook stuck") {
			t.Fatalf("%q", e.Message)
		}
	})
	if n := srv.called("t"); n != 1 {
		t.Fatalf("%d calls reached the server, want the first subtest's", n)
	}
}
