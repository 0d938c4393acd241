package adapters_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func listFor(t *testing.T, src conduit.Source, p adapters.Provider) *adapters.Listing {
	t.Helper()
	l, err := adapters.Tools(context.Background(), src, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func run(t *testing.T, src conduit.Source, p adapters.Provider, response any, o *adapters.ExecOptions) *adapters.Execution {
	t.Helper()
	exec, err := adapters.ExecuteToolCalls(context.Background(), src, p, response, o)
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

// resultText is the text of an answer, whatever the provider.
func resultText(p adapters.Provider, answer map[string]any) string {
	switch p {
	case adapters.Anthropic:
		var parts []string
		for _, b := range jsonv.List(answer["content"]) {
			parts = append(parts, jsonv.String(jsonv.Object(b)["text"]))
		}
		return strings.Join(parts, "\n")
	case adapters.OpenAIChat:
		return jsonv.String(answer["content"])
	case adapters.OpenAIResponses:
		return jsonv.String(answer["output"])
	case adapters.Bedrock:
		var parts []string
		for _, b := range jsonv.List(jsonv.Object(answer["toolResult"])["content"]) {
			parts = append(parts, jsonv.String(jsonv.Object(b)["text"]))
		}
		return strings.Join(parts, "\n")
	default:
		r := jsonv.Object(jsonv.Object(answer["functionResponse"])["response"])
		if e, ok := r["error"]; ok {
			return jsonv.String(e)
		}
		return fmt.Sprint(r["output"])
	}
}

func calls(n int, name string, args func(i int) any) []scripted {
	var out []scripted
	for i := range n {
		out = append(out, scripted{id: fmt.Sprintf("call_%d", i), name: name, args: args(i)})
	}
	return out
}

func TestMaxConcurrency(t *testing.T) {
	hub, l, _ := labHub(t, hubOpts{noGone: true})
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			l.maxInflight.Store(0)
			l.countStarted.Store(0)
			listing := listFor(t, hub, p)
			// Each call holds until 3 are in flight (or 30 s): the limit is
			// reached, and never passed.
			response := script(p, calls(8, "lab__count", func(int) any { return map[string]any{"hold": 3, "total": 8} })...)
			exec := run(t, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{MaxConcurrency: 3}})
			if got := l.maxInflight.Load(); got != 3 {
				t.Errorf("at most %d calls were in flight, want 3", got)
			}
			for i, e := range exec.Errors {
				if e != nil {
					t.Errorf("call %d: %v", i, e)
				}
			}
		})
	}
}

func TestMaxConcurrencyDefault(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	hub, l, _ := labHub(t, hubOpts{noGone: true})
	listing := listFor(t, hub, adapters.Anthropic)
	response := script(adapters.Anthropic, calls(6, "lab__count", func(int) any { return map[string]any{"hold": 2, "total": 6} })...)
	run(t, hub, adapters.Anthropic, response, &adapters.ExecOptions{ToolSet: listing.ToolSet})
	if got := l.maxInflight.Load(); got != 2 {
		t.Errorf("at most %d calls were in flight with GOMAXPROCS 2, want 2", got)
	}
}

// chainServer's tool "after" answers once the call named by its argument
// "after" has finished, so that calls finish in the order the test
// chooses; finished returns the order in which they did.
func chainServer(t *testing.T) (conduit.Source, func() []string) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "chain", Version: "1"}, nil)
	var mu sync.Mutex
	var order []string
	done := map[string]chan struct{}{}
	doneOf := func(key string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if done[key] == nil {
			done[key] = make(chan struct{})
		}
		return done[key]
	}
	srv.AddTool(&mcp.Tool{Name: "after", InputSchema: obj(map[string]any{"key": str, "after": str}, "key")},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Key, After string }
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			if a.After != "" {
				select {
				case <-doneOf(a.After):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			mu.Lock()
			order = append(order, a.Key)
			mu.Unlock()
			close(doneOf(a.Key))
			return text("finished " + a.Key), nil
		})
	tr, _ := connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := conduit.NewClient(ctx, conduit.Server{ID: "chain", Transport: tr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(order) }
}

