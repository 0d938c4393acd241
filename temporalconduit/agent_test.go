// The tests' agent: a workflow over a Conversation and a scripted model
// activity, and an MCP server that counts what it is sent. The test
// suite, the replay and the tests on Temporal's server share them.
package temporalconduit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/temporalconduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/activity"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/workflow"
)

// Names fixed in recorded histories: renaming them breaks replay.
const (
	agentWorkflow = "Agent"
	modelActivity = "Model"
	taskQueue     = "conduit-test"
)

// agentInput is the agent's input: what the model calls each turn, in
// order (after the script, it answers with text), and the conversation's
// options; a state to carry on from, and after how many turns of a run to
// continue as new.
type agentInput struct {
	Script        [][]toolcall.Raw                    `json:"script"`
	Options       temporalconduit.ConversationOptions `json:"options"`
	State         *temporalconduit.State              `json:"state,omitempty"`
	ContinueAfter int                                 `json:"continueAfter,omitempty"`
}

// agentOutput is the agent's result.
type agentOutput struct {
	// Turns are the answers of each turn of this run.
	Turns []temporalconduit.Turn `json:"turns"`
	State temporalconduit.State  `json:"state"`
	Text  string                 `json:"text"`
	Tools [][]string             `json:"tools"` // the tools the model saw, by turn
	Ended string                 `json:"ended"` // "text" or "halted"
}

// modelReply is what the model activity returns: the response, and the
// tool names of the request it answered.
type modelReply struct {
	Response json.RawMessage `json:"response"`
	Tools    []string        `json:"tools"`
}

// agent is an agent loop as an application writes one: the model is its
// own activity, the calls are the Conversation's.
func agent(ctx workflow.Context, in agentInput) (agentOutput, error) {
	var out agentOutput
	var conv *temporalconduit.Conversation
	var err error
	if in.State != nil {
		conv, err = temporalconduit.ResumeConversation(ctx, *in.State, &in.Options)
	} else {
		conv, err = temporalconduit.NewConversation(ctx, &in.Options)
	}
	if err != nil {
		return out, err
	}
	mctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for run := 0; ; run++ {
		if in.ContinueAfter > 0 && run == in.ContinueAfter {
			st := conv.State()
			next := in
			next.State = &st
			return out, workflow.NewContinueAsNewError(ctx, agentWorkflow, next)
		}
		var calls []toolcall.Raw
		if n := conv.State().Turns; n < len(in.Script) {
			calls = in.Script[n]
		}
		var reply modelReply
		if err := workflow.ExecuteActivity(mctx, modelActivity, conv.Offer(), calls).Get(ctx, &reply); err != nil {
			return out, err
		}
		out.Tools = append(out.Tools, reply.Tools)
		if len(calls) == 0 {
			out.Text, out.Ended, out.State = "done", "text", conv.State()
			return out, nil
		}
		turn, err := conv.Execute(ctx, reply.Response)
		if err != nil {
			return out, err
		}
		out.Turns = append(out.Turns, *turn)
		if turn.Halted {
			out.Ended, out.State = "halted", conv.State()
			return out, nil
		}
	}
}

// model is the scripted model activity, on a worker with conduit's
// activities: it asks them for the offer's tool definitions, as a real
// model activity would for its request, and answers with the calls it is
// given, in Anthropic's shape.
type model struct{ acts *temporalconduit.Activities }

func (m *model) respond(ctx context.Context, offer temporalconduit.Offer, calls []toolcall.Raw) (modelReply, error) {
	tools, err := m.acts.Tools(ctx, offer)
	if err != nil {
		return modelReply{}, err
	}
	var reply modelReply
	for _, t := range tools {
		reply.Tools = append(reply.Tools, jsonv.String(t["name"]))
	}
	text := "done"
	if len(calls) > 0 {
		text = "calling tools"
	}
	reply.Response, err = json.Marshal(adaptertest.FakeOf(adapters.Anthropic).Response(text, calls...))
	return reply, err
}

