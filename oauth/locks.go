package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/conduitmcp/conduit/store"
)

// Refreshing one key's tokens one process at a time: two processes that
// refresh the same tokens at once send the same refresh token twice, and
// an authorization server that rotates refresh tokens refuses the second,
// or takes it for a stolen token and revokes every token of its family
// (RFC 9700 §4.14.2). A refresh holds the lock of its tokens, reads the
// store again under it (another process may have refreshed meanwhile),
// and saves what it got before letting go.

// Locker serializes the refreshes of a key's tokens among the processes
// that share its token store.
type Locker interface {
	// LockTokens waits until it holds the lock of key's tokens, or ctx
	// ends, and returns what releases it.
	LockTokens(ctx context.Context, key Key) (unlock func(), err error)
}

// lockTTL bounds how long a lock is held by a process that died holding
// it: longer than a refresh takes (authTimeout).
const lockTTL = 2 * authTimeout

// StoreLocker is a [Locker] on a store.Locks, such as the store that the
// replicas of conduit serve share (store/redisstore): a lock per key,
// released on unlock or, when its holder dies, after a minute.
func StoreLocker(locks store.Locks) Locker { return storeLocker{locks} }

type storeLocker struct{ locks store.Locks }

func (s storeLocker) LockTokens(ctx context.Context, key Key) (func(), error) {
	k := "oauth/" + url.PathEscape(key.Server) + "/" + url.PathEscape(key.Principal)
	token, err := s.locks.Lock(ctx, k, lockTTL)
	if err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// ErrNotHeld: the lock expired; someone else may hold it now.
		s.locks.Unlock(ctx, k, token)
	}, nil
}

// lockTokens takes the locks of the handler's tokens: Config.Locker's,
// then the token store's own.
func (h *Handler) lockTokens(ctx context.Context) (func(), error) {
	var unlocks []func()
	release := func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
	}
	own, _ := h.store.(Locker)
	for _, l := range []Locker{h.cfg.Locker, own} {
		if l == nil {
			continue
		}
		unlock, err := l.LockTokens(ctx, h.key)
		if err != nil {
			release()
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return nil, fmt.Errorf("another process has been refreshing them for too long: %w", err)
			}
			return nil, err
		}
		unlocks = append(unlocks, unlock)
	}
	return release, nil
}

// LockTokens implements [Locker] with a lock file beside the key's token
// file (NAME.json.lock), for the processes of one machine (or of one
// shared directory): an exclusive flock(2) where there is one, which the
// kernel releases when its holder dies; elsewhere a file created
// exclusively, taken for abandoned once it is older than a refresh can
// take.
func (s *FileStore) LockTokens(ctx context.Context, key Key) (func(), error) {
	path, err := s.path(key)
	if err != nil {
		return nil, err
	}
	if err := s.ensureDir(); err != nil {
		return nil, err
	}
	return lockFile(ctx, path+".lock")
}

// lockPoll is how often a lock held by another process is tried again.
const lockPoll = 20 * time.Millisecond