// TestAnswersInModelOrder: calls that finish in the reverse of the
// model's order (each waits for the next to finish) are still answered
// in the model's order.
func TestAnswersInModelOrder(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			src, finished := chainServer(t)
			listing := listFor(t, src, p)
			const n = 4
			keys := make([]string, n)
			for i := range n {
				keys[i] = fmt.Sprintf("k%d", i)
			}
			response := script(p, calls(n, "after", func(i int) any {
				a := map[string]any{"key": keys[i]}
				if i < n-1 {
					a["after"] = keys[i+1]
				}
				return a
			})...)
			// A call that waits holds its worker: all must run at once. The
			// time limit only ends the test if they do not.
			exec := run(t, src, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{CallTimeout: time.Minute, MaxConcurrency: n}})
			reversed := slices.Clone(keys)
			slices.Reverse(reversed)
			if got := finished(); !slices.Equal(got, reversed) {
				t.Fatalf("the calls finished in the order %v, want %v", got, reversed)
			}
			ids := answerIDs(p, exec.Results)
			for i, res := range exec.Results {
				if exec.Errors[i] != nil {
					t.Errorf("call %d: %v", i, exec.Errors[i])
				}
				if got, want := ids[i], fmt.Sprintf("call_%d", i); got != want {
					t.Errorf("result %d is keyed by %q, want %q", i, got, want)
				}
				if got, want := resultText(p, res), "finished "+keys[i]; got != want {
					t.Errorf("result %d is %q, want %q", i, got, want)
				}
			}
		})
	}
}

// TestCallTimeout: a call that would last until the test ends is answered
// at its CallTimeout, which the quick call beside it easily meets.
func TestCallTimeout(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			hub, l, _ := labHub(t, hubOpts{noGone: true})
			listing := listFor(t, hub, p)
			response := script(p,
				scripted{id: "call_sleep", name: "lab__sleep", args: map[string]any{}},
				scripted{id: "call_echo", name: "lab__echo", args: map[string]any{"message": "quick"}})
			start := time.Now()
			exec := run(t, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{CallTimeout: 5 * time.Second}})
			if el := time.Since(start); el > time.Minute {
				t.Errorf("took %v", el)
			}
			if !errors.Is(exec.Errors[0], conduit.ErrTimeout) || !errors.Is(exec.Errors[0], context.DeadlineExceeded) {
				t.Errorf("sleep: %v, want a timeout", exec.Errors[0])
			}
			if got := resultText(p, exec.Results[0]); !strings.Contains(got, "lab__sleep timed out after 5s") {
				t.Errorf("sleep answered %q", got)
			}
			if exec.Errors[1] != nil {
				t.Errorf("echo: %v", exec.Errors[1])
			}
			select {
			case <-l.cancelled:
			case <-time.After(30 * time.Second):
				t.Error("the server's handler context was not cancelled")
			}
		})
	}
}

// An approver that ignores its context cannot hold a call past CallTimeout.
func TestCallTimeoutApproverIgnoresContext(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	hub, l, _ := labHub(t, hubOpts{noGone: true, approver: func(context.Context, conduit.ApprovalRequest) conduit.Approval {
		<-stuck
		return conduit.Approve()
	}})
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			listing := listFor(t, hub, p)
			before := len(l.sent())
			response := script(p, scripted{id: "call_deploy", name: "lab__deploy", args: map[string]any{}})
			start := time.Now()
			// The approver is stuck until the test ends.
			exec := run(t, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{CallTimeout: 500 * time.Millisecond}})
			if el := time.Since(start); el > time.Minute {
				t.Errorf("took %v", el)
			}
			if !errors.Is(exec.Errors[0], conduit.ErrTimeout) {
				t.Errorf("got %v, want a timeout", exec.Errors[0])
			}
			if len(l.sent()) != before {
				t.Error("the call was sent")
			}
		})
	}
}

// A Source that ignores its context entirely is still bounded.
type stuckSource struct {
	conduit.Source
	release chan struct{}
}

func (s stuckSource) CallTool(ctx context.Context, name string, args any, o *conduit.CallOptions) (*mcp.CallToolResult, error) {
	<-s.release
	return text("late"), nil
}

func TestCallTimeoutSourceIgnoresContext(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	src := stuckSource{hub, make(chan struct{})}
	defer close(src.release)
	listing := listFor(t, hub, adapters.OpenAIChat)
	response := script(adapters.OpenAIChat, scripted{id: "call_1", name: "lab__echo", args: map[string]any{"message": "x"}})
	start := time.Now()
	// The source is stuck until the test ends.
	exec := run(t, src, adapters.OpenAIChat, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{CallTimeout: 500 * time.Millisecond}})
	if el := time.Since(start); el > time.Minute {
		t.Errorf("took %v", el)
	}
	if got := exec.Results[0]["content"]; got != "Error: The call to lab__echo timed out after 500ms." {
		t.Errorf("answered %q", got)
	}
}

