package adapters

import (
	"log/slog"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TurnOptions are the options a turn's calls share. They say what each
// call is made with, as in conduit.CallOptions. They say how its answers
// are written, and how the turn is bounded and reported. ExecOptions and
// ConversationOptions embed them. The zero value is the defaults.
//
// A call's own options are not here, since they never apply to a whole
// turn. Those are its ID, and its Approval and Input when a deferred
// call is resumed.
type TurnOptions struct {
	// Principal is who the calls are made for. Policy conditions,
	// approvers and hooks see it. A listing leaves out what the policy
	// denies the principal.
	Principal string
	// Assigns carries values of the caller's for approvers and hooks.
	Assigns map[string]any
	// Taint lists the servers whose output is already in the model's
	// context. Tainted conditions react to it.
	Taint []string
	// CallTimeout bounds each call, approval and hooks included.
	// RequestTimeout bounds each request to a server (see conduit.CallOptions).
	CallTimeout    time.Duration
	RequestTimeout time.Duration
	// Meta is sent as each request's _meta.
	Meta mcp.Meta
	// Progress, when set, receives the servers' progress notifications.
	Progress func(*conduit.Call, conduit.Progress)
	// Handlers answer what a server sends during a call.
	Handlers *conduit.Handlers

	// Answers say how answers are written. They cover structuredContent's
	// use, OpenAI's error prefix and images. They also set every result's
	// budget (Answers.MaxResultTokens), unless its server or the call sets one.
	Answers toolcall.AnswerOptions
	// MaxConcurrency is how many calls of a turn run at once (default
	// runtime.GOMAXPROCS(0)).
	MaxConcurrency int
	// Limits bound the response's size, and how many of its calls are
	// run. See ResponseLimits. The zero value is the defaults.
	Limits ResponseLimits
	// Budget bounds what the model reads of the turn's results together,
	// beyond each result's budget (see BudgetOptions).
	Budget BudgetOptions
	// Trace, when set, is told of strict-mode fallbacks in a listing. It
	// is also told of results over the budget's warning threshold, or
	// cut. Logger, when set, logs them.
	Trace  *Trace
	Logger *slog.Logger
}

// callOptions are the options of the call id, resolved against ts and
// stopped by halt. This is the one place a turn's options become a call's.
func (o *TurnOptions) callOptions(ts *conduit.ToolSet, id string, halt <-chan struct{}) conduit.CallOptions {
	return conduit.CallOptions{ToolSet: ts, ID: id, Principal: o.Principal, Assigns: o.Assigns, Taint: o.Taint,
		CallTimeout: o.CallTimeout, RequestTimeout: o.RequestTimeout, Meta: o.Meta, Progress: o.Progress, Halt: halt, Handlers: o.Handlers}
}
