package conduit

import (
	"errors"

	"github.com/conduitmcp/conduit/internal/errtext"
)

// Deferred calls. An approver may not be able to decide a call now. Nor
// may a handler of what its server asks. The call then leaves the
// pipeline with what it waits for. That is a ErrDeferred error whose
// cause is a Deferral. It is taken up again later with the decision
// (CallOptions.Approval and CallOptions.Input). The same process or
// another one may do so (adapters.Conversation).

// Deferral is the cause of a ErrDeferred error: what a deferred call
// waits for. Get it with errors.As.
type Deferral struct {
	// Rule is the policy rule that asked for approval; the zero Rule for
	// a call deferred for input.
	Rule Rule
	// Reason is the approver's or the handler's, for the person who
	// decides.
	Reason string
	// Args are the arguments as the approver saw them (a copy). For a call
	// deferred for input, they are as they were sent.
	Args map[string]any
	// Input is set for a call whose server asked for input that a handler
	// deferred ([DeferInput]). It is what the server asked and what the
	// call needs to go on. It is nil for a deferred approval.
	Input *Input
}

// Error says what the call waits for.
func (d *Deferral) Error() string {
	what := "approval"
	if d.Input != nil {
		what = "input"
	}
	if d.Reason == "" {
		return "deferred: waiting for " + what
	}
	return "deferred: waiting for " + what + ": " + d.Reason
}

// inputDeferral is a request whose server's question a handler deferred.
// The multi-round-trip loop or a JSON-RPC request's handler ends the
// request with it.
type inputDeferral struct {
	reason string
	input  *Input
}

func (e *inputDeferral) Error() string { return "conduit: deferred: " + e.reason }

// inputDeferred returns the deferral of a request whose server's question
// a handler deferred. It returns nil when none did. The request was made
// with in, and ended with err. in is nil when it was not registered. A
// JSON-RPC request's deferral wins over what the server made of the call
// it cancelled.
func inputDeferred(in *inflight, err error) *inputDeferral {
	if in != nil {
		if d := in.deferred(); d != nil {
			return d
		}
	}
	if err == nil {
		return nil
	}
	if d := (*inputDeferral)(nil); errors.As(err, &d) {
		return d
	}
	return nil
}

// DeferInput is the error a [Handlers] function returns to defer what the
// server asked rather than answer it now. That is an elicitation, a
// sampling or roots request. The call fails with a ErrDeferred error.
// Its [Deferral] carries the question ([Input]), to be answered later
// (see adapters.Conversation.Resume). reason is for the person who will
// answer.
func DeferInput(reason string) error {
	return &Error{Kind: ErrDeferred, Message: reason}
}

// deferredInput reports whether err, a handler's, defers its question,
// and with what reason.
func deferredInput(err error) (string, bool) {
	var e *Error
	if errors.As(err, &e) && e.Kind == ErrDeferred {
		return e.Message, true
	}
	return "", false
}

// deferredError is the error of call, deferred as d says.
func deferredError(call *Call, d *Deferral) *Error {
	return newError(ErrDeferred, call.Server, call.Tool, errtext.Deferred(subject(call), d.Input != nil, d.Reason), d)
}

// deniedError is the error of call, denied with reason.
func deniedError(call *Call, reason string, halt bool) *Error {
	e := newError(ErrDenied, call.Server, call.Tool, errtext.Denied(subject(call), reason), nil)
	e.Halt = halt
	return e
}