func TestCanceledContext(t *testing.T) {
	hub, l, _ := labHub(t, hubOpts{noGone: true})
	listing := listFor(t, hub, adapters.Gemini)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := len(l.sent())
	exec, err := adapters.ExecuteToolCalls(ctx, hub, adapters.Gemini,
		script(adapters.Gemini, scripted{name: "lab__echo", args: map[string]any{"message": "x"}}),
		&adapters.ExecOptions{ToolSet: listing.ToolSet})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(exec.Errors[0], conduit.ErrCanceled) {
		t.Errorf("got %v, want canceled", exec.Errors[0])
	}
	if len(l.sent()) != before {
		t.Error("a call was sent under a canceled context")
	}
}

// haltSource passes calls to a hub, telling of lab__sleep's Halt channel.
type haltSource struct {
	*conduit.Hub
	halts chan (<-chan struct{})
}

func (s haltSource) CallTool(ctx context.Context, name string, args any, o *conduit.CallOptions) (*mcp.CallToolResult, error) {
	if name == "lab__sleep" {
		s.halts <- o.Halt
	}
	return s.Hub.CallTool(ctx, name, args, o)
}

// With concurrency, a call already under way when another halts the batch
// completes; the calls still queued are answered without being sent. The
// call under way lasts until the halt has landed.
func TestDenyAndHaltConcurrent(t *testing.T) {
	var inflight atomic.Pointer[atomic.Int64]
	halter := func(ctx context.Context, r conduit.ApprovalRequest) conduit.Approval {
		// Halt once the sleeping call is under way at the server.
		for inflight.Load().Load() == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		return conduit.RejectAndHalt("stop")
	}
	hub, l, _ := labHub(t, hubOpts{noGone: true, approver: halter})
	inflight.Store(&l.inflight)
	src := haltSource{hub, make(chan (<-chan struct{}), 1)}
	testDone := make(chan struct{})
	defer close(testDone)
	go func() {
		select {
		case halt := <-src.halts:
			select {
			case <-halt:
				l.releaseOnce.Do(func() { close(l.release) })
			case <-testDone:
			}
		case <-testDone:
		}
	}()
	p := adapters.OpenAIResponses
	listing := listFor(t, hub, p)
	response := script(p,
		scripted{id: "call_sleep", name: "lab__sleep", args: map[string]any{}},
		scripted{id: "call_deploy", name: "lab__deploy", args: map[string]any{}},
		scripted{id: "call_a", name: "lab__echo", args: map[string]any{"message": "a"}},
		scripted{id: "call_b", name: "lab__echo", args: map[string]any{"message": "b"}})
	// Without a halt, the sleep would last the call's time limit.
	exec := run(t, src, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{CallTimeout: time.Minute, MaxConcurrency: 2}})
	if !exec.Halted {
		t.Error("not Halted")
	}
	if got := l.sent(); !slices.Equal(got, []string{"sleep"}) {
		t.Errorf("the server received %v, want [sleep]", got)
	}
	for i, want := range []error{nil, conduit.ErrDenied, conduit.ErrHalted, conduit.ErrHalted} {
		if got := exec.Errors[i]; (want == nil) != (got == nil) || (want != nil && !errors.Is(got, want)) {
			t.Errorf("call %d: %v, want %v", i, got, want)
		}
	}
	if got := exec.Results[0]["output"]; got != "released" {
		t.Errorf("the call under way answered %v", got)
	}
}

