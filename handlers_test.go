package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// legacyServer is a test server that speaks protocol 2025-11-25 at most,
// whose tools send server-to-client requests as JSON-RPC requests (newer
// sessions use multi-round-trip results instead).
func legacyServer(t *testing.T) *testServer {
	ts := newTestServer(t, "legacy")
	ts.Server = mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"},
		&mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	ts.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				ts.mu.Lock()
				ts.calls[r.Params.Name]++
				ts.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	return ts
}

// askTools adds tools that ask the client for something and answer with
// what they got: elicit, sample, roots and log (three log messages).
// block waits for release to be closed.
func askTools(s *mcp.Server, release <-chan struct{}) {
	addTool(s, "elicit", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "who?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}}}`)})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		return textResult(fmt.Sprintf("%s %v", res.Action, res.Content["who"])), nil
	})
	addTool(s, "sample", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		return textResult("sampled " + res.Model), nil
	})
	addTool(s, "roots", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		return textResult("roots " + rootURIs(res)), nil
	})
	addTool(s, "log", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := range 3 {
			req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("line %d", i)})
		}
		return textResult("logged"), nil
	})
	addTool(s, "block", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return textResult("released"), nil
	})
}

type ctxKey string

// caller is the Handlers of one caller, which answer with its name and
// record the context values they were called with.
func caller(name string, logs *[]string, mu *sync.Mutex) *Handlers {
	return &Handlers{
		Elicitation: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": fmt.Sprint(name, "/", ctx.Value(ctxKey("call")))}}, nil
		},
		Sampling: func(ctx context.Context, _ *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: name, Role: "assistant", Content: &mcp.TextContent{Text: "x"}}, nil
		},
		Roots: func(ctx context.Context, _ *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
			return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///" + name}}}, nil
		},
		Logging: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			*logs = append(*logs, fmt.Sprint(name, ": ", req.Params.Data))
			mu.Unlock()
		},
	}
}

// hubHandlers are the hub's own, which say that they answered.
var hubHandlers = &Handlers{
	Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "hub"}}, nil
	},
	Sampling: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Model: "hub", Role: "assistant", Content: &mcp.TextContent{Text: "x"}}, nil
	},
	Roots: func(context.Context, *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
		return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
	},
}

func call(t *testing.T, h *Hub, ctx context.Context, name string, opts *CallOptions) string {
	t.Helper()
	res, err := h.CallTool(ctx, name, nil, opts)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return resultText(res)
}

// TestHandlersPerCall: what a server asks during a call goes to that
// call's Handlers, with the call's context values; without any, to the
// hub's. Both with a server on protocol 2025-11-25 (JSON-RPC requests,
// attributed to the calls in flight) and on 2026-07-28 (multi-round-trip
// results, which carry the call's context).
func TestHandlersPerCall(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			var ts *testServer
			if legacy {
				ts = legacyServer(t)
				askTools(ts.Server, nil)
			} else {
				ts = newTestServer(t, "modern")
				mrtrTools(ts.Server)
			}
			h := newHub(t, []Server{ts.server("s")}, &Options{Handlers: hubHandlers})
			var mu sync.Mutex
			var logs []string
			alice, bob := caller("alice", &logs, &mu), caller("bob", &logs, &mu)
			ctx := context.WithValue(context.Background(), ctxKey("call"), "c1")
			if got := call(t, h, ctx, "s__elicit", &CallOptions{Handlers: alice}); got != "accept alice/c1" {
				t.Errorf("elicit for alice = %q", got)
			}
			if got := call(t, h, ctx, "s__elicit", &CallOptions{Handlers: bob}); got != "accept bob/c1" {
				t.Errorf("elicit for bob = %q", got)
			}
			if got := call(t, h, ctx, "s__elicit", nil); got != "accept hub" {
				t.Errorf("elicit without handlers = %q", got)
			}
			if got := call(t, h, ctx, "s__sample", &CallOptions{Handlers: bob}); got != "sampled bob" {
				t.Errorf("sample for bob = %q", got)
			}
			if got := call(t, h, ctx, "s__roots", &CallOptions{Handlers: alice}); got != "roots file:///alice" {
				t.Errorf("roots for alice = %q", got)
			}
			if got := call(t, h, ctx, "s__roots", &CallOptions{Handlers: bob}); got != "roots file:///bob" {
				t.Errorf("roots for bob = %q", got)
			}
			if got := call(t, h, ctx, "s__roots", nil); got != "roots " {
				t.Errorf("roots without handlers = %q, want the hub's (none)", got)
			}
		})
	}
}

