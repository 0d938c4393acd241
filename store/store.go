// Package store holds what several processes of one deployment must share.
// They may be the replicas of conduit serve behind a load balancer. They
// may be the instances of a web application that resume one conversation,
// or the workers that retry one activity. [Store] is the interface.
// [Memory] holds within one process. Package store/sqlitestore shares a
// Store among the processes of one machine through a SQLite file; it is
// the CLI's default. Package store/redisstore shares one among machines
// through Redis or Valkey.
//
// What is shared is small. Each kind has its own methods, so a Store is
// several small interfaces:
//
//   - [Sets], for taint: the servers whose output a principal or a
//     conversation has seen. A set lives until its lifetime has passed
//     since its latest addition.
//   - [Claims], for at most once. The first [Claims.Claim] of a key wins.
//     Every later one finds the key pending or completed. Pending means
//     the winner is running, or died before it recorded anything.
//     Completed carries what the winner recorded by [Claims.Complete]. So
//     a decided approval or a resumed state runs once. A second resumer,
//     or a retried activity, answers with the first one's result.
//   - [Counters], for limits. [Counters.Hit] counts calls in a fixed
//     window that says when it ends. [Counters.Acquire] and
//     [Counters.Release] hold slots for calls at once, on a lease. The
//     slots of a process killed while holding them come back when their
//     lease ends.
//   - [Locks], for what one process at a time may do, such as refreshing
//     an OAuth token. A lock has an owner token and an expiry. Only its
//     owner releases it.
//
// # Guarantees
//
// Every operation is atomic in the store. Claims, counters, slots and
// locks hold across goroutines. With a shared store they hold across
// processes and machines too. Exactly one of any number of concurrent
// claimers of a key wins. A window never counts more hits than its limit.
// No more than limit slots of a key are held at once. A lock has at most
// one owner at a time, as long as its expiry has not passed. An owner that
// holds it longer has lost it, and [Locks.Unlock] reports [ErrNotHeld].
//
// Expiry is measured by the store's clock. [Memory] uses the process's
// monotonic clock. A SQLite store uses the machine's wall clock, shared by
// its processes. A Redis store uses the Redis server's. So processes whose
// clocks disagree still agree on what has expired. Every key has an expiry
// (a lifetime, a window, a lease); nothing stays forever. Choose them as
// the guarantee needs. A claim must outlive every resumption of its state,
// since an expired claim can be won again. A slot's lease and a lock's
// expiry must outlast the longest call or refresh they guard.
//
// # When the store is unreachable
//
// A store may be down, restarting, loading its data, off the network, or
// late for the context's deadline. Its operations then fail with an error
// for which errors.Is(err, [ErrUnavailable]) holds. Whether they took
// effect is unknown. Callers fail closed for what needs the store: a call
// whose taint or claim cannot be checked is not sent. A store recovers by
// itself. Operations succeed again soon after it is back (within about a
// second for Redis), with no reconnecting by the caller.
//
// An operation whose answer was lost may still have taken effect. That is
// when the connection dropped after the store did the work. A claim may
// then be held by a token nobody knows. Later claimers find it pending
// until it expires: at most once holds, and an answer is lost. A window
// may have counted one hit more. Claims survive a restart of the store
// only when the store keeps its data (Redis with append-only persistence).
// Without that, a restart forgets every claim, taint and count.
//
// # Keys
//
// Keys are strings that the caller composes, such as
// "alice/fs__write_file". Each kind of value lives in its own key space,
// so a set and a claim may share a name. A shared store adds a namespace to
// every key (redisstore.Options.Prefix). So two deployments can share one
// Redis.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Errors of every Store, for errors.Is.
var (
	// ErrUnavailable is the error of an operation that could not reach the
	// store; see the package doc.
	ErrUnavailable = errors.New("store unavailable")
	// ErrNotHeld is the error of [Claims.Complete] and [Locks.Unlock] by a
	// token that does not hold the claim or the lock. It expired, or it was
	// never this token's.
	ErrNotHeld = errors.New("store: not held by this token")
	// ErrClosed is the error of an operation on a closed store.
	ErrClosed = errors.New("store: closed")
)

// Store is everything processes share: taint, single-use claims, counters
// for limits and locks. Its methods are safe for concurrent use. A
// consumer that needs one kind only should take the smaller interface
// ([Sets], [Claims], [Counters], [Locks]).
type Store interface {
	Sets
	Claims
	Counters
	Locks
	// Ping reports whether the store can be reached (a readiness check):
	// nil, or an error that is [ErrUnavailable] or [ErrClosed].
	Ping(ctx context.Context) error
	// Close releases the store's resources; later operations fail with
	// [ErrClosed]. It may be called more than once.
	io.Closer
}