func TestPipelineOptionsPassThrough(t *testing.T) {
	var mu sync.Mutex
	var seen []conduit.Call
	hook := conduit.Hook{Name: "record", Before: func(_ context.Context, c *conduit.Call) error {
		mu.Lock()
		seen = append(seen, *c)
		mu.Unlock()
		return nil
	}}
	hub, l, _ := labHub(t, hubOpts{noGone: true, hooks: []conduit.Hook{hook}})
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			listing := listFor(t, hub, p)
			var progress atomic.Int64
			var progressCall atomic.Value
			response := script(p,
				scripted{id: "call_progress", name: "lab__progress", args: map[string]any{}},
				scripted{id: "call_meta", name: "lab__meta", args: map[string]any{}})
			exec := run(t, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{Principal: "ada", Assigns: map[string]any{"tenant": "acme"}, Taint: []string{"mail"}, RequestTimeout: 5 * time.Second, Meta: mcp.Meta{"trace": "t-1"}, Progress: func(c *conduit.Call, pr conduit.Progress) {
				progressCall.Store(c.Exposed + " " + c.ID)
				if progress.Add(1) == 3 {
					select {
					case l.progressSeen <- struct{}{}:
					default:
					}
				}
			}}})
			if got := resultText(p, exec.Results[1]); got != `{"trace":"t-1"}` {
				t.Errorf("the server saw _meta %s", got)
			}
			if n := progress.Load(); n != 3 {
				t.Errorf("%d progress notifications", n)
			}
			if got, _ := progressCall.Load().(string); got != "lab__progress call_progress" {
				t.Errorf("progress for %q", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 2 {
				t.Fatalf("the hook saw %d calls", len(seen))
			}
			for _, c := range seen {
				if c.Principal != "ada" || c.Assigns["tenant"] != "acme" || !slices.Equal(c.Taint, []string{"mail"}) {
					t.Errorf("the hook saw %+v", c)
				}
			}
		})
	}
}

// recordingSource records the options of each call.
type recordingSource struct {
	conduit.Source
	mu   sync.Mutex
	opts []conduit.CallOptions
}

func (s *recordingSource) CallTool(ctx context.Context, name string, args any, o *conduit.CallOptions) (*mcp.CallToolResult, error) {
	s.mu.Lock()
	s.opts = append(s.opts, *o)
	s.mu.Unlock()
	return text("ok"), nil
}

// Every call gets the ExecOptions' CallOptions, with its own id, the tool
// set the model was offered, and the batch's halt.
func TestCallOptionsPerCall(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	listing := listFor(t, hub, adapters.Anthropic)
	src := &recordingSource{Source: hub}
	response := script(adapters.Anthropic, scripted{id: "a", name: "lab__echo", args: map[string]any{"message": "x"}},
		scripted{id: "b", name: "lab__echo", args: map[string]any{"message": "y"}})
	run(t, src, adapters.Anthropic, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{RequestTimeout: time.Second, CallTimeout: time.Minute, Principal: "ada"}})
	if len(src.opts) != 2 {
		t.Fatal(len(src.opts))
	}
	ids := []string{src.opts[0].ID, src.opts[1].ID}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("ids %v", ids)
	}
	for _, o := range src.opts {
		if o.RequestTimeout != time.Second || o.CallTimeout != time.Minute || o.Principal != "ada" || o.ToolSet != listing.ToolSet || o.Halt == nil {
			t.Errorf("call options %+v", o)
		}
	}
}

func TestTaintAcrossTurns(t *testing.T) {
	hub, l, _ := labHub(t, hubOpts{policy: conduit.NewPolicy(
		conduit.Deny("lab/secret").When(conduit.Tainted("gone")),
		conduit.Allow("*"),
	)})
	p := adapters.Anthropic
	listing := listFor(t, hub, p)
	// Turn 1: the model reads from the gone server and from lab.
	turn1 := run(t, hub, p, script(p,
		scripted{id: "t1a", name: "gone__ping", args: map[string]any{}},
		scripted{id: "t1b", name: "lab__echo", args: map[string]any{"message": "x"}},
		scripted{id: "t1c", name: "lab__nope", args: map[string]any{}},
	), &adapters.ExecOptions{ToolSet: listing.ToolSet})
	var servers []string
	for _, c := range turn1.Calls {
		servers = append(servers, c.Server)
	}
	if !slices.Equal(servers, []string{"gone", "lab"}) {
		t.Errorf("Calls resolved to servers %v", servers)
	}
	taint := turn1.Taint(nil)
	if !slices.Equal(taint, []string{"gone", "lab"}) {
		t.Errorf("Taint = %v", taint)
	}
	// Turn 2: with gone's output in context, lab/secret is denied.
	turn2 := run(t, hub, p, script(p, scripted{id: "t2", name: "lab__secret", args: map[string]any{}}),
		&adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{Taint: taint}})
	if !errors.Is(turn2.Errors[0], conduit.ErrDenied) {
		t.Errorf("turn 2: %v, want denied", turn2.Errors[0])
	}
	if slices.Contains(l.sent(), "secret") {
		t.Error("secret was sent")
	}
	if got := turn2.Taint(taint); !slices.Equal(got, []string{"gone", "lab"}) {
		t.Errorf("Taint after turn 2 = %v", got)
	}
}

