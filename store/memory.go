// The in-memory Store: one process's, the default.

package store

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/conduitmcp/conduit/store/internal/ttl"
)

// Memory is a [Store] that keeps everything in this process's memory. It is
// the default, for one process. What it holds is lost when the process ends,
// and another process does not see it. It is safe for concurrent use.
//
// It starts no goroutine. Entries are kept in the order of their expiry.
// Every operation first drops those that have expired. So an expired entry
// holds memory only until the next operation, and Close leaves nothing
// behind.
type Memory struct {
	mu      sync.Mutex
	closed  bool
	entries map[memKey]*entry
	expiry  expiryHeap
	// journals are kept apart: their records expire one by one.
	journals map[string]*memJournal
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{entries: map[memKey]*entry{}}
}

// kind separates the key spaces of the kinds of values.
type kind uint8

const (
	kindSet kind = iota
	kindClaim
	kindWindow
	kindSlots
	kindLock
)

type memKey struct {
	kind kind
	key  string
}

// An entry is one key's value; which fields are used depends on its kind.
type entry struct {
	key     memKey
	expires time.Time
	index   int // in Memory.expiry

	members map[string]struct{} // set
	token   string              // claim, lock
	done    bool                // claim
	result  []byte              // claim
	count   int64               // window
	slots   map[string]time.Time
	// released is closed when a lock is released or expires, to wake the
	// processes waiting for it.
	released chan struct{}
}

// begin locks m and drops what has expired; the caller unlocks m.
func (m *Memory) begin(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return time.Time{}, ErrClosed
	}
	now := time.Now()
	for len(m.expiry) > 0 && !m.expiry[0].expires.After(now) {
		m.remove(m.expiry[0])
	}
	return now, nil
}

// put adds e under its key, or moves it, to expire at expires.
func (m *Memory) put(e *entry, expires time.Time) {
	e.expires = expires
	if _, ok := m.entries[e.key]; !ok {
		m.entries[e.key] = e
		heap.Push(&m.expiry, e)
		return
	}
	heap.Fix(&m.expiry, e.index)
}

func (m *Memory) remove(e *entry) {
	heap.Remove(&m.expiry, e.index)
	delete(m.entries, e.key)
	if e.released != nil {
		close(e.released)
	}
}

// AddMembers implements [Sets].
func (m *Memory) AddMembers(ctx context.Context, key string, lifetime time.Duration, members ...string) error {
	if err := ttl.Check(lifetime); err != nil {
		return err
	}
	if len(members) == 0 {
		return nil
	}
	now, err := m.begin(ctx)
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	k := memKey{kindSet, key}
	e := m.entries[k]
	if e == nil {
		e = &entry{key: k, members: map[string]struct{}{}}
	}
	for _, s := range members {
		e.members[s] = struct{}{}
	}
	m.put(e, now.Add(lifetime))
	return nil
}

// Members implements [Sets].
func (m *Memory) Members(ctx context.Context, key string) ([]string, error) {
	if _, err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	e := m.entries[memKey{kindSet, key}]
	if e == nil {
		return nil, nil
	}
	out := make([]string, 0, len(e.members))
	for s := range e.members {
		out = append(out, s)
	}
	slices.Sort(out)
	return out, nil
}

// Claim implements [Claims].
func (m *Memory) Claim(ctx context.Context, key string, lifetime time.Duration) (Claim, error) {
	if err := ttl.Check(lifetime); err != nil {
		return Claim{}, err
	}
	now, err := m.begin(ctx)
	if err != nil {
		return Claim{}, err
	}
	defer m.mu.Unlock()
	k := memKey{kindClaim, key}
	switch e := m.entries[k]; {
	case e == nil:
		e = &entry{key: k, token: rand.Text()}
		m.put(e, now.Add(lifetime))
		return Claim{State: Claimed, Token: e.token}, nil
	case e.done:
		return Claim{State: Completed, Result: bytes.Clone(e.result)}, nil
	default:
		return Claim{State: Pending}, nil
	}
}

// Complete implements [Claims].
func (m *Memory) Complete(ctx context.Context, key, token string, result []byte, lifetime time.Duration) error {
	if err := ttl.Check(lifetime); err != nil {
		return err
	}
	now, err := m.begin(ctx)
	if err != nil {
		return err
	}
	defer m.mu.Unlock()
	e := m.entries[memKey{kindClaim, key}]
	switch {
	case e == nil || e.token != token:
		return ErrNotHeld
	case e.done && !bytes.Equal(e.result, result):
		return ErrNotHeld
	}
	e.done = true
	e.result = append([]byte{}, result...)
	m.put(e, now.Add(lifetime))
	return nil
}

