// Package mailbox hands a server's notifications (progress, log
// messages) to the user's callbacks on a goroutine of its own.
//
// A server's notifications reach conduit one at a time. The SDK hands each
// to its handler and queues the ones read meanwhile, without bound. A
// handler that waits for the user's callback would let a flooding server
// fill that queue. So conduit's handlers only put the notification in a
// bounded [Box], whose own goroutine calls the callback.
package mailbox

import (
	"context"
	"sync"
	"time"
)

// Box hands values to Deliver, in order, on a goroutine it starts when
// it has some and that ends when it is empty. It holds at most MaxItems
// values and about MaxBytes of them, dropping the oldest to make room:
// the newest progress and the latest log lines are the ones worth
// keeping.
type Box[T any] struct {
	Deliver            func(T)
	MaxItems, MaxBytes int
	// Dropped, when set, is told how many values were dropped since it was
	// last told, when the mailbox empties.
	Dropped func(n int)

	mu      sync.Mutex
	ring    []sized[T] // allocated on first use
	head, n int
	bytes   int
	running bool
	idle    chan struct{} // closed when the running goroutine ends
	drops   int
}

type sized[T any] struct {
	v    T
	size int
}

// Put queues v, of about size bytes.
func (m *Box[T]) Put(v T, size int) {
	m.mu.Lock()
	if m.ring == nil {
		m.ring = make([]sized[T], m.MaxItems)
	}
	for m.n > 0 && (m.n == len(m.ring) || m.bytes+size > m.MaxBytes) {
		m.bytes -= m.ring[m.head].size
		m.ring[m.head] = sized[T]{}
		m.head = (m.head + 1) % len(m.ring)
		m.n--
		m.drops++
	}
	m.ring[(m.head+m.n)%len(m.ring)] = sized[T]{v, size}
	m.n++
	m.bytes += size
	start := !m.running
	if start {
		m.running, m.idle = true, make(chan struct{})
	}
	m.mu.Unlock()
	if start {
		go m.run()
	}
}

func (m *Box[T]) run() {
	for {
		m.mu.Lock()
		if m.n == 0 {
			m.running = false
			drops := m.drops
			m.drops = 0
			close(m.idle)
			m.idle = nil
			m.mu.Unlock()
			if drops > 0 && m.Dropped != nil {
				m.Dropped(drops)
			}
			return
		}
		e := m.ring[m.head]
		m.ring[m.head] = sized[T]{}
		m.head = (m.head + 1) % len(m.ring)
		m.n--
		m.bytes -= e.size
		m.mu.Unlock()
		m.Deliver(e.v)
	}
}

// Flush waits until everything put so far has been delivered, for at most
// d or until ctx ends.
func (m *Box[T]) Flush(ctx context.Context, d time.Duration) {
	m.mu.Lock()
	idle := m.idle
	m.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-t.C:
	}
}