// The response is never modified: not by null stripping (nested paths
// included), not by hooks that rewrite arguments in place.
func TestResponseNotModified(t *testing.T) {
	rewrite := conduit.Hook{Name: "rewrite", Before: func(_ context.Context, c *conduit.Call) error {
		c.Args["injected"] = true
		if f, ok := c.Args["filter"].(map[string]any); ok {
			f["tag"] = "rewritten"
			delete(f, "note")
		}
		if items, ok := c.Args["items"].([]any); ok && len(items) > 0 {
			items[0] = "rewritten"
		}
		return nil
	}}
	l := newLab()
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"q":     str,
		"items": map[string]any{"type": "array", "items": str},
		"filter": map[string]any{"type": "object", "properties": map[string]any{
			"tag": str, "note": str}, "required": []any{"tag"}},
	}, "required": []any{"q"}}
	l.srv.AddTool(&mcp.Tool{Name: "nested", InputSchema: schema}, l.handler(toolDef{name: "nested",
		handle: func(_ context.Context, _ *mcp.CallToolRequest, a map[string]any) *mcp.CallToolResult {
			return text(canon(a))
		}}))
	tr, _ := connect(t, l.srv)
	hub, err := conduit.NewHub(context.Background(), []conduit.Server{{ID: "lab", Transport: tr}}, &conduit.Options{Policy: conduit.AllowAll(),
		Hooks: []conduit.Hook{rewrite}})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	args := map[string]any{"q": "x", "items": []any{"a", "b"}, "filter": map[string]any{"tag": "t", "note": nil}}
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			listing := listFor(t, hub, p)
			if p == adapters.OpenAIChat || p == adapters.OpenAIResponses {
				if np := listing.NullPaths["lab__nested"]; !slices.ContainsFunc(np, func(n driver.NullPath) bool {
					return slices.Equal(n, driver.NullPath{"filter", "note"})
				}) {
					t.Fatalf("null paths %v", np)
				}
			}
			response := script(p, scripted{id: "call_1", name: "lab__nested", args: args})
			// For OpenAI the arguments are a JSON string, decoded afresh;
			// a response with decoded arguments (as some compatible
			// servers send) must be safe too.
			if p == adapters.OpenAIChat {
				fn := response["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)
				fn["arguments"] = deepCopy(t, args)
			}
			if p == adapters.OpenAIResponses {
				response["output"].([]any)[1].(map[string]any)["arguments"] = deepCopy(t, args)
			}
			before := deepCopy(t, response)
			body, err := json.Marshal(response)
			if err != nil {
				t.Fatal(err)
			}
			// A decoded response is the caller's; a body given as bytes is
			// decoded here, and its arguments are Calls' own.
			bodyBefore := bytes.Clone(body)
			for _, resp := range []any{response, body} {
				exec := run(t, hub, p, resp, &adapters.ExecOptions{ToolSet: listing.ToolSet, NullPaths: listing.NullPaths})
				if !reflect.DeepEqual(any(response), before) {
					t.Errorf("the response was modified:\n%s\n%s", canon(before), canon(response))
				}
				if !bytes.Equal(body, bodyBefore) {
					t.Errorf("the body was modified:\n%s\n%s", bodyBefore, body)
				}
				if exec.Errors[0] != nil {
					t.Fatal(exec.Errors[0])
				}
				var got map[string]any
				json.Unmarshal([]byte(resultText(p, exec.Results[0])), &got)
				f, _ := got["filter"].(map[string]any)
				if got["injected"] != true || f["tag"] != "rewritten" {
					t.Errorf("the hook's rewrite did not reach the server: %v", got)
				}
				// Calls report the arguments as resolved (nulls stripped
				// for OpenAI), untouched by hooks.
				ca := exec.Calls[0].Args
				if _, ok := ca["injected"]; ok {
					t.Errorf("%T: Calls saw the hook's rewrite: %v", resp, ca)
				}
				if ca["items"].([]any)[0] != "a" {
					t.Errorf("%T: Calls saw the hook's rewrite of a nested value: %v", resp, ca)
				}
				_, hasNote := ca["filter"].(map[string]any)["note"]
				if strip := p == adapters.OpenAIChat || p == adapters.OpenAIResponses; hasNote == strip {
					t.Errorf("%v, %T: Calls args %v", p, resp, ca)
				}
			}
		})
	}
}