// mrtrTools adds elicit, sample and roots tools that ask through
// multi-round-trip results (protocol 2026-07-28).
func mrtrTools(s *mcp.Server) {
	addTool(s, "roots", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["r"].(*mcp.ListRootsResult); ok {
			return textResult("roots " + rootURIs(r)), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"r": &mcp.ListRootsParams{}}}, nil
	})
	addTool(s, "elicit", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult); ok {
			return textResult(fmt.Sprintf("%s %v", r.Action, r.Content["who"])), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"who": &mcp.ElicitParams{Message: "who?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}}}`)},
		}}, nil
	})
	addTool(s, "sample", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["s"].(*mcp.CreateMessageWithToolsResult); ok {
			return textResult("sampled " + r.Model), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			"s": &mcp.CreateMessageParams{MaxTokens: 5, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}},
		}}, nil
	})
}

// TestHandlersAmbiguous: with calls of two callers in flight to a server,
// its request is refused rather than given to either; calls of one caller
// share it.
func TestHandlersAmbiguous(t *testing.T) {
	ts := legacyServer(t)
	release := make(chan struct{})
	askTools(ts.Server, release)
	h := newHub(t, []Server{ts.server("s")}, &Options{Handlers: hubHandlers})
	var mu sync.Mutex
	var logs []string
	alice, bob := caller("alice", &logs, &mu), caller("bob", &logs, &mu)
	ctx := context.Background()

	done := make(chan string)
	go func() {
		res, err := h.CallTool(ctx, "s__block", nil, &CallOptions{Handlers: alice})
		done <- fmt.Sprintf("%s %v", resultText(res), err)
	}()
	eventually(t, 10*time.Second, func() bool { return ts.called("block") == 1 }, "the blocking call to arrive")
	if got := call(t, h, ctx, "s__elicit", &CallOptions{Handlers: alice}); got != "accept alice/<nil>" {
		t.Errorf("elicit for alice beside alice's call = %q", got)
	}
	got := call(t, h, ctx, "s__elicit", &CallOptions{Handlers: bob})
	if !strings.Contains(got, "cannot be attributed to one caller") {
		t.Errorf("elicit for bob beside alice's call = %q, want it refused", got)
	}
	got = call(t, h, ctx, "s__elicit", nil)
	if !strings.Contains(got, "cannot be attributed") {
		t.Errorf("elicit without handlers beside alice's call = %q, want it refused", got)
	}
	close(release)
	if got := <-done; got != "released <nil>" {
		t.Errorf("blocking call = %q", got)
	}
}

// TestHandlersLogging: a server's log messages during a call reach that
// call's Logging, after the hub set the level; messages no call claims go
// to the hub's Logging.
func TestHandlersLogging(t *testing.T) {
	ts := legacyServer(t)
	askTools(ts.Server, nil)
	var mu sync.Mutex
	var logs, hubLogs []string
	hubH := *hubHandlers
	hubH.Logging = func(_ context.Context, req *mcp.LoggingMessageRequest) {
		mu.Lock()
		hubLogs = append(hubLogs, fmt.Sprint(req.Params.Data))
		mu.Unlock()
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := ts.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	h := newHub(t, []Server{{ID: "s", Transport: ct}}, &Options{Handlers: &hubH})
	ctx := context.Background()
	if err := h.SetLoggingLevel(ctx, "debug"); err != nil {
		t.Fatal(err)
	}
	alice := caller("alice", &logs, &mu)
	if got := call(t, h, ctx, "s__log", &CallOptions{Handlers: alice}); got != "logged" {
		t.Fatalf("log = %q", got)
	}
	want := "alice: line 0,alice: line 1,alice: line 2"
	eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(logs, ",") == want
	}, "alice's log lines %q, have %q", want, &logs)

	// Outside any call (once alice's call no longer claims them).
	time.Sleep(logLinger)
	if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "unprompted"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(hubLogs, ",") == "unprompted"
	}, "the hub's log line")
}

