package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/conduitmcp/conduit/internal/errtext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An approver's Defer sends nothing: the call fails with ErrDeferred, its
// Deferral carrying the rule, the reason and the arguments the approver
// saw. The decision taken later (CallOptions.Approval) is the approval:
// the approver is not asked again, and a hub without an approver sends it.
func TestDeferredApproval(t *testing.T) {
	ts := newTestServer(t, "s").echoTools("write", "read")
	var asked atomic.Int32
	policy := NewPolicy(Allow("s/read"), Ask("s/write"))
	approver := func(_ context.Context, req ApprovalRequest) Approval {
		asked.Add(1)
		return Defer("waiting for Ada")
	}
	h := newHub(t, []Server{ts.server("s")}, &Options{Policy: policy, Approver: approver})
	ctx := context.Background()
	args := map[string]any{"path": "a.txt"}

	_, err := h.CallTool(ctx, "s__write", args, &CallOptions{ID: "c1"})
	e := wantKind(t, err, ErrDeferred)
	if !errors.Is(err, ErrDeferred) || e.Message != "The call to s__write waits for a decision: waiting for Ada." {
		t.Errorf("error %v", err)
	}
	var d *Deferral
	if !errors.As(err, &d) || d.Rule.String() != "ask s/write" || d.Reason != "waiting for Ada" || d.Args["path"] != "a.txt" || d.Input != nil {
		t.Fatalf("deferral %+v", d)
	}
	args["path"] = "changed"
	if d.Args["path"] != "a.txt" {
		t.Error("the deferral shares the caller's arguments")
	}
	if ts.called("write") != 0 || asked.Load() != 1 {
		t.Fatalf("sent %d, asked %d", ts.called("write"), asked.Load())
	}
	// What the policy allows is not asked about, and is sent.
	if _, err := h.CallTool(ctx, "s__read", nil, nil); err != nil || asked.Load() != 1 {
		t.Fatalf("read: %v, asked %d", err, asked.Load())
	}

	// Decided later: allowed, without asking.
	ok := Approve()
	res, err := h.CallTool(ctx, "s__write", d.Args, &CallOptions{ID: "c1", Approval: &ok})
	if err != nil || resultText(res) != `write {"path":"a.txt"}` || asked.Load() != 1 || ts.called("write") != 1 {
		t.Fatalf("approved: %v %v, asked %d", resultText(res), err, asked.Load())
	}
	// Denied later, with a halt: the approver's denial, nothing sent.
	no := RejectAndHalt("not today")
	_, err = h.CallTool(ctx, "s__write", d.Args, &CallOptions{Approval: &no})
	denied := wantKind(t, err, ErrDenied)
	if !denied.Halt || denied.Message != "The call to s__write was denied: not today." || ts.called("write") != 1 {
		t.Fatalf("denied: %v", err)
	}
	// A call denied elsewhere (adapters) is worded the same.
	tool, _ := mustList(t, h).Lookup("s__write")
	if msg := errtext.Denied("The call to "+tool.Exposed, "not today"); msg != denied.Message {
		t.Errorf("errtext.Denied: %q", msg)
	}

	// A hub without an approver sends a call decided beforehand, and
	// still refuses one that is not.
	h2 := newHub(t, []Server{ts.server("s")}, &Options{Policy: policy})
	if _, err := h2.CallTool(ctx, "s__write", d.Args, &CallOptions{Approval: &ok}); err != nil || ts.called("write") != 2 {
		t.Fatalf("no approver, decided: %v", err)
	}
	_, err = h2.CallTool(ctx, "s__write", d.Args, nil)
	wantKind(t, err, ErrApprovalRequired)

	// DeferAll defers every ask.
	h3 := newHub(t, []Server{ts.server("s")}, &Options{Policy: policy, Approver: DeferAll("later")})
	_, err = h3.CallTool(ctx, "s__write", d.Args, nil)
	if !errors.As(err, &d) || d.Reason != "later" || ts.called("write") != 2 {
		t.Fatalf("DeferAll: %v", err)
	}
}

