package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrorKind classifies why a governed call did not produce a tool result.
type ErrorKind int

// The kinds of [Error]. A tool result with isError set is not an Error: it is
// a result the model should see.
const (
	// KindInternal is a failure inside conduit or a user callback (a hook or
	// approver that panicked).
	KindInternal ErrorKind = iota
	// KindUnknownTool: the name is not in the tool set the model was offered.
	KindUnknownTool
	// KindInvalidArguments: the arguments are not an object, or do not match
	// the tool's input schema.
	KindInvalidArguments
	// KindDenied: the policy, an approver or a before-hook refused the call.
	KindDenied
	// KindApprovalRequired: the policy asked for approval and no approver is
	// configured.
	KindApprovalRequired
	// KindHalted: the call was not sent because an approver halted the batch.
	KindHalted
	// KindTimeout: the call, or the request to the server, ran out of time.
	KindTimeout
	// KindCanceled: the caller's context was canceled.
	KindCanceled
	// KindUnavailable: the server is down, or its session was lost during the
	// call.
	KindUnavailable
	// KindServerError: the server answered with a JSON-RPC error.
	KindServerError
	// KindLimit: the call's arguments, or its result, are over one of the
	// [Limits]. Arguments over a limit are not sent. A result over one was
	// produced by the server but is not passed on. conduit serve has limits
	// on callers: calls per minute, calls at once. They refuse a call with
	// it too, unsent.
	KindLimit
	// KindDeferred: the call was not sent, or not finished, and waits for
	// a decision. An approver deferred it ([Defer]). Or a handler deferred
	// what its server asked during it ([DeferInput]). Its cause is the
	// [Deferral]. The adapters report it as pending.
	KindDeferred
)

var kindNames = [...]string{
	KindInternal:         "internal",
	KindUnknownTool:      "unknown_tool",
	KindInvalidArguments: "invalid_arguments",
	KindDenied:           "denied",
	KindApprovalRequired: "approval_required",
	KindHalted:           "halted",
	KindTimeout:          "timeout",
	KindCanceled:         "canceled",
	KindUnavailable:      "unavailable",
	KindServerError:      "server_error",
	KindLimit:            "limit",
	KindDeferred:         "deferred",
}

// String returns the kind's snake_case name, as used in logs and JSON.
func (k ErrorKind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// Error is the one error type of a governed call. Its Message is written
// to be shown to a model. Error() adds the kind, server and tool for logs.
//
// errors.Is(err, ErrDenied) compares kinds, as with the other sentinels.
// errors.Is reaches the cause through Unwrap. So a timeout also matches
// context.DeadlineExceeded.
type Error struct {
	Kind    ErrorKind // why the call produced no result
	Server  string    // server id, when known
	Tool    string    // the tool's own name on its server, when known
	Message string    // fit to show a model
	// Halt reports that an approver denied the call and asked to stop the
	// agent loop.
	Halt bool
	Err  error // the cause, if any
}

// Sentinels for errors.Is: each matches any *Error of its kind.
var (
	ErrInternal         = &Error{Kind: KindInternal}
	ErrUnknownTool      = &Error{Kind: KindUnknownTool}
	ErrInvalidArguments = &Error{Kind: KindInvalidArguments}
	ErrDenied           = &Error{Kind: KindDenied}
	ErrApprovalRequired = &Error{Kind: KindApprovalRequired}
	ErrHalted           = &Error{Kind: KindHalted}
	ErrTimeout          = &Error{Kind: KindTimeout}
	ErrCanceled         = &Error{Kind: KindCanceled}
	ErrUnavailable      = &Error{Kind: KindUnavailable}
	ErrServerError      = &Error{Kind: KindServerError}
	ErrLimit            = &Error{Kind: KindLimit}
	ErrDeferred         = &Error{Kind: KindDeferred}
)

// Error returns the message with the kind, server and tool, for logs.
func (e *Error) Error() string {
	where := e.Server
	if e.Tool != "" {
		where += "/" + e.Tool
	}
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if where == "" {
		return "conduit: " + e.Kind.String() + ": " + msg
	}
	return "conduit: " + e.Kind.String() + " (" + where + "): " + msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// MarshalJSON writes e as {"kind", "server", "tool", "message", "halt"},
// the kind by name. The cause is left out, as it is not for the model.
func (e *Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind    string `json:"kind"`
		Server  string `json:"server,omitempty"`
		Tool    string `json:"tool,omitempty"`
		Message string `json:"message"`
		Halt    bool   `json:"halt,omitempty"`
	}{e.Kind.String(), e.Server, e.Tool, e.Message, e.Halt})
}