// TestHandlersRoutingOff: without Options.Handlers, the hub declares no
// sampling or roots, and a call's Handlers are not used.
func TestHandlersRoutingOff(t *testing.T) {
	ts := legacyServer(t)
	askTools(ts.Server, nil)
	h := newHub(t, []Server{ts.server("s")}, nil)
	var mu sync.Mutex
	var logs []string
	got := call(t, h, context.Background(), "s__sample", &CallOptions{Handlers: caller("alice", &logs, &mu)})
	if !strings.Contains(got, "CreateMessage") {
		t.Errorf("sample = %q, want the client's refusal", got)
	}
}

func rootURIs(r *mcp.ListRootsResult) string {
	var uris []string
	for _, root := range r.Roots {
		uris = append(uris, root.URI)
	}
	return strings.Join(uris, ",")
}

// TestHandlersInputFailClosed: a multi-round-trip request (protocol
// 2026-07-28) that no handler can answer ends the call with
// ErrInputNotGiven; the server is not asked again with an answer it did
// not ask for (the SDK's own loop answers roots with the hub's empty
// list).
func TestHandlersInputFailClosed(t *testing.T) {
	failing := &Handlers{Roots: func(context.Context, *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
		return nil, errors.New("the user's roots are not to be had")
	}}
	for _, tc := range []struct {
		name string
		hub  *Handlers
		call *Handlers
		want string
	}{
		{"no handlers", nil, nil, "roots are not supported"},
		{"no roots handler", &Handlers{Elicitation: hubHandlers.Elicitation}, nil, "roots are not supported"},
		// The hub declares roots, and the call's handler fails.
		{"handler fails", hubHandlers, failing, "not to be had"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, "modern")
			mrtrTools(ts.Server)
			h := newHub(t, []Server{ts.server("s")}, &Options{Handlers: tc.hub})
			res, err := h.CallTool(context.Background(), "s__roots", nil, &CallOptions{Handlers: tc.call})
			if err == nil {
				t.Fatalf("roots = %q, want an error", resultText(res))
			}
			if !errors.Is(err, ErrInputNotGiven) || !errors.Is(err, ErrInternal) {
				t.Errorf("err = %v, want ErrInputNotGiven of kind internal", err)
			}
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Message, "asked for roots") || !strings.Contains(e.Message, tc.want) {
				t.Errorf("message = %q, want it to name roots and %q", e.Message, tc.want)
			}
			if n := ts.called("roots"); n != 1 {
				t.Errorf("the server was called %d times, want 1 (no retry without the roots)", n)
			}
		})
	}
}

// TestHandlersRootsRefusedLegacy: a server on protocol 2025-11-25 that
// asks a hub with no Roots handler for its roots is refused, as the
// multi-round-trip form is, rather than told by the SDK that the list is
// empty; with a handler it gets the handler's answer.
func TestHandlersRootsRefusedLegacy(t *testing.T) {
	for _, tc := range []struct {
		name string
		hub  *Handlers
		want string
	}{
		{"no handlers", nil, "method not found"},
		{"no roots handler", &Handlers{Elicitation: hubHandlers.Elicitation}, "method not found"},
		{"roots handler", caller("hub", new([]string), new(sync.Mutex)), "roots file:///hub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := legacyServer(t)
			askTools(ts.Server, nil)
			h := newHub(t, []Server{ts.server("s")}, &Options{Handlers: tc.hub})
			if got := call(t, h, context.Background(), "s__roots", nil); !strings.Contains(got, tc.want) {
				t.Errorf("roots = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestHandlersInputRounds: the SDK's limits hold for conduit's loop: a
// server that keeps asking is sent the request 10 times, one that keeps
// shedding load (input required, nothing asked) 3 times; then the call
// ends with ErrInputNotGiven, the server's doing (server_error).
func TestHandlersInputRounds(t *testing.T) {
	ts := newTestServer(t, "modern")
	addTool(ts.Server, "ask", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"again": &mcp.ListRootsParams{}}}, nil
	})
	addTool(ts.Server, "busy", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}}, nil
	})
	var asked atomic.Int64
	hub := &Handlers{Roots: func(context.Context, *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
		asked.Add(1)
		return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
	}}
	h := newHub(t, []Server{ts.server("s")}, &Options{Handlers: hub})
	for _, tc := range []struct {
		tool  string
		calls int
		asked int64
	}{{"ask", 10, 9}, {"busy", 3, 0}} {
		asked.Store(0)
		_, err := h.CallTool(context.Background(), "s__"+tc.tool, nil, nil)
		if !errors.Is(err, ErrInputNotGiven) || !errors.Is(err, ErrServerError) {
			t.Errorf("%s: err = %v, want ErrInputNotGiven of kind server_error", tc.tool, err)
		}
		if n := ts.called(tc.tool); n != tc.calls {
			t.Errorf("%s: the server was called %d times, want %d", tc.tool, n, tc.calls)
		}
		if n := asked.Load(); n != tc.asked {
			t.Errorf("%s: the handler was asked %d times, want %d", tc.tool, n, tc.asked)
		}
	}
}

