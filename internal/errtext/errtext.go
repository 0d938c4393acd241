// Package errtext words the errors a model reads when conduit answers a
// call itself. The root's pipeline and the packages that answer for it
// (adapters, temporalconduit) build their *conduit.Error with the same
// words, so an answer reads the same whoever makes it.
package errtext

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Halted is the message of a call to exposed not sent because an
// approver halted its batch.
func Halted(exposed string) string {
	return "The call to " + exposed + " was not made: the run was halted by an approver."
}

// Denied is the message of a call denied with reason. subject names the
// call ("The call to X").
func Denied(subject, reason string) string {
	msg := subject + " was denied"
	if r := strings.TrimSpace(reason); r != "" {
		msg += ": " + strings.TrimSuffix(r, ".")
	}
	return msg + "."
}

// Deferred is the message of a call that waits, for reason. input marks
// a wait for an answer to its server's question, not for a decision.
func Deferred(subject string, input bool, reason string) string {
	what := "a decision"
	if input {
		what = "an answer to what its server asked"
	}
	msg := subject + " waits for " + what
	if r := strings.TrimSpace(reason); r != "" {
		msg += ": " + strings.TrimSuffix(r, ".")
	}
	return msg + "."
}

// InvalidArguments is the message of a call to exposed whose arguments
// cannot be sent, for reason (nil when none is known).
func InvalidArguments(exposed string, reason error) string {
	msg := "Invalid arguments for " + exposed
	if reason != nil {
		msg += ": " + reason.Error()
	}
	return sentence(msg)
}

// sentence ends s with a full stop.
func sentence(s string) string {
	if strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// End is how a call's context ended.
type End int

// The ends of a call's context.
const (
	NotEnded End = iota // not a context's end after all: a caller's mistake
	Canceled            // canceled by its caller
	TimedOut            // its deadline passed
)

// limited is a context's cause that names the call's own time limit.
type limited interface{ CallLimit() time.Duration }

// Context words the end of ctx, a call's context. what names the call
// ("The call to X", or "The call"). The message names the call's time
// limit when that is what ended ctx: limit when not zero, else the limit
// a cause on ctx names. cause, if any, is kept in err.
func Context(ctx context.Context, what string, limit time.Duration, cause error) (End, string, error) {
	var le limited
	if limit == 0 && errors.As(context.Cause(ctx), &le) {
		limit = le.CallLimit()
	}
	switch {
	case ctx.Err() == nil && limit == 0:
		return NotEnded, what + " failed.", cause
	case errors.Is(ctx.Err(), context.Canceled) && limit == 0:
		return Canceled, what + " was canceled.", errors.Join(context.Canceled, cause)
	case limit > 0:
		return TimedOut, fmt.Sprintf("%s timed out after %v.", what, limit), errors.Join(context.DeadlineExceeded, cause)
	}
	return TimedOut, what + " ran out of time.", errors.Join(context.DeadlineExceeded, cause)
}