// Hit implements [Counters].
func (m *Memory) Hit(ctx context.Context, key string, limit int64, window time.Duration) (Window, error) {
	if err := ttl.Check(window); err != nil {
		return Window{}, err
	}
	now, err := m.begin(ctx)
	if err != nil {
		return Window{}, err
	}
	defer m.mu.Unlock()
	k := memKey{kindWindow, key}
	e := m.entries[k]
	var w Window
	if e != nil {
		w.Count = e.count
	}
	if w.Count < limit {
		if e == nil {
			e = &entry{key: k}
			m.put(e, now.Add(window))
		}
		e.count++
		w.Allowed, w.Count = true, e.count
	}
	if e != nil {
		w.Reset = e.expires.Sub(now)
	}
	return w, nil
}

// Acquire implements [Counters].
func (m *Memory) Acquire(ctx context.Context, key string, limit int64, lease time.Duration) (Slot, error) {
	if err := ttl.Check(lease); err != nil {
		return Slot{}, err
	}
	now, err := m.begin(ctx)
	if err != nil {
		return Slot{}, err
	}
	defer m.mu.Unlock()
	k := memKey{kindSlots, key}
	e := m.entries[k]
	if e == nil {
		e = &entry{key: k, slots: map[string]time.Time{}}
	}
	for token, end := range e.slots {
		if !end.After(now) {
			delete(e.slots, token)
		}
	}
	s := Slot{InUse: int64(len(e.slots))}
	if s.InUse < limit {
		s.Acquired, s.Token = true, rand.Text()
		end := now.Add(lease)
		e.slots[s.Token] = end
		s.InUse++
		if _, ok := m.entries[k]; !ok || end.After(e.expires) {
			m.put(e, end)
		}
	}
	return s, nil
}

// Release implements [Counters].
func (m *Memory) Release(ctx context.Context, key, token string) error {
	if _, err := m.begin(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if e := m.entries[memKey{kindSlots, key}]; e != nil {
		delete(e.slots, token)
		if len(e.slots) == 0 {
			m.remove(e)
		}
	}
	return nil
}

// Lock implements [Locks].
func (m *Memory) Lock(ctx context.Context, key string, lifetime time.Duration) (string, error) {
	if err := ttl.Check(lifetime); err != nil {
		return "", err
	}
	k := memKey{kindLock, key}
	for {
		now, err := m.begin(ctx)
		if err != nil {
			return "", lockErr(key, err)
		}
		e := m.entries[k]
		if e == nil {
			e = &entry{key: k, token: rand.Text(), released: make(chan struct{})}
			m.put(e, now.Add(lifetime))
			m.mu.Unlock()
			return e.token, nil
		}
		released, wait := e.released, e.expires.Sub(now)
		m.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case <-released:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
}

func lockErr(key string, err error) error {
	if err == ErrClosed {
		return err
	}
	return fmt.Errorf("store: waiting for lock %q: %w", key, err)
}

// Unlock implements [Locks].
func (m *Memory) Unlock(ctx context.Context, key, token string) error {
	if _, err := m.begin(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	e := m.entries[memKey{kindLock, key}]
	if e == nil || e.token != token {
		return ErrNotHeld
	}
	m.remove(e)
	return nil
}

// Ping implements [Store]: it fails only when m is closed.
func (m *Memory) Ping(ctx context.Context) error {
	if _, err := m.begin(ctx); err != nil {
		return err
	}
	m.mu.Unlock()
	return nil
}

// Close implements [Store]: it drops everything and wakes the processes
// waiting for a lock, whose Lock fails with [ErrClosed].
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	m.journals = nil
	for len(m.expiry) > 0 {
		m.remove(m.expiry[0])
	}
	return nil
}

// Len returns the number of keys m holds that have not expired, of every
// kind.
func (m *Memory) Len() int {
	if _, err := m.begin(context.Background()); err != nil {
		return 0
	}
	defer m.mu.Unlock()
	return len(m.entries)
}

// expiryHeap orders entries by expiry, soonest first (container/heap).
type expiryHeap []*entry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *expiryHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}