// TestHandlersInputPromptsResources: prompts/get and resources/read ask
// through multi-round-trip results too, and are answered by the call's
// Handlers, with several input requests in one round.
func TestHandlersInputPromptsResources(t *testing.T) {
	ts := newTestServer(t, "modern")
	ask := mcp.InputRequestMap{
		"r": &mcp.ListRootsParams{},
		"e": &mcp.ElicitParams{Message: "who?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}}}`)},
	}
	answered := func(in mcp.InputResponseMap) (string, bool) {
		r, ok1 := in["r"].(*mcp.ListRootsResult)
		e, ok2 := in["e"].(*mcp.ElicitResult)
		if !ok1 || !ok2 {
			return "", false
		}
		return fmt.Sprintf("%s %v", rootURIs(r), e.Content["who"]), true
	}
	ts.AddPrompt(&mcp.Prompt{Name: "p"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if s, ok := answered(req.Params.InputResponses); ok {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: s}}}}, nil
		}
		return &mcp.GetPromptResult{InputRequests: ask}, nil
	})
	ts.AddResource(&mcp.Resource{Name: "r", URI: "test://r"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if s, ok := answered(req.Params.InputResponses); ok {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://r", Text: s}}}, nil
		}
		return &mcp.ReadResourceResult{InputRequests: ask}, nil
	})
	h := newHub(t, []Server{ts.server("s")}, &Options{Handlers: hubHandlers})
	var mu sync.Mutex
	var logs []string
	alice := caller("alice", &logs, &mu)
	ctx := context.WithValue(context.Background(), ctxKey("call"), "c2")
	pr, err := h.GetPrompt(ctx, "s__p", nil, &CallOptions{Handlers: alice})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Messages[0].Content.(*mcp.TextContent).Text; got != "file:///alice alice/c2" {
		t.Errorf("prompt = %q", got)
	}
	rr, err := h.ReadResource(ctx, "test://r", &CallOptions{Handlers: alice})
	if err != nil {
		t.Fatal(err)
	}
	if got := rr.Contents[0].Text; got != "file:///alice alice/c2" {
		t.Errorf("resource = %q", got)
	}
}