// Is reports whether target is a sentinel of the same kind. A sentinel is
// an *Error with no server, tool or message. So errors.Is(err, ErrTimeout)
// works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Server != "" || t.Tool != "" || t.Message != "" || t.Err != nil {
		return false
	}
	return t.Kind == e.Kind
}

// KindOf returns the kind of the first *Error in err's chain, and false when
// there is none.
func KindOf(err error) (ErrorKind, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, true
	}
	return 0, false
}

func newError(kind ErrorKind, server, tool, msg string, cause error) *Error {
	return &Error{Kind: kind, Server: server, Tool: tool, Message: msg, Err: cause}
}

// The texts a model reads when conduit answers a call itself, without a
// result. Each is written here once, for the pipeline and the adapters
// alike.

// unavailableError is the error of a call of exposed, a tool of server,
// which is down. The model is told it may try again later.
func unavailableError(server, tool, exposed string, cause error) *Error {
	return newError(KindUnavailable, server, tool, "The server of "+exposed+" is unavailable; try again later.", cause)
}

func unknownToolError(name string) *Error {
	return newError(KindUnknownTool, "", "", fmt.Sprintf("Unknown tool %q: it is not among the tools offered.", name), nil)
}

// InvalidArgumentsError is the error of a call to t whose arguments cannot
// be sent, for reason. They are not a JSON object, or not what the input
// schema asks for. Nothing is sent.
func InvalidArgumentsError(t *Tool, reason error) *Error {
	msg := "Invalid arguments for " + t.Exposed
	if reason != nil {
		msg += ": " + reason.Error()
	}
	return newError(KindInvalidArguments, t.Server, t.Name, sentence(msg), reason)
}

// argsLimitError is the error of a call to t whose arguments are over a
// limit. reason says what is over which limit. Nothing is sent.
func argsLimitError(t *Tool, reason error) *Error {
	return newError(KindLimit, t.Server, t.Name,
		"The call to "+t.Exposed+" was not made: its arguments "+reason.Error()+". Send smaller, flatter arguments.", reason)
}

// resultLimitError is the error of a call to t whose result is over a
// limit, for reason. The server did run the call, which the model must
// know before it tries again.
func resultLimitError(t *Tool, reason error) *Error {
	return newError(KindLimit, t.Server, t.Name,
		"The call to "+t.Exposed+" was made, but its result was not passed on: it "+reason.Error()+". Ask for less at a time, if the tool allows it.", reason)
}

// HaltedError is the error of a call to t that was not sent because an
// approver halted its batch.
func HaltedError(t *Tool) *Error {
	return newError(KindHalted, t.Server, t.Name,
		"The call to "+t.Exposed+" was not made: the run was halted by an approver.", nil)
}

// ContextError is the error of a call to t whose context ctx ended. t is
// nil when the call had not resolved to a tool yet. The kind is
// KindTimeout when its deadline passed, KindCanceled otherwise. cause, if
// any, is kept. The message names the call's time limit when that is what
// ended ctx. That is limit, when not zero, or the limit the pipeline set
// on ctx itself.
func ContextError(ctx context.Context, t *Tool, limit time.Duration, cause error) *Error {
	var server, tool, what string
	what = "The call"
	if t != nil {
		server, tool, what = t.Server, t.Name, "The call to "+t.Exposed
	}
	var le *limitError
	if limit == 0 && errors.As(context.Cause(ctx), &le) {
		limit = le.limit
	}
	switch {
	case ctx.Err() == nil && limit == 0:
		// Not a context's end after all: a caller's mistake, said plainly.
		return newError(KindInternal, server, tool, what+" failed.", cause)
	case errors.Is(ctx.Err(), context.Canceled) && limit == 0:
		return newError(KindCanceled, server, tool, what+" was canceled.", errors.Join(context.Canceled, cause))
	case limit > 0:
		return newError(KindTimeout, server, tool, fmt.Sprintf("%s timed out after %v.", what, limit), errors.Join(context.DeadlineExceeded, cause))
	}
	return newError(KindTimeout, server, tool, what+" ran out of time.", errors.Join(context.DeadlineExceeded, cause))
}

// listingError is the error of a call whose tool set could not be listed.
func listingError(ctx context.Context, err error) *Error {
	if ctx.Err() != nil {
		return ContextError(ctx, nil, 0, err)
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return newError(KindUnavailable, "", "", "The tools are unavailable: "+err.Error(), err)
}

// sentence ends s with a full stop.
func sentence(s string) string {
	if strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}
