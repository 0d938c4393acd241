// Package errtext words the errors a model reads when conduit answers a
// call itself. The root's pipeline and the packages that answer for it
// (adapters, temporalconduit) build their *conduit.Error with the same
// words, so an answer reads the same whoever makes it.
package errtext

import "strings"

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