func mustList(t *testing.T, h *Hub) *ToolSet {
	t.Helper()
	ts, err := h.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// A server of protocol 2026-07-28 asks for input by a multi-round-trip
// result, which ends its request: a handler that defers it leaves the
// call pending with what the server asked and its request state, and the
// call goes on later with the answer, sent back with that state.
func TestDeferredInputMultiRoundTrip(t *testing.T) {
	ts := newTestServer(t, "modern")
	mrtrTools(ts.Server)
	var asked atomic.Int32
	handlers := &Handlers{Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return nil, DeferInput("ask the user")
	}}
	h := newHub(t, []Server{ts.server("s")}, &Options{Handlers: handlers})
	ctx := context.Background()
	_, err := h.CallTool(ctx, "s__elicit", map[string]any{"x": 1.0}, nil)
	e := wantKind(t, err, ErrDeferred)
	var d *Deferral
	if !errors.As(e, &d) || d.Input == nil || d.Reason != "ask the user" || d.Args["x"] != 1.0 {
		t.Fatalf("deferral %+v (%v)", d, err)
	}
	in := d.Input
	if q, ok := in.Requests["who"].(*mcp.ElicitParams); !ok || q.Message != "who?" || in.Resend || len(in.Responses) != 0 {
		t.Fatalf("pending input %+v", in)
	}
	if got := in.Missing(); len(got) != 1 || got[0] != "who" {
		t.Errorf("missing %v", got)
	}
	if e.Message != "The call to s__elicit waits for an answer to what its server asked: ask the user." {
		t.Errorf("message %q", e.Message)
	}
	if ts.called("elicit") != 1 || asked.Load() != 1 {
		t.Fatalf("server saw %d, asked %d", ts.called("elicit"), asked.Load())
	}
	// The answer comes: the request goes again with it, and the server
	// finishes.
	in.Responses["who"] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "Ada"}}
	res, err := h.CallTool(ctx, "s__elicit", d.Args, &CallOptions{Input: in})
	if err != nil || resultText(res) != "accept Ada" || asked.Load() != 1 || ts.called("elicit") != 2 {
		t.Fatalf("resumed: %q %v; asked %d, sent %d", resultText(res), err, asked.Load(), ts.called("elicit"))
	}
}

// A server of protocol 2025-11-25 asks by a JSON-RPC request during its
// call, which cannot wait: the handler's deferral cancels the call (the
// server's request is refused), and it is sent again later, the same
// question then given the recorded answer without asking anyone. The
// server sees the call twice.
func TestDeferredInputLegacy(t *testing.T) {
	ts := legacyServer(t)
	askTools(ts.Server, nil)
	var asked atomic.Int32
	handlers := &Handlers{Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if asked.Add(1) > 1 {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "asked again"}}, nil
		}
		return nil, DeferInput("ask the user")
	}}
	h := newHub(t, []Server{ts.server("s")}, &Options{Handlers: handlers})
	ctx := context.Background()
	_, err := h.CallTool(ctx, "s__elicit", nil, nil)
	wantKind(t, err, ErrDeferred)
	var d *Deferral
	if !errors.As(err, &d) || d.Input == nil || !d.Input.Resend {
		t.Fatalf("deferral %+v", d)
	}
	q, ok := d.Input.Requests[resendKey].(*mcp.ElicitParams)
	if !ok || q.Message != "who?" {
		t.Fatalf("requests %+v", d.Input.Requests)
	}
	in := d.Input.WithResponses(mcp.InputResponseMap{resendKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "Ada"}}})
	res, err := h.CallTool(ctx, "s__elicit", nil, &CallOptions{Input: in})
	if err != nil || resultText(res) != "accept Ada" {
		t.Fatalf("resumed: %q %v", resultText(res), err)
	}
	if asked.Load() != 1 || ts.called("elicit") != 2 {
		t.Errorf("asked %d, server saw the call %d times", asked.Load(), ts.called("elicit"))
	}
}

// The same for sampling, with the deferral's Input saved as JSON and read
// back, as a resumed conversation's state carries it (the SDK reads a
// sampling request and its answer back in their with-tools forms): the
// recorded answer is given to the same question, nobody is asked again.
func TestDeferredSamplingLegacySaved(t *testing.T) {
	ts := legacyServer(t)
	askTools(ts.Server, nil)
	var asked atomic.Int32
	handlers := &Handlers{Sampling: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		if asked.Add(1) > 1 {
			return &mcp.CreateMessageResult{Model: "asked again", Role: "assistant", Content: &mcp.TextContent{Text: "x"}}, nil
		}
		return nil, DeferInput("ask the user")
	}}
	h := newHub(t, []Server{ts.server("s")}, &Options{Handlers: handlers})
	ctx := context.Background()
	_, err := h.CallTool(ctx, "s__sample", nil, nil)
	var d *Deferral
	if !errors.As(err, &d) || d.Input == nil || !d.Input.Resend {
		t.Fatalf("deferral %v %+v", err, d)
	}
	data, err := json.Marshal(d.Input)
	if err != nil {
		t.Fatal(err)
	}
	var in Input
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatal(err)
	}
	answer, err := json.Marshal(&mcp.CreateMessageResult{Model: "the user's", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}})
	if err != nil {
		t.Fatal(err)
	}
	saved, err := json.Marshal(map[string]any{"requests": in.Requests, "responses": map[string]json.RawMessage{resendKey: answer}, "resend": true})
	if err != nil {
		t.Fatal(err)
	}
	var back Input
	if err := json.Unmarshal(saved, &back); err != nil {
		t.Fatal(err)
	}
	res, err := h.CallTool(ctx, "s__sample", nil, &CallOptions{Input: &back})
	if err != nil || resultText(res) != "sampled the user's" {
		t.Fatalf("resumed: %q %v", resultText(res), err)
	}
	if asked.Load() != 1 || ts.called("sample") != 2 {
		t.Errorf("asked %d, server saw the call %d times", asked.Load(), ts.called("sample"))
	}
}