func TestNullStripping(t *testing.T) {
	hub, l, _ := labHub(t, hubOpts{noGone: true})
	for _, p := range []adapters.Provider{adapters.OpenAIChat, adapters.OpenAIResponses} {
		t.Run(p.String(), func(t *testing.T) {
			listing := listFor(t, hub, p)
			response := script(p, scripted{id: "c", name: "lab__search", args: map[string]any{"q": "go", "limit": nil}})
			exec := run(t, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, NullPaths: listing.NullPaths})
			if got := resultText(p, exec.Results[0]); got != `search {"q":"go"}` {
				t.Errorf("with null paths the server got %s", got)
			}
			// Without the listing's null paths the null goes through.
			exec = run(t, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet})
			if got := resultText(p, exec.Results[0]); got != `search {"limit":null,"q":"go"}` {
				t.Errorf("without null paths the server got %s", got)
			}
		})
	}
	// Other providers' listings have no null paths: their nulls are sent.
	listing := listFor(t, hub, adapters.Anthropic)
	exec := run(t, hub, adapters.Anthropic, script(adapters.Anthropic, scripted{id: "c", name: "lab__search", args: map[string]any{"q": "go", "limit": nil}}),
		&adapters.ExecOptions{ToolSet: listing.ToolSet, NullPaths: listing.NullPaths})
	if got := resultText(adapters.Anthropic, exec.Results[0]); got != `search {"limit":null,"q":"go"}` {
		t.Errorf("anthropic: the server got %s", got)
	}
	_ = l
}

func TestErrorPrefix(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	for _, p := range []adapters.Provider{adapters.OpenAIChat, adapters.OpenAIResponses} {
		listing := listFor(t, hub, p)
		response := script(p,
			scripted{id: "a", name: "lab__fail", args: map[string]any{}},
			scripted{id: "b", name: "lab__nope", args: map[string]any{}},
			scripted{id: "c", name: "lab__echo", args: map[string]any{"message": "fine"}})
		prefix := "TOOL ERROR - "
		exec := run(t, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{Answers: toolcall.AnswerOptions{ErrorPrefix: prefix}}})
		want := []string{"TOOL ERROR - disk full", `TOOL ERROR - Unknown tool "lab__nope": it is not among the tools offered.`, "Echo: fine"}
		for i, w := range want {
			if got := resultText(p, exec.Results[i]); got != w {
				t.Errorf("%v %d: %q, want %q", p, i, got, w)
			}
		}
		exec = run(t, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{Answers: toolcall.AnswerOptions{NoErrorPrefix: true}}})
		if got := resultText(p, exec.Results[0]); got != "disk full" {
			t.Errorf("%v: empty prefix gives %q", p, got)
		}
	}
}

// Without ExecOptions.ToolSet the source is listed at call time, with the
// options' principal and taint.
func TestExecuteWithoutToolSet(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	p := adapters.Gemini
	exec := run(t, hub, p, script(p,
		scripted{name: "lab__echo", args: map[string]any{"message": "x"}},
		scripted{name: "lab__secret", args: map[string]any{}}), &adapters.ExecOptions{TurnOptions: adapters.TurnOptions{Taint: []string{"web"}}})
	if exec.Errors[0] != nil {
		t.Error(exec.Errors[0])
	}
	// Denied outright under that taint, lab/secret is not in the tool set.
	if !errors.Is(exec.Errors[1], conduit.ErrUnknownTool) {
		t.Errorf("secret: %v", exec.Errors[1])
	}
}

// An SDK's response struct, anything that marshals to the provider JSON,
// is accepted.
func TestResponseAsStruct(t *testing.T) {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	type message struct {
		Role      string     `json:"role"`
		ToolCalls []toolCall `json:"tool_calls"`
	}
	type choice struct {
		Message message `json:"message"`
	}
	type completion struct {
		Choices []choice `json:"choices"`
	}
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	listing := listFor(t, hub, adapters.OpenAIChat)
	resp := &completion{Choices: []choice{{Message: message{Role: "assistant",
		ToolCalls: []toolCall{{ID: "call_1", Type: "function", Function: fn{Name: "lab__echo", Arguments: `{"message":"typed"}`}}}}}}}
	exec := run(t, hub, adapters.OpenAIChat, resp, &adapters.ExecOptions{ToolSet: listing.ToolSet})
	if got := exec.Results[0]["content"]; got != "Echo: typed" {
		t.Errorf("got %v", got)
	}
	raw := json.RawMessage(canon(resp))
	exec = run(t, hub, adapters.OpenAIChat, raw, &adapters.ExecOptions{ToolSet: listing.ToolSet})
	if got := exec.Results[0]["content"]; got != "Echo: typed" {
		t.Errorf("json.RawMessage: got %v", got)
	}
}