// registry is where the agent is registered: a worker, or a test
// environment.
type registry interface {
	temporalconduit.ActivityRegistry
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// register registers the agent and its activities, over src, on r.
func register(r registry, src conduit.Source, o *temporalconduit.Options) (*temporalconduit.Activities, error) {
	acts, err := temporalconduit.Register(r, src, o)
	if err != nil {
		return nil, err
	}
	r.RegisterWorkflowWithOptions(agent, workflow.RegisterOptions{Name: agentWorkflow})
	r.RegisterActivityWithOptions((&model{acts}).respond, activity.RegisterOptions{Name: modelActivity})
	return acts, nil
}

// registerAgent is register in a test.
func registerAgent(t testing.TB, r registry, src conduit.Source, o *temporalconduit.Options) *temporalconduit.Activities {
	t.Helper()
	acts, err := register(r, src, o)
	if err != nil {
		t.Fatal(err)
	}
	return acts
}

// mailServer is an MCP server that counts what it is sent.
type mailServer struct {
	srv *mcp.Server

	mu        sync.Mutex
	sent      map[string]int // calls by the id argument
	waiting   chan string    // ids of wait calls as they start
	cancelled chan string    // ids of wait calls whose context ended
	hanging   chan string    // ids of hang calls as they hang
	release   chan struct{}  // closed to end the calls that hang
}

type mailArgs struct {
	ID string `json:"id"`
	To string `json:"to,omitempty"`
}

func newMailServer() *mailServer {
	m := &mailServer{sent: map[string]int{}, waiting: make(chan string, 8), cancelled: make(chan string, 8),
		hanging: make(chan string, 8), release: make(chan struct{})}
	m.srv = mcp.NewServer(&mcp.Implementation{Name: "mail", Version: "1.0.0"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(m.srv, &mcp.Tool{Name: "send_email", Description: "Send an email."},
		func(_ context.Context, _ *mcp.CallToolRequest, in mailArgs) (*mcp.CallToolResult, any, error) {
			m.count(in.ID)
			return text(fmt.Sprintf("sent %s to %s", in.ID, in.To)), nil, nil
		})
	mcp.AddTool(m.srv, &mcp.Tool{Name: "read_inbox", Description: "Read the inbox.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in mailArgs) (*mcp.CallToolResult, any, error) {
			m.count(in.ID)
			return text("3 unread messages"), nil, nil
		})
	mcp.AddTool(m.srv, &mcp.Tool{Name: "send_then_hang", Description: "Send an email, then hang until released."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mailArgs) (*mcp.CallToolResult, any, error) {
			m.count(in.ID)
			m.hanging <- in.ID
			select {
			case <-ctx.Done():
			case <-m.release:
			}
			return nil, nil, errors.New("hung up")
		})
	mcp.AddTool(m.srv, &mcp.Tool{Name: "wait", Description: "Report progress, then wait until cancelled.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in mailArgs) (*mcp.CallToolResult, any, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "halfway"})
			}
			m.waiting <- in.ID
			<-ctx.Done()
			m.cancelled <- in.ID
			return nil, nil, ctx.Err()
		})
	return m
}

func (m *mailServer) count(id string) {
	m.mu.Lock()
	m.sent[id]++
	m.mu.Unlock()
}

// sends returns how many times calls with the id argument were sent.
func (m *mailServer) sends(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sent[id]
}

// policy asks about sending and allows the rest.
func policy() *conduit.Policy {
	return conduit.NewPolicy(conduit.Ask("mail/send_email"), conduit.Allow("mail/*"))
}

// client connects a conduit client, as a worker holds one, to the server
// over an in-memory transport, with the policy and an approver that
// defers what it asks; st is its store (nil: its own). It is closed with
// the test.
func (m *mailServer) client(t testing.TB, st store.Store) *conduit.Client {
	t.Helper()
	ct, srvT := mcp.NewInMemoryTransports()
	if _, err := m.srv.Connect(context.Background(), srvT, nil); err != nil {
		t.Fatal(err)
	}
	c, err := conduit.NewClient(context.Background(), conduit.Server{ID: "mail", Transport: ct},
		&conduit.Options{Policy: policy(), Approver: conduit.DeferAll("a person decides"), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(id string) toolcall.Raw {
	return toolcall.Raw{ID: id, Name: "send_email", Args: map[string]any{"id": id, "to": "ops@example.com"}}
}

func read(id string) toolcall.Raw {
	return toolcall.Raw{ID: id, Name: "read_inbox", Args: map[string]any{"id": id}}
}

// answered returns the answers of a turn, in Anthropic's shape: each
// call's id and text, the text prefixed with "error: " for an error.
func answered(results []map[string]any) []string {
	var out []string
	for _, r := range results {
		var text string
		for _, c := range jsonv.List(r["content"]) {
			text += jsonv.String(jsonv.Object(c)["text"])
		}
		if b, _ := r["is_error"].(bool); b {
			text = "error: " + text
		}
		out = append(out, jsonv.String(r["tool_use_id"])+" "+text)
	}
	return out
}

// quiet is the SDK's logger in tests: the replayer and the test suite
// log expected failures with stacks.
var quiet = sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
