package conduit

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call is one call on its way through the pipeline, as conditions,
// approvers and hooks see it.
type Call struct {
	// ID is the call's id from the model's response, when it came from
	// one ([CallOptions.ID]).
	ID      string
	Server  string // server id
	Tool    string // the tool's own name on its server
	Exposed string // the name the model used
	Def     *Tool  // the offered definition
	// Args are the arguments, a JSON object; before-hooks may change them.
	Args map[string]any
	// Principal, Assigns and Taint are the call's [CallOptions] of the
	// same names.
	Principal string
	Assigns   map[string]any
	Taint     []string
	// Method is the MCP method of the call: "tools/call", "prompts/get"
	// or "resources/read". For a prompt, Tool is the prompt's name and Def
	// is nil. For a resource, Tool is its URI and Def is nil. In a listing,
	// Tool is the resource's URI template.
	Method string
}

// Progress is one progress notification of a running call.
type Progress struct {
	Progress float64 // how far the call is, in the server's units
	Total    float64 // zero when unknown
	Message  string  // optional, from the server
}

// CallOptions are the options of one call. The zero value is fine.
type CallOptions struct {
	// ToolSet is the tool set the model was offered; the name resolves
	// against it only. Nil means the current tool set.
	ToolSet *ToolSet
	// ID is the call's id in the model's response, passed on to approvers,
	// hooks and Trace as Call.ID.
	ID string
	// Principal is who the call is made for, seen by policy conditions,
	// approvers and hooks.
	Principal string
	// Assigns carries values of the caller's for approvers and hooks.
	Assigns map[string]any
	// Taint lists the servers whose output is already in the model's
	// context; Tainted conditions react to it.
	Taint []string
	// CallTimeout bounds the whole call, approval and hooks included. It
	// holds even when an approver or hook ignores its context. Past it the
	// call is answered with ErrTimeout. If zero, Options.CallTimeout is
	// used. Negative means no bound beyond ctx.
	CallTimeout time.Duration
	// RequestTimeout bounds the request to the server. On expiry the call
	// is answered with ErrTimeout. The SDK sends the server
	// notifications/cancelled. If zero, Options.RequestTimeout is used.
	RequestTimeout time.Duration
	// Meta is sent as the request's _meta. That holds for prompts/get,
	// resources/read and completion/complete too. Keys a Trace.RequestMeta
	// sets replace its own. A trace context here is the parent of the
	// call's. The server then gets the call's context.
	Meta mcp.Meta
	// Progress, when set, receives the server's progress notifications
	// with the call they belong to. They come in order, on a goroutine
	// apart from the call's. It may be slower than the server. Then at
	// most 16 wait, and the oldest are dropped. So a flooding server costs
	// bounded memory. Notifications that arrive after the result are
	// dropped. Those that arrived before it are delivered before the call
	// returns. If the callback takes more than 2s to catch up, they are
	// delivered just after.
	Progress func(*Call, Progress)
	// Halt, when closed, stops the call before it is sent: it is answered
	// with a ErrHalted error. The adapters close it when an approver halts
	// the batch.
	Halt <-chan struct{}
	// Handlers answer what the server sends during this call: elicitation,
	// sampling and roots requests, and log messages. They take effect on
	// a hub or client whose Options.Handlers are set; see [Handlers].
	Handlers *Handlers
	// Approval, when set, is the answer to the policy's "ask" for this
	// call, decided beforehand. The call was deferred, and a person
	// decided it later. The approver is not asked. Trace.Approved is told
	// of it. The policy still decides first. A call it now allows or
	// denies outright is not asked about at all.
	Approval *Approval
	// Input puts what the server asks during the request in the caller's
	// hands, across requests (see [Input]). It does one of three things:
	//
	//   - It takes up a call deferred for input. That is [Deferral].Input,
	//     its Responses now complete.
	//   - It makes the retry of a request whose server asked.
	//   - It has such a request end with the server's question
	//     (Input.Return).
	//
	// Nil means conduit answers what the server asks through Handlers.
	Input *Input
	// DetachTask, for a server that answers the call with a task
	// (SEP-2663), returns the task rather than follow it to its end. The
	// call then fails with an error matching ErrDeferred. Its [Deferral].Input.Task
	// names the task and the wait before the next poll. Taken up with that
	// Input and DetachTask, the call asks about the task once: its result
	// when it is over, else the same deferral. A durable caller (a Temporal
	// workflow) waits between polls on its own timers, so no process sits
	// in a poll loop for the task's life.
	DetachTask bool
}

// call runs one call of a server's tool through the governed pipeline.
func (c *core) call(ctx context.Context, name string, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	o := callOptions(opts)
	r := newRequest(methodCallTool, o, methodCallTool, name)
	r.halt, r.args = o.Halt, args
	return c.run(ctx, r)
}

// callResolved runs one call of t, which the caller resolved.
func (c *core) callResolved(ctx context.Context, t *Tool, args map[string]any, opts *CallOptions) (*mcp.CallToolResult, error) {
	if t == nil {
		return nil, unknownToolError("")
	}
	o := callOptions(opts)
	r := newRequest(methodCallTool, o, methodCallTool, t.Exposed)
	r.halt, r.args, r.tool = o.Halt, args, t
	return c.run(ctx, r)
}

func halted(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// limitError is the cause of a context ended by a call's own time limit.
// The call's timeout error names it.
type limitError struct{ limit time.Duration }

func (e *limitError) Error() string {
	return fmt.Sprintf("the call's time limit of %v passed", e.limit)
}

// CallLimit names the limit, for the call's timeout error's words.
func (e *limitError) CallLimit() time.Duration { return e.limit }

// Is makes the limit a deadline, for errors.Is(err, context.DeadlineExceeded).
func (e *limitError) Is(target error) bool { return target == context.DeadlineExceeded }
