package conduit

import (
	"fmt"
	"time"

	"github.com/conduitmcp/conduit/pins"
)

// ServerState is the state of a hub's or client's session with one server.
type ServerState int

// The states of a server.
const (
	// StateConnecting: the first connection attempt is under way.
	StateConnecting ServerState = iota
	// StateUp: a session is established.
	StateUp
	// StateDown: the server could not be reached or its session was lost;
	// a reconnection is scheduled unless the server cannot be reconnected.
	StateDown
	// StateReconnecting: a reconnection attempt is under way.
	StateReconnecting
	// StateClosed: the hub or client was closed.
	StateClosed
	// StateNeedsLogin: the server asks for an OAuth login that cannot be
	// had here (no Authorize callback, a refresh token that was refused,
	// or an interactive login that failed or was declined). It is not
	// reconnected until new tokens are stored (by conduit login, or a
	// login in this process) or Reconnect is called; ServerStatus.Err says
	// why.
	StateNeedsLogin
	// StatePerPrincipal: the server's sessions are per principal
	// ([IdentityPrincipal]), each opened on its principal's first request;
	// ServerStatus.Principals has the state of each one open.
	StatePerPrincipal
)

// String returns the state's name, such as "up" or "reconnecting".
func (s ServerState) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateUp:
		return "up"
	case StateDown:
		return "down"
	case StateReconnecting:
		return "reconnecting"
	case StateClosed:
		return "closed"
	case StateNeedsLogin:
		return "needs login"
	case StatePerPrincipal:
		return "per principal"
	}
	return fmt.Sprintf("ServerState(%d)", int(s))
}

// ServerStatus is a snapshot of one server's state.
type ServerStatus struct {
	ID    string      // the server's id
	State ServerState // the session's state
	// Err is the last connection error, kept while the server is down or
	// reconnecting.
	Err error
	// Tools is the number of tools in the server's last listing (kept
	// after a list_changed until the next listing), or -1
	// when it has not been listed in its current session.
	Tools int
	// Since is when the server entered State.
	Since time.Time
	// Attempts counts the failures since the server was last up: a lost
	// session, then each failed connection attempt.
	Attempts int
	// Drift, with pins configured, lists the tools of the server's last
	// listing in its current session that were left out because their
	// definitions are changed or new, with their diffs.
	Drift []pins.Drift
	// Identity is the server's [Identity]. Under IdentityPrincipal, State
	// is StatePerPrincipal, Tools is -1, and Principals has the status of
	// each principal's session open, by principal.
	Identity   Identity
	Principals []ServerStatus
	// Principal is whose session this is, in a ServerStatus of
	// Principals.
	Principal string
}

// Backoff configures reconnection after a server is lost. The zero value
// retries after 250ms, doubling up to 30s, with jitter.
type Backoff struct {
	// Min is the first delay and Max the longest; the delay doubles after
	// each failed attempt, and a successful connection resets it.
	Min, Max time.Duration
	// Disabled leaves a lost server down.
	Disabled bool
}

func (b Backoff) bounds() (time.Duration, time.Duration) {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = 250 * time.Millisecond
	}
	if hi <= 0 {
		hi = 30 * time.Second
	}
	return lo, max(lo, hi)
}
