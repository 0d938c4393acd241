package conduit

import "context"

// Approver decides the calls that the policy sends to approval ("ask"). It
// should honour ctx: when it does not, the call is still answered when ctx
// ends, as a timeout, and the approver's late answer is dropped.
//
// An approver that cannot decide now (the person is not there: a web
// application's approval comes on a later request) answers [Defer]: the
// call is not sent, and is reported pending, to be decided later from a
// saved conversation (see adapters.Conversation.Resume).
type Approver func(ctx context.Context, req ApprovalRequest) Approval

// ApprovalRequest is what an approver is asked to decide.
type ApprovalRequest struct {
	// Call is the call to decide; the approver must not change it.
	Call *Call
	// Rule is the policy rule that asked for approval.
	Rule Rule
}

// Approval is an approver's answer. The zero value denies.
type Approval struct {
	// Allow lets the call go on.
	Allow bool
	// Reason, for a denial, is shown to the model; for a deferral, it
	// says what the call waits for (Deferral.Reason).
	Reason string
	// Halt, with a denial, asks the agent loop to stop: calls of the same
	// batch that have not been sent are answered, not sent.
	Halt bool
	// Defer, without Allow, leaves the call undecided: it is not sent,
	// and fails with a ErrDeferred error whose cause is the [Deferral]
	// that says what it waits for. The adapters report it as pending
	// (Execution.Pending) and complete the turn when it is decided.
	Defer bool
}

// Approve is the answer that lets a call go on.
func Approve() Approval { return Approval{Allow: true} }

// Reject denies a call, with a reason for the model.
func Reject(reason string) Approval { return Approval{Reason: reason} }

// RejectAndHalt denies a call and asks the agent loop to stop.
func RejectAndHalt(reason string) Approval { return Approval{Reason: reason, Halt: true} }

// Defer leaves a call to be decided later, saying why (for the person who
// will decide, not for the model): see [Approval.Defer].
func Defer(reason string) Approval { return Approval{Defer: true, Reason: reason} }

// DeferAll is an approver that defers every call the policy asks about,
// with reason: for applications in which a person decides later, on
// another request or another instance, from the saved conversation
// (adapters.Conversation.State and Resume).
func DeferAll(reason string) Approver {
	return func(context.Context, ApprovalRequest) Approval { return Defer(reason) }
}
