package conduit

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// localLookup is a tool the test answers itself, as the adapters answer
// search_tools.
func localLookup(answered *atomic.Int32) *LocalTool {
	t := &Tool{
		Tool: &mcp.Tool{Name: "lookup", InputSchema: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"query": map[string]any{"type": "string"}},
			"required":             []any{"query"},
			"additionalProperties": false,
		}},
		Exposed: "lookup",
		Server:  "local",
	}
	return &LocalTool{Tool: t, Answer: func(_ context.Context, c *Call) (*mcp.CallToolResult, error) {
		answered.Add(1)
		return textResult("looked up " + c.Args["query"].(string)), nil
	}}
}

func TestCallLocalGoverned(t *testing.T) {
	ctx := context.Background()
	srv := newTestServer(t, "gh").echoTools("get_issue")
	var answered atomic.Int32
	lt := localLookup(&answered)
	var mu sync.Mutex
	var approved, hooked []string
	var decided []StepInfo
	var done []CallDoneInfo
	hub := newHub(t, []Server{srv.server("gh")}, &Options{Policy: NewPolicy(
		Deny("local/lookup").When(Principal("guest")),
		Ask("local/lookup").When(Principal("careful")),
		Allow("local/*", "gh/*"),
	),
		LocalServers: []string{"local"},
		Approver: func(_ context.Context, req ApprovalRequest) Approval {
			mu.Lock()
			defer mu.Unlock()
			approved = append(approved, req.Call.Server+"/"+req.Call.Tool)
			return Reject("not now")
		},
		Hooks: []Hook{{Name: "rewrite", Before: func(_ context.Context, c *Call) error {
			mu.Lock()
			defer mu.Unlock()
			hooked = append(hooked, c.Exposed)
			if q, _ := c.Args["query"].(string); q == "secret" {
				c.Args["query"] = "redacted"
			}
			return nil
		}}},
		Validate: true,
		Trace: &Trace{
			Decided:  func(i StepInfo) { mu.Lock(); decided = append(decided, i); mu.Unlock() },
			CallDone: func(i CallDoneInfo) { mu.Lock(); done = append(done, i); mu.Unlock() },
		}})

	// Allowed: answered locally, the before-hook's rewrite seen, nothing
	// sent to the server.
	res, err := hub.CallLocal(ctx, lt, map[string]any{"query": "secret"}, &CallOptions{ID: "call_1", Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "looked up redacted" {
		t.Errorf("answer %q", got)
	}
	if n := srv.totalCalls(); n != 0 {
		t.Errorf("the server received %d calls", n)
	}
	// Denied for a principal: never answered.
	_, err = hub.CallLocal(ctx, lt, map[string]any{"query": "x"}, &CallOptions{Principal: "guest"})
	if !errors.Is(err, ErrDenied) {
		t.Errorf("guest: %v, want denied", err)
	}
	// Ask: the approver decides (and rejects).
	_, err = hub.CallLocal(ctx, lt, map[string]any{"query": "x"}, &CallOptions{Principal: "careful"})
	if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "not now") {
		t.Errorf("careful: %v, want the approver's denial", err)
	}
	// Validation against the tool's schema, then arguments that are not
	// an object: answered, not answered by the tool.
	_, err = hub.CallLocal(ctx, lt, map[string]any{"query": 3}, nil)
	if !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("bad query: %v, want invalid arguments", err)
	}
	_, err = hub.CallLocal(ctx, lt, "null", nil)
	if !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("null arguments: %v, want invalid arguments", err)
	}
	if n := answered.Load(); n != 1 {
		t.Errorf("the tool answered %d calls, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(approved, ",") != "local/lookup" {
		t.Errorf("approver asked about %v", approved)
	}
	if len(hooked) != 2 { // alice's and the bad query's (validation follows the hooks)
		t.Errorf("before-hooks ran for %v", hooked)
	}
	if len(decided) != 4 || decided[0].Call.Server != "local" || decided[0].Call.Tool != "lookup" {
		t.Errorf("Decided: %+v", decided)
	}
	if len(done) != 5 || done[0].Call.ID != "call_1" || done[0].Err != nil {
		t.Errorf("CallDone: %+v", done)
	}
}

