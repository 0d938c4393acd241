// The spike's workflow, activities and MCP server, which the test suite,
// the in-process server and the replay tests share.
package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/activity"
	sdklog "go.temporal.io/sdk/log"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Names fixed in recorded histories: renaming them breaks replay.
const (
	loopWorkflow   = "AgentLoop"
	approvalSignal = "approval"
	taskQueue      = "conduit-spike"
)

// A ToolCall is one call the model made, as the workflow keeps it.
type ToolCall struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// A CallOutcome is what a call produced: a tool result's text, or a
// governed error's message, either of which goes back to the model.
type CallOutcome struct {
	Text    string `json:"text"`
	IsError bool   `json:"isError,omitempty"`
}

// A Decision answers the approval the workflow waits for.
type Decision struct {
	Allow  bool   `json:"allow"`
	Reason string `json:"reason,omitempty"`
}

// LoopInput is the workflow's argument.
type LoopInput struct {
	Call ToolCall `json:"call"`
	// ApprovalTimeout is how long the workflow waits for a Decision before
	// it denies the call.
	ApprovalTimeout time.Duration `json:"approvalTimeout"`
	// Attempts bounds the call's activity attempts (zero: one).
	Attempts int32 `json:"attempts,omitempty"`
}

// LoopOutput is the workflow's result.
type LoopOutput struct {
	// Tools are the Anthropic tool definitions the listing activity gave.
	Tools []map[string]any `json:"tools"`
	// Waited is the workflow time between the listing and the decision.
	Waited  time.Duration `json:"waited"`
	Outcome CallOutcome   `json:"outcome"`
}

// Activities hold a worker's conduit client for the worker's lifetime:
// its servers are connected once, not per activity.
type Activities struct {
	Source conduit.Source
}

// ListTools lists the source's tools in Anthropic's shape.
func (a *Activities) ListTools(ctx context.Context) ([]map[string]any, error) {
	l, err := adapters.Tools(ctx, a.Source, adapters.Anthropic, nil)
	if err != nil {
		return nil, err
	}
	return l.Tools, nil
}

// CallTool sends one call through conduit's pipeline. It heartbeats while
// the call runs, so that a dead worker is noticed within the heartbeat
// timeout and a cancellation reaches ctx, and from it the MCP request.
func (a *Activities) CallTool(ctx context.Context, call ToolCall) (CallOutcome, error) {
	if hb := activity.GetInfo(ctx).HeartbeatTimeout; hb > 0 {
		stop := heartbeat(ctx, hb/3)
		defer stop()
	}
	res, err := a.Source.CallTool(ctx, call.Name, call.Arguments, nil)
	if ctx.Err() != nil {
		// Canceled or timed out: the activity ends as such, not as an
		// answer to the model.
		return CallOutcome{}, ctx.Err()
	}
	var ce *conduit.Error
	if errors.As(err, &ce) {
		return CallOutcome{Text: ce.Error(), IsError: true}, nil
	}
	if err != nil {
		return CallOutcome{}, err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return CallOutcome{Text: b.String(), IsError: res.IsError}, nil
}

// heartbeat records a heartbeat every d until stop is called.
func heartbeat(ctx context.Context, d time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// AgentLoop lists the tools, waits for a decision on the model's call
// (a signal, or a denial when ApprovalTimeout passes first), and sends the
// call when it is allowed. Everything in it is deterministic: time is
// workflow.Now, waiting is a timer or a channel, and the outside world is
// reached through activities only.
func AgentLoop(ctx workflow.Context, in LoopInput) (LoopOutput, error) {
	var out LoopOutput
	var a *Activities
	attempts := max(in.Attempts, 1)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    5 * time.Second,
		// A tool call is not idempotent: one attempt, unless the test asks
		// for the retry that can send it twice.
		RetryPolicy: &sdktemporal.RetryPolicy{MaximumAttempts: attempts,
			InitialInterval: 100 * time.Millisecond},
		WaitForCancellation: true,
	})
	if err := workflow.ExecuteActivity(ctx, a.ListTools).Get(ctx, &out.Tools); err != nil {
		return out, err
	}
	start := workflow.Now(ctx)
	var d Decision
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, approvalSignal), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, &d)
	})
	sel.AddFuture(workflow.NewTimer(timerCtx, in.ApprovalTimeout), func(workflow.Future) {
		d = Decision{Reason: fmt.Sprintf("no decision within %v", in.ApprovalTimeout)}
	})
	sel.Select(ctx)
	cancelTimer()
	out.Waited = workflow.Now(ctx).Sub(start)
	if !d.Allow {
		out.Outcome = CallOutcome{Text: "denied: " + d.Reason, IsError: true}
		return out, nil
	}
	err := workflow.ExecuteActivity(ctx, a.CallTool, in.Call).Get(ctx, &out.Outcome)
	return out, err
}