// TestInputReturn: with CallOptions.Input.Return, a request whose server
// asks for input ends with the server's input-required result, and
// Handlers are not asked; the caller's retry with Input's Responses and
// State completes it, for tools/call, prompts/get and resources/read. A
// server of protocol 2025-11-25 is unaffected: its request goes to
// Handlers during the call.
func TestInputReturn(t *testing.T) {
	ts := newTestServer(t, "modern")
	mrtrTools(ts.Server)
	var states []string
	var mu sync.Mutex
	addTool(ts.Server, "stateful", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		states = append(states, req.Params.RequestState)
		mu.Unlock()
		if r, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult); ok && req.Params.RequestState == "s1" {
			return textResult(fmt.Sprintf("%s %v", r.Action, r.Content["who"])), nil
		}
		return &mcp.CallToolResult{RequestState: "s1", InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{Message: "who?"}}}, nil
	})
	ts.AddPrompt(&mcp.Prompt{Name: "p"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if _, ok := req.Params.InputResponses["e"].(*mcp.ElicitResult); ok {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "p " + req.Params.RequestState}}}}, nil
		}
		return &mcp.GetPromptResult{RequestState: "ps", InputRequests: mcp.InputRequestMap{"e": &mcp.ElicitParams{Message: "?"}}}, nil
	})
	ts.AddResource(&mcp.Resource{Name: "r", URI: "test://r"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if _, ok := req.Params.InputResponses["e"].(*mcp.ElicitResult); ok {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://r", Text: "r " + req.Params.RequestState}}}, nil
		}
		return &mcp.ReadResourceResult{RequestState: "rs", InputRequests: mcp.InputRequestMap{"e": &mcp.ElicitParams{Message: "?"}}}, nil
	})
	var asked atomic.Int64
	hub := &Handlers{Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}
	h := newHub(t, []Server{ts.server("s")}, &Options{Handlers: hub})
	ctx := context.Background()
	accept := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "ann"}}

	res, err := h.CallTool(ctx, "s__stateful", nil, &CallOptions{Input: &Input{Return: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.RequestState != "s1" || res.InputRequests["who"] == nil {
		t.Fatalf("first round = %+v, want the server's input-required result", res)
	}
	res, err = h.CallTool(ctx, "s__stateful", nil, &CallOptions{Input: &Input{Return: true, RequestState: res.RequestState, Responses: mcp.InputResponseMap{"who": accept}}})
	if err != nil || res.NeedsInput() || resultText(res) != "accept ann" {
		t.Fatalf("retry = %q, %v (needs input %v)", resultText(res), err, res != nil && res.NeedsInput())
	}
	if fmt.Sprint(states) != "[ s1]" {
		t.Errorf("the server saw the states %q, want the first round without and the retry with s1", states)
	}

	pr, err := h.GetPrompt(ctx, "s__p", nil, &CallOptions{Input: &Input{Return: true}})
	if err != nil || !pr.NeedsInput() || pr.RequestState != "ps" {
		t.Fatalf("prompt's first round = %+v, %v", pr, err)
	}
	pr, err = h.GetPrompt(ctx, "s__p", nil, &CallOptions{Input: &Input{Return: true, RequestState: "ps", Responses: mcp.InputResponseMap{"e": accept}}})
	if err != nil || len(pr.Messages) == 0 || pr.Messages[0].Content.(*mcp.TextContent).Text != "p ps" {
		t.Fatalf("prompt's retry = %+v, %v", pr, err)
	}
	rr, err := h.ReadResource(ctx, "test://r", &CallOptions{Input: &Input{Return: true}})
	if err != nil || !rr.NeedsInput() || rr.RequestState != "rs" {
		t.Fatalf("resource's first round = %+v, %v", rr, err)
	}
	rr, err = h.ReadResource(ctx, "test://r", &CallOptions{Input: &Input{Return: true, RequestState: "rs", Responses: mcp.InputResponseMap{"e": accept}}})
	if err != nil || len(rr.Contents) == 0 || rr.Contents[0].Text != "r rs" {
		t.Fatalf("resource's retry = %+v, %v", rr, err)
	}
	// Responses without Return: the retry's answers go first, and what the
	// server asks after that is answered through Handlers.
	if got := call(t, h, ctx, "s__elicit", &CallOptions{Input: &Input{Responses: mcp.InputResponseMap{"who": accept}}}); got != "accept ann" {
		t.Errorf("elicit with given responses = %q", got)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("Handlers were asked %d times, want none", n)
	}
	if got := call(t, h, ctx, "s__elicit", nil); got != "decline <nil>" {
		t.Errorf("elicit without Input = %q, want the hub's Handlers' answer", got)
	}

	// A server of 2025-11-25 asks by request, which Handlers answer.
	legacy := legacyServer(t)
	askTools(legacy.Server, nil)
	hl := newHub(t, []Server{legacy.server("s")}, &Options{Handlers: hubHandlers})
	if got := call(t, hl, ctx, "s__elicit", &CallOptions{Input: &Input{Return: true}}); got != "accept hub" {
		t.Errorf("a legacy server's elicitation with Input.Return = %q, want the Handlers' answer", got)
	}
}