// A before-hook that ignores its context cannot hold a call past
// CallTimeout either; and ExecOptions.Timeout, which bounds the request to
// the server, times a call out in the pipeline's own words.
func TestCallTimeoutHookAndRequestTimeout(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	hook := conduit.Hook{Name: "stuck", Before: func(_ context.Context, c *conduit.Call) error {
		if c.Tool == "text" {
			<-stuck
		}
		return nil
	}}
	hub, l, _ := labHub(t, hubOpts{noGone: true, hooks: []conduit.Hook{hook}})
	p := adapters.Gemini
	listing := listFor(t, hub, p)
	before := len(l.sent())
	start := time.Now()
	// The hook is stuck until the test ends.
	exec := run(t, hub, p, script(p, scripted{id: "h", name: "lab__text", args: map[string]any{}}),
		&adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{CallTimeout: 500 * time.Millisecond}})
	if el := time.Since(start); el > time.Minute {
		t.Errorf("took %v", el)
	}
	if !errors.Is(exec.Errors[0], conduit.ErrTimeout) || !strings.Contains(resultText(p, exec.Results[0]), "timed out after 500ms") {
		t.Errorf("hook: %v", exec.Errors[0])
	}
	if len(l.sent()) != before {
		t.Error("the call was sent")
	}

	exec = run(t, hub, p, script(p, scripted{id: "r", name: "lab__sleep", args: map[string]any{}}),
		&adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{RequestTimeout: 500 * time.Millisecond, CallTimeout: time.Minute}})
	if !errors.Is(exec.Errors[0], conduit.ErrTimeout) {
		t.Fatalf("request timeout: %v", exec.Errors[0])
	}
	if got := resultText(p, exec.Results[0]); strings.Contains(got, "1m0s") || !strings.Contains(got, "500ms") {
		t.Errorf("the request timeout is reported as the call timeout: %q", got)
	}
	select {
	case <-l.cancelled:
	case <-time.After(30 * time.Second):
		t.Error("the server's handler context was not cancelled")
	}
}

