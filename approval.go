package conduit

import "context"

// Approver decides the calls that the policy sends to approval ("ask"). It
// should honour ctx: when it does not, the call is still answered when ctx
// ends, as a timeout, and the approver's late answer is dropped.
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
	// Reason, for a denial, is shown to the model.
	Reason string
	// Halt, with a denial, asks the agent loop to stop: calls of the same
	// batch that have not been sent are answered, not sent.
	Halt bool
}

// Approve is the answer that lets a call go on.
func Approve() Approval { return Approval{Allow: true} }

// Reject denies a call, with a reason for the model.
func Reject(reason string) Approval { return Approval{Reason: reason} }

// RejectAndHalt denies a call and asks the agent loop to stop.
func RejectAndHalt(reason string) Approval { return Approval{Reason: reason, Halt: true} }