func TestCallLocalFailures(t *testing.T) {
	ctx := context.Background()
	srv := newTestServer(t, "gh").echoTools("get_issue")
	// The time limit is every case's: the one that ignores its context
	// reaches it, and no other may.
	cl := newClient(t, srv.server("gh"), &Options{CallTimeout: 2 * time.Second})
	def := &Tool{Tool: &mcp.Tool{Name: "lookup"}, Exposed: "lookup", Server: "local"}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cases := []struct {
		name   string
		answer func(context.Context, *Call) (*mcp.CallToolResult, error)
		kind   *Error
	}{
		{"panic", func(context.Context, *Call) (*mcp.CallToolResult, error) { panic("boom") }, ErrInternal},
		{"no result", func(context.Context, *Call) (*mcp.CallToolResult, error) { return nil, nil }, ErrInternal},
		{"plain error", func(context.Context, *Call) (*mcp.CallToolResult, error) { return nil, errors.New("disk full") }, ErrInternal},
		{"own error", func(context.Context, *Call) (*mcp.CallToolResult, error) {
			return nil, &Error{Kind: ErrUnavailable, Message: "Not now."}
		}, ErrUnavailable},
		{"ignores its context", func(context.Context, *Call) (*mcp.CallToolResult, error) {
			<-release
			return textResult("late"), nil
		}, ErrTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := cl.CallLocal(ctx, &LocalTool{Tool: def, Answer: tc.answer}, nil, nil)
			if !errors.Is(err, tc.kind) {
				t.Errorf("%v, want kind %v", err, tc.kind)
			}
			if tc.kind == ErrTimeout && time.Since(start) > 30*time.Second {
				t.Errorf("answered after %v: the call's time limit did not hold", time.Since(start))
			}
		})
	}
	if _, err := cl.CallLocal(ctx, &LocalTool{Tool: def}, nil, nil); err == nil {
		t.Error("a local tool without an answer was called")
	}
	if _, err := cl.CallLocal(ctx, nil, nil, nil); err == nil {
		t.Error("a nil local tool was called")
	}
}

func TestOffersLocal(t *testing.T) {
	srv := newTestServer(t, "gh").echoTools("get_issue")
	def := &Tool{Tool: &mcp.Tool{Name: "lookup"}, Exposed: "lookup", Server: "local"}
	hub := newHub(t, []Server{srv.server("gh")}, &Options{Policy: NewPolicy(
		Deny("local/*").When(Principal("guest")),
		Deny("local/lookup").When(Tainted("gh")),
		Ask("local/*"),
		Allow("gh/*"),
	), LocalServers: []string{"local"}})
	for _, tc := range []struct {
		opts *ListOptions
		want bool
	}{
		{nil, true}, // ask is offered
		{&ListOptions{Principal: "guest"}, false},
		{&ListOptions{Taint: []string{"gh"}}, false},
		{&ListOptions{Principal: "alice", Taint: []string{"docs"}}, true},
	} {
		if got := hub.OffersLocal(def, tc.opts); got != tc.want {
			t.Errorf("OffersLocal(%+v) = %v, want %v", tc.opts, got, tc.want)
		}
	}
	// No rule matches: denied, as any tool would be.
	strict := newHub(t, []Server{newTestServer(t, "gh").echoTools("x").server("gh")}, &Options{Policy: NewPolicy(Allow("gh/*")), LocalServers: []string{"local"}})
	if strict.OffersLocal(def, nil) {
		t.Error("a policy with no rule for local/lookup offers it")
	}
	// A client without a policy offers everything.
	cl := newClient(t, newTestServer(t, "gh").echoTools("x").server("gh"), nil)
	if !cl.OffersLocal(def, nil) || cl.OffersLocal(nil, nil) {
		t.Error("a client without a policy: OffersLocal")
	}
}

func TestToolSetOf(t *testing.T) {
	full := NewToolSet(&ToolSetOptions{Namespace: true},
		ServerTools{Server: "a", Tools: []*mcp.Tool{{Name: "one"}, {Name: "two"}, {Name: "three"}}},
		ServerTools{Server: "b", Tools: []*mcp.Tool{{Name: "one"}}})
	one, _ := full.Lookup("a__one")
	three, _ := full.Lookup("a__three")
	bone, _ := full.Lookup("b__one")
	ts := ToolSetOf(three, nil, bone, one, three)
	var got []string
	for tl := range ts.All() {
		got = append(got, tl.Exposed)
	}
	if strings.Join(got, ",") != "a__three,b__one,a__one" {
		t.Errorf("ToolSetOf order: %v", got)
	}
	if tl, ok := ts.Lookup("b__one"); !ok || tl != bone {
		t.Error("Lookup does not give the tool itself")
	}
	if name, ok := ts.ExposedName("a", "three"); !ok || name != "a__three" {
		t.Errorf("ExposedName: %q %v", name, ok)
	}
	// The same exposed name twice: both left out and reported.
	dup := &Tool{Tool: &mcp.Tool{Name: "other"}, Exposed: "a__one", Server: "c"}
	ts = ToolSetOf(one, dup, three)
	if ts.Len() != 1 || slices.Collect(ts.All())[0] != three {
		t.Errorf("collision kept %d tools", ts.Len())
	}
	if sk := ts.Skipped(); len(sk) != 2 || sk[0].Reason != SkipCollision {
		t.Errorf("collision reported as %+v", sk)
	}
	if ToolSetOf().Len() != 0 {
		t.Error("an empty ToolSetOf is not empty")
	}
}