// A field a provider always sends (Anthropic's "input", OpenAI's
// "arguments") is malformed when it is JSON null or missing: the call is
// answered as not an object and nothing is sent. Only what the provider
// sends for a tool without parameters (Gemini's missing "args", OpenAI's
// empty string, an empty object) is a call without arguments.
func TestNullOrMissingArguments(t *testing.T) {
	hub, l, _ := labHub(t, hubOpts{noGone: true})
	type call struct {
		id   string
		sent bool
	}
	tests := []struct {
		p        adapters.Provider
		response string
		calls    []call
	}{
		{adapters.Anthropic, `{"content":[
			{"type":"tool_use","id":"null","name":"lab__text","input":null},
			{"type":"tool_use","id":"missing","name":"lab__text"},
			{"type":"tool_use","id":"empty","name":"lab__text","input":{}}]}`,
			[]call{{"null", false}, {"missing", false}, {"empty", true}}},
		{adapters.OpenAIChat, `{"choices":[{"message":{"role":"assistant","tool_calls":[
			{"id":"null","type":"function","function":{"name":"lab__text","arguments":null}},
			{"id":"missing","type":"function","function":{"name":"lab__text"}},
			{"id":"nulltext","type":"function","function":{"name":"lab__text","arguments":"null"}},
			{"id":"blank","type":"function","function":{"name":"lab__text","arguments":""}},
			{"id":"empty","type":"function","function":{"name":"lab__text","arguments":"{}"}}]}}]}`,
			[]call{{"null", false}, {"missing", false}, {"nulltext", false}, {"blank", true}, {"empty", true}}},
		{adapters.OpenAIResponses, `{"output":[
			{"type":"function_call","call_id":"null","name":"lab__text","arguments":null},
			{"type":"function_call","call_id":"missing","name":"lab__text"},
			{"type":"function_call","call_id":"nulltext","name":"lab__text","arguments":"null"},
			{"type":"function_call","call_id":"blank","name":"lab__text","arguments":""}]}`,
			[]call{{"null", false}, {"missing", false}, {"nulltext", false}, {"blank", true}}},
		{adapters.Gemini, `{"candidates":[{"content":{"role":"model","parts":[
			{"functionCall":{"id":"null","name":"lab__text","args":null}},
			{"functionCall":{"id":"missing","name":"lab__text"}},
			{"functionCall":{"id":"empty","name":"lab__text","args":{}}}]}}]}`,
			[]call{{"null", false}, {"missing", true}, {"empty", true}}},
		{adapters.Bedrock, `{"output":{"message":{"role":"assistant","content":[
			{"toolUse":{"toolUseId":"null","name":"lab__text","input":null}},
			{"toolUse":{"toolUseId":"missing","name":"lab__text"}},
			{"toolUse":{"toolUseId":"empty","name":"lab__text","input":{}}}]}},"stopReason":"tool_use"}`,
			[]call{{"null", false}, {"missing", false}, {"empty", true}}},
	}
	covered := map[adapters.Provider]bool{}
	for _, tt := range tests {
		covered[tt.p] = true
		t.Run(tt.p.String(), func(t *testing.T) {
			listing := listFor(t, hub, tt.p)
			before := len(l.sent())
			exec := run(t, hub, tt.p, []byte(tt.response), &adapters.ExecOptions{ToolSet: listing.ToolSet})
			if len(exec.Results) != len(tt.calls) {
				t.Fatalf("%d answers for %d calls", len(exec.Results), len(tt.calls))
			}
			wantSent := 0
			for i, c := range tt.calls {
				if id := answerIDs(tt.p, exec.Results)[i]; id != c.id {
					t.Errorf("answer %d keyed by %q, want %q", i, id, c.id)
				}
				if c.sent {
					wantSent++
					if exec.Errors[i] != nil {
						t.Errorf("%s: %v, want the call sent", c.id, exec.Errors[i])
					}
					continue
				}
				if !errors.Is(exec.Errors[i], conduit.ErrInvalidArguments) {
					t.Errorf("%s: %v, want %v", c.id, exec.Errors[i], conduit.ErrInvalidArguments)
				}
				if got := resultText(tt.p, exec.Results[i]); !strings.Contains(got, "must be a JSON object") {
					t.Errorf("%s: answered %q", c.id, got)
				}
			}
			if got := len(l.sent()) - before; got != wantSent {
				t.Errorf("the server received %d calls, want %d", got, wantSent)
			}
		})
	}
	for _, p := range adapters.Providers() {
		if !covered[p] {
			t.Errorf("%s has no case", p)
		}
	}
}

// TestExecutionJSON: an Execution marshals as it is, for an HTTP handler:
// each call's error as its kind and message (null for none), budgets and
// calls with snake_case keys; errors.Is still works on Errors.
func TestExecutionJSON(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	p := adapters.Anthropic
	exec := run(t, hub, p, script(p,
		scripted{id: "a", name: "lab__echo", args: map[string]any{"message": "x"}},
		scripted{id: "b", name: "lab__deploy", args: map[string]any{}}), nil)
	if !errors.Is(exec.Errors[1], conduit.ErrDenied) {
		t.Fatalf("errors %v", exec.Errors)
	}
	data, err := json.Marshal(exec)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Errors  []map[string]any `json:"errors"`
		Budgets []map[string]any `json:"budgets"`
		Calls   []map[string]any `json:"calls"`
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Errors) != 2 || got.Errors[0] != nil || got.Errors[1]["kind"] != "denied" || got.Errors[1]["server"] != "lab" ||
		!strings.Contains(got.Errors[1]["message"].(string), "deploys need a human") {
		t.Errorf("errors %s", data)
	}
	if len(got.Budgets) != 2 || got.Budgets[0]["tokens"] == nil || got.Budgets[0]["cut"] != false {
		t.Errorf("budgets %s", data)
	}
	if len(got.Calls) != 2 || got.Calls[0]["id"] != "a" || got.Calls[0]["arguments"] == nil || got.Calls[0]["Def"] != nil {
		t.Errorf("calls %s", data)
	}
	// Another error than *conduit.Error marshals as internal.
	data, _ = json.Marshal(adapters.CallErrors{nil, errors.New("boom")})
	if string(data) != `[null,{"kind":"internal","message":"boom"}]` {
		t.Errorf("%s", data)
	}
}