// mailServer is an in-process MCP server that counts what it was sent.
type mailServer struct {
	srv *mcp.Server

	mu        sync.Mutex
	sent      map[string]int // send_email and send_once_then_hang calls by id
	waiting   chan string    // ids of wait calls as they start
	cancelled chan string    // ids of wait calls whose context ended
	hanging   chan string    // ids of send_once_then_hang calls that hang
	release   chan struct{}  // closed to end the calls that hang
}

type emailArgs struct {
	ID string `json:"id"`
	To string `json:"to"`
}

type waitArgs struct {
	ID string `json:"id"`
}

func newMailServer() *mailServer {
	m := &mailServer{sent: map[string]int{}, waiting: make(chan string, 8), cancelled: make(chan string, 8),
		hanging: make(chan string, 8), release: make(chan struct{})}
	m.srv = mcp.NewServer(&mcp.Implementation{Name: "mail", Version: "1.0.0"}, nil)
	mcp.AddTool(m.srv, &mcp.Tool{Name: "send_email", Description: "Send an email."},
		func(_ context.Context, _ *mcp.CallToolRequest, in emailArgs) (*mcp.CallToolResult, any, error) {
			m.mu.Lock()
			m.sent[in.ID]++
			m.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("sent %s to %s", in.ID, in.To)}}}, nil, nil
		})
	mcp.AddTool(m.srv, &mcp.Tool{Name: "send_once_then_hang", Description: "Send an email; the first time, hang after sending."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in emailArgs) (*mcp.CallToolResult, any, error) {
			m.mu.Lock()
			m.sent[in.ID]++
			n := m.sent[in.ID]
			m.mu.Unlock()
			if n == 1 {
				m.hanging <- in.ID
				select {
				case <-ctx.Done():
				case <-m.release:
				}
				return nil, nil, errors.New("hung up")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("sent %s to %s", in.ID, in.To)}}}, nil, nil
		})
	mcp.AddTool(m.srv, &mcp.Tool{Name: "wait", Description: "Wait until cancelled.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in waitArgs) (*mcp.CallToolResult, any, error) {
			m.waiting <- in.ID
			<-ctx.Done()
			m.cancelled <- in.ID
			return nil, nil, ctx.Err()
		})
	return m
}

// sends returns how many times the call id was sent.
func (m *mailServer) sends(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sent[id]
}

// client connects a conduit client (a worker's) to the server over an
// in-memory transport; it is closed with the test.
func (m *mailServer) client(t testing.TB) *conduit.Client {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := m.srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	c, err := conduit.NewClient(context.Background(), conduit.Server{ID: "mail", Transport: ct}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func emailCall(id string) ToolCall {
	return ToolCall{ID: id, Name: "send_email", Arguments: map[string]any{"id": id, "to": "ops@example.com"}}
}

// quiet is the SDK's logger in tests: the replayer and the test suite
// log expected failures (the nondeterminism a test provokes) with stacks.
var quiet = sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))

// toolNames are the names in Anthropic tool definitions.
func toolNames(tools []map[string]any) []string {
	var names []string
	for _, t := range tools {
		n, _ := t["name"].(string)
		names = append(names, n)
	}
	return names
}
