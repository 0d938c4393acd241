package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/conduitmcp/conduit/internal/errtext"
)

// Error is the one error type of a governed call. Its Message is written
// to be shown to a model. Error() adds the kind, server and tool for logs.
// A tool result with isError set is not an Error: the model should see it.
//
// errors.Is(err, ErrDenied) compares kinds. errors.Is reaches the cause
// through Unwrap. So a timeout also matches context.DeadlineExceeded.
type Error struct {
	// Kind says why the call produced no result. It is one of the Err
	// sentinels below. Nil, or any other value, reads as ErrInternal.
	Kind    *Error
	Server  string // server id, when known
	Tool    string // the tool's own name on its server, when known
	Message string // fit to show a model
	// Halt reports that an approver denied the call and asked to stop the
	// agent loop.
	Halt bool
	Err  error // the cause, if any

	name string // a sentinel's wire name
}

// The sentinels, one per kind. Each is its own Kind. errors.Is matches
// any *Error of its kind. String gives the kind's wire name.
var (
	// ErrInternal is a failure inside conduit or a user callback (a hook
	// or approver that panicked).
	ErrInternal = sentinel("internal")
	// ErrUnknownTool: the name is not in the tool set the model was
	// offered.
	ErrUnknownTool = sentinel("unknown_tool")
	// ErrInvalidArguments: the arguments are not an object, or do not
	// match the tool's input schema.
	ErrInvalidArguments = sentinel("invalid_arguments")
	// ErrDenied: the policy, an approver or a before-hook refused the call.
	ErrDenied = sentinel("denied")
	// ErrApprovalRequired: the policy asked for approval and no approver
	// is configured.
	ErrApprovalRequired = sentinel("approval_required")
	// ErrHalted: the call was not sent because an approver halted the
	// batch.
	ErrHalted = sentinel("halted")
	// ErrTimeout: the call, or the request to the server, ran out of time.
	ErrTimeout = sentinel("timeout")
	// ErrCanceled: the caller's context was canceled.
	ErrCanceled = sentinel("canceled")
	// ErrUnavailable: the server is down, or its session was lost during
	// the call.
	ErrUnavailable = sentinel("unavailable")
	// ErrServerError: the server answered with a JSON-RPC error.
	ErrServerError = sentinel("server_error")
	// ErrLimit: the call's arguments, or its result, are over one of the
	// [Limits]. Arguments over a limit are not sent. A result over one
	// was produced by the server but is not passed on. conduit serve's
	// limits on callers (calls per minute, calls at once) refuse with it
	// too, unsent.
	ErrLimit = sentinel("limit")
	// ErrDeferred: the call was not sent, or not finished, and waits for a
	// decision. An approver deferred it ([Defer]). Or a handler deferred
	// what its server asked during it ([DeferInput]). Its cause is the
	// [Deferral]. The adapters report it as pending.
	ErrDeferred = sentinel("deferred")
)

func sentinel(name string) *Error {
	e := &Error{name: name}
	e.Kind = e
	return e
}

// kind is e's sentinel.
func (e *Error) kind() *Error {
	switch {
	case e.name != "":
		return e
	case e.Kind != nil && e.Kind.name != "":
		return e.Kind
	}
	return ErrInternal
}

// String returns the wire name of e's kind, as in logs and JSON:
// "denied", "timeout". A nil *Error is "internal".
func (e *Error) String() string {
	if e == nil {
		return ErrInternal.name
	}
	return e.kind().name
}

// Error returns the message with the kind, server and tool, for logs. A
// sentinel's is its kind's wire name alone, so e.Kind prints as "denied".
func (e *Error) Error() string {
	if e.name != "" {
		return e.name
	}
	where := e.Server
	if e.Tool != "" {
		where += "/" + e.Tool
	}
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if where == "" {
		return "conduit: " + e.String() + ": " + msg
	}
	return "conduit: " + e.String() + " (" + where + "): " + msg
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
	}{e.String(), e.Server, e.Tool, e.Message, e.Halt})
}

// Is reports whether target is the sentinel of e's kind. So
// errors.Is(err, ErrTimeout) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.name != "" && e.kind() == t
}

func newError(kind *Error, server, tool, msg string, cause error) *Error {
	return &Error{Kind: kind, Server: server, Tool: tool, Message: msg, Err: cause}
}

// The texts a model reads when conduit answers a call itself, without a
// result. Each is written here once, for the pipeline and the adapters
// alike.

// unavailableError is the error of a call of exposed, a tool of server,
// which is down. The model is told it may try again later.
func unavailableError(server, tool, exposed string, cause error) *Error {
	return newError(ErrUnavailable, server, tool, "The server of "+exposed+" is unavailable; try again later.", cause)
}

func unknownToolError(name string) *Error {
	return newError(ErrUnknownTool, "", "", fmt.Sprintf("Unknown tool %q: it is not among the tools offered.", name), nil)
}

// invalidArgumentsError is the error of a call to t whose arguments cannot
// be sent, for reason. They are not a JSON object, or not what the input
// schema asks for. Nothing is sent.
func invalidArgumentsError(t *Tool, reason error) *Error {
	return newError(ErrInvalidArguments, t.Server, t.Name, errtext.InvalidArguments(t.Exposed, reason), reason)
}

// argsLimitError is the error of a call to t whose arguments are over a
// limit. reason says what is over which limit. Nothing is sent.
func argsLimitError(t *Tool, reason error) *Error {
	return newError(ErrLimit, t.Server, t.Name,
		"The call to "+t.Exposed+" was not made: its arguments "+reason.Error()+". Send smaller, flatter arguments.", reason)
}

// resultLimitError is the error of a call to t whose result is over a
// limit, for reason. The server did run the call, which the model must
// know before it tries again.
func resultLimitError(t *Tool, reason error) *Error {
	return newError(ErrLimit, t.Server, t.Name,
		"The call to "+t.Exposed+" was made, but its result was not passed on: it "+reason.Error()+". Ask for less at a time, if the tool allows it.", reason)
}

// haltedError is the error of a call to t that was not sent because an
// approver halted its batch.
func haltedError(t *Tool) *Error {
	return newError(ErrHalted, t.Server, t.Name, errtext.Halted(t.Exposed), nil)
}

// endedError is the error of a call to t whose context ctx ended. t is
// nil when the call had not resolved to a tool yet. The kind is
// ErrTimeout when its deadline passed, ErrCanceled otherwise. cause, if
// any, is kept. The message names the call's time limit when that is what
// ended ctx. That is limit, when not zero, or the limit the pipeline set
// on ctx itself.
func endedError(ctx context.Context, t *Tool, limit time.Duration, cause error) *Error {
	var server, tool string
	what := "The call"
	if t != nil {
		server, tool, what = t.Server, t.Name, "The call to "+t.Exposed
	}
	end, msg, err := errtext.Context(ctx, what, limit, cause)
	return newError(endKind(end), server, tool, msg, err)
}

// endKind is the kind of the error of a call whose context ended as end.
func endKind(end errtext.End) *Error {
	switch end {
	case errtext.Canceled:
		return ErrCanceled
	case errtext.TimedOut:
		return ErrTimeout
	}
	return ErrInternal
}

// listingError is the error of a call whose tool set could not be listed.
func listingError(ctx context.Context, err error) *Error {
	if ctx.Err() != nil {
		return endedError(ctx, nil, 0, err)
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return newError(ErrUnavailable, "", "", "The tools are unavailable: "+err.Error(), err)
}