// Sets are sets of strings with a lifetime, for taint. A key is a principal
// or a conversation. The members are the servers whose output it has seen.
type Sets interface {
	// AddMembers adds members to the set of key. It sets the whole set's
	// expiry to ttl from now. So a set lives until ttl has passed since its
	// latest addition. Adding no members does nothing.
	AddMembers(ctx context.Context, key string, ttl time.Duration, members ...string) error
	// Members returns the members of the set of key, sorted; none when the
	// set is empty or has expired.
	Members(ctx context.Context, key string) ([]string, error)
}

// Claims are single-use marks with a record of what the winner produced, for
// at most once. An approval, a resumed state or an activity runs once.
// Whoever comes after reads its result.
type Claims interface {
	// Claim claims key for ttl. The first claimer wins: the result is
	// [Claimed], with the token that [Claims.Complete] needs. Any other
	// claim of key before it expires finds it [Pending] or [Completed].
	// Pending means claimed with no result recorded yet: the winner is still
	// running, or died. Completed comes with the recorded result.
	Claim(ctx context.Context, key string, ttl time.Duration) (Claim, error)
	// Complete records result as the outcome of the claim of key held by
	// token. It keeps it for ttl from now. It fails with [ErrNotHeld] when
	// token does not hold a pending claim of key. The claim expired, another
	// process claimed it since, or it was completed with another result.
	// Completing again with the same token and result succeeds.
	Complete(ctx context.Context, key, token string, result []byte, ttl time.Duration) error
}

// ClaimState says what [Claims.Claim] found.
type ClaimState int

// The states of a claim.
const (
	// Claimed: this call won the claim; do the work, then Complete it.
	Claimed ClaimState = iota + 1
	// Pending: another claimer holds the claim and has recorded no result.
	// It is still running, or it died before it recorded one. Whether it did
	// the work is unknown, so do not do it again.
	Pending
	// Completed: another claimer recorded its result, in Claim.Result.
	Completed
)

// String returns the state's name.
func (s ClaimState) String() string {
	switch s {
	case Claimed:
		return "claimed"
	case Pending:
		return "pending"
	case Completed:
		return "completed"
	}
	return fmt.Sprintf("ClaimState(%d)", int(s))
}

// A Claim is what [Claims.Claim] found.
type Claim struct {
	State ClaimState
	// Token proves the claim to Complete; set when State is Claimed.
	Token string
	// Result is what the winner recorded; set (non-nil) when State is
	// Completed.
	Result []byte
}

// Counters count calls for limits: calls per window, and calls at once.
type Counters interface {
	// Hit counts one hit in the current window of key, and reports the
	// window. It counts only when fewer than limit hits were counted in it.
	// A window starts at its first hit and lasts window. Then the count
	// starts again from zero. A limit of zero or less allows nothing and so
	// counts nothing: Hit(ctx, key, 0, w) reads the window.
	Hit(ctx context.Context, key string, limit int64, window time.Duration) (Window, error)
	// Acquire takes one of limit slots of key for lease when fewer than
	// limit are held, and reports the slots. A slot is held until it is
	// released or its lease ends, whichever comes first. A limit of zero
	// or less allows nothing: Acquire(ctx, key, 0, d) reads the slots.
	Acquire(ctx context.Context, key string, limit int64, lease time.Duration) (Slot, error)
	// Release gives back the slot of key that token holds. Releasing a slot
	// that is not held (released already, or its lease ended) does nothing.
	Release(ctx context.Context, key, token string) error
}

// A Window is the state of a window counter after [Counters.Hit].
type Window struct {
	// Allowed reports whether this hit was counted (the count was under
	// the limit).
	Allowed bool
	// Count is the number of hits counted in the current window, this one
	// included when Allowed.
	Count int64
	// Reset is how long until the window ends and counting starts again from
	// zero. That is when to retry a hit that was not allowed. Zero when no
	// window is open.
	Reset time.Duration
}

// A Slot is the state of a key's slots after [Counters.Acquire].
type Slot struct {
	// Acquired reports whether a slot was taken.
	Acquired bool
	// Token identifies the slot taken, for Release; set when Acquired.
	Token string
	// InUse is the number of slots held, the one taken included.
	InUse int64
}

// Locks are exclusive locks with an owner and an expiry, across processes.
type Locks interface {
	// Lock waits until it holds the lock of key, for ttl, and returns the
	// owner token that Unlock needs. It gives up with an error that wraps
	// ctx.Err() when ctx is done first.
	Lock(ctx context.Context, key string, ttl time.Duration) (token string, err error)
	// Unlock releases the lock of key held by token. It fails with
	// [ErrNotHeld] when token does not hold it, and then releases nothing.
	// The lock expired, and perhaps another owner holds it now.
	Unlock(ctx context.Context, key, token string) error
}
