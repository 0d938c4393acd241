// Package once runs a piece of work at most once per key, across processes,
// over a [store.Claims]. It claims the key, runs, and records the outcome.
// Whoever comes later reads the recorded outcome instead of running again.
//
// conduit has three users of it, and each composes its own keys:
//
//   - a resumed conversation's decided call (package adapters);
//   - a requestState used by a retry of a client of conduit serve (package
//     gateway);
//   - a call activity of a Temporal workflow (package temporalconduit).
//
// # Outcomes
//
// [Do] and [Claim] say what they found, as a [State]:
//
//   - [Ran]: this caller won the claim, ran the work and recorded what it
//     returned.
//   - [Recorded]: another caller ran it and recorded its outcome, which is
//     read back as it was recorded.
//   - [Unknown]: another caller holds the claim and has recorded nothing.
//     It is still running, or it died between claim and record.
//
// # A crash between claim and record
//
// A claimer may die after its claim and before its record: a killed process,
// a lost worker, a store unreachable when it records. It leaves the claim
// held with no outcome. Then:
//
//   - At most once holds: nobody runs the work again while the claim
//     lives. The work may have run, in part or whole, or not at all.
//   - The outcome is unknown: every later caller finds [Unknown] until
//     the claim's ttl passes. After that the key can be won again, and the
//     work run again. So a ttl must outlive every retry that may come.
//   - Each caller answers Unknown by saying so, and never by running. A
//     resumed conversation answers the call with an error matching
//     adapters.ErrDecidedElsewhere. conduit serve refuses the retry,
//     saying the outcome is unknown. A Temporal call activity answers
//     that the call may have been made and was not made again.
//
// A running claimer and a dead one look alike to the store. Unknown says
// both, and a caller must not wait for it to change.
//
// # Records
//
// A record is one line of header, "conduit-once/1 ok" or "conduit-once/1
// failed". Then comes the result [Ticket.Record] was given, its bytes as
// they are. For a failure, the message of the error the work failed with
// comes instead. A record without the header is read as a bare result, which
// is how older releases recorded. A record of a later version, or one that
// is malformed, is read as Unknown. So its work is not run again.
package once

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/conduitmcp/conduit/store"
)

// State says what [Do] or [Claim] found.
type State int

// The states of an outcome.
const (
	// Ran: this caller won the claim and ran the work.
	Ran State = iota + 1
	// Recorded: another caller ran the work and recorded its outcome.
	Recorded
	// Unknown: another caller holds the claim and recorded no outcome:
	// it is running, or it died before it recorded. Do not run the work.
	Unknown
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Ran:
		return "ran"
	case Recorded:
		return "recorded"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// An Outcome is what came of a key's work.
type Outcome struct {
	State State
	// Result is what the work returned. It is set when State is Ran or
	// Recorded and the work did not fail. When Recorded, it is non-nil,
	// perhaps empty.
	Result []byte
	// Err is the work's failure when State is Ran or Recorded. When Ran, it
	// is the work's own error. When Recorded, it is one with the recorded
	// message. When State is Unknown, Err is nil, or says why a record could
	// not be read.
	Err error
}

// A Ticket is a won claim: run the work, then record its outcome.
type Ticket struct {
	claims store.Claims
	key    string
	token  string
	ttl    time.Duration
}

// Claim claims key in claims for ttl. When this caller wins, t is the
// claim's ticket: run the work, then call t.Record. Otherwise t is nil and
// found is the key's outcome, [Recorded] or [Unknown]. An error means the
// claim could not be made, and nothing may run. The store is unreachable, or
// ttl is not positive.
func Claim(ctx context.Context, claims store.Claims, key string, ttl time.Duration) (t *Ticket, found Outcome, err error) {
	c, err := claims.Claim(ctx, key, ttl)
	if err != nil {
		return nil, Outcome{}, err
	}
	switch c.State {
	case store.Claimed:
		return &Ticket{claims: claims, key: key, token: c.Token, ttl: ttl}, Outcome{}, nil
	case store.Completed:
		return nil, decode(c.Result), nil
	}
	return nil, Outcome{State: Unknown}, nil
}

// Record records the outcome of the work of t: result, or the failure runErr
// when runErr is not nil. Later callers read runErr's message. The record is
// kept for the claim's ttl from now. It is made even when ctx is canceled,
// because an outcome not recorded is lost. So a canceled work's outcome is
// recorded like any other. An error means the outcome may not be recorded.
// Later callers then find it [Unknown].
func (t *Ticket) Record(ctx context.Context, result []byte, runErr error) error {
	return t.claims.Complete(context.WithoutCancel(ctx), t.key, t.token, encode(result, runErr), t.ttl)
}

// Do runs run at most once for key, across every caller that shares claims.
// The first caller runs it and records what it returns. The others read that
// (see the package doc for a claimer that dies). ttl is how long the claim,
// and then the record, is kept.
//
// The error is the store's. When the claim could not be made, the Outcome is
// empty and run did not run. When the State is [Ran], the outcome could not
// be recorded. run's own error is Outcome.Err.
func Do(ctx context.Context, claims store.Claims, key string, ttl time.Duration, run func(context.Context) ([]byte, error)) (Outcome, error) {
	t, found, err := Claim(ctx, claims, key, ttl)
	if err != nil || t == nil {
		return found, err
	}
	result, runErr := run(ctx)
	out := Outcome{State: Ran, Result: result, Err: runErr}
	if runErr != nil {
		out.Result = nil
	}
	if err := t.Record(ctx, result, runErr); err != nil {
		return out, fmt.Errorf("once: the outcome of %q was not recorded: %w", key, err)
	}
	return out, nil
}

// header starts every record this release writes; version 1.
const header = "conduit-once/"

// Record headers of version 1.
const (
	okHeader     = header + "1 ok\n"
	failedHeader = header + "1 failed\n"
)

// encode is the record of result, or of the failure runErr.
func encode(result []byte, runErr error) []byte {
	if runErr != nil {
		return append([]byte(failedHeader), runErr.Error()...)
	}
	return append([]byte(okHeader), result...)
}

// decode reads a record, as a claim holds it, into the outcome it recorded.
// That is Recorded, or Unknown when the record cannot be read.
func decode(record []byte) Outcome {
	rest, ok := bytes.CutPrefix(record, []byte(header))
	if !ok {
		// A bare result, as the release before recorded it.
		return Outcome{State: Recorded, Result: append([]byte{}, record...)}
	}
	line, body, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return Outcome{State: Unknown, Err: errors.New("once: a record without its header's end")}
	}
	switch string(line) {
	case "1 ok":
		return Outcome{State: Recorded, Result: append([]byte{}, body...)}
	case "1 failed":
		return Outcome{State: Recorded, Err: errors.New(string(body))}
	}
	return Outcome{State: Unknown, Err: fmt.Errorf("once: a record of an unknown version or kind %q", line)}
}
