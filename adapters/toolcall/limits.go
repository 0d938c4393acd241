package toolcall

import (
	"errors"
	"fmt"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// ErrTooManyCalls is the cause of every call answered with
// [TooManyCallsError]: errors.Is(err, ErrTooManyCalls) tells them apart.
var ErrTooManyCalls = errors.New("too many tool calls in one response")

// TooManyCallsError is the error of a call past the limit of max calls in
// one response of n calls. The call is answered with it and not sent. t
// is the tool the call names, nil when the name is not offered. Its kind
// is conduit.ErrLimit, like the limits on a call's arguments and result.
// So errors.Is(err, conduit.ErrLimit) holds as well.
func TooManyCallsError(t *conduit.Tool, name string, n, max int) *conduit.Error {
	e := &conduit.Error{Kind: conduit.ErrLimit, Err: ErrTooManyCalls,
		Message: fmt.Sprintf("The call to %s was not made: the response has %d tool calls, over the limit of %d in one response, and only the first %d are run. Make at most %d calls at a time.", jsonv.ValidString(name), n, max, max, max)}
	if t != nil {
		e.Server, e.Tool = t.Server, t.Name
	}
	return e
}
