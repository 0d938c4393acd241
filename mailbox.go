package conduit

import (
	"context"
	"sync"
	"time"
)

// The bounded mailbox that hands a server's notifications (progress, log
// messages) to the user's callbacks on a goroutine of its own.
//
// A server's notifications reach conduit one at a time: the SDK hands each
// to its handler and queues the ones read meanwhile, without bound. A
// handler that waits for the user's callback (a slow Progress, Logging or
// slog handler) would let a flooding server fill that queue, and even
// quick handlers fall behind a server that does nothing but notify, as
// the SDK's dispatch of each costs more than its reading. So conduit's
// handlers only put the notification in a bounded mailbox, whose own
// goroutine calls the callback; and on the connections it can wrap (all
// but Streamable HTTP's), conduit takes progress and log notifications
// off the connection as the SDK reads them, before they reach the SDK's
// queue. Over Streamable HTTP the SDK's queue is bounded only by how far
// the server outpaces its dispatch.

// The bounds of the mailboxes: per call with a Progress callback, and per
// server for log messages. A single notification larger than the bytes
// bound is still held, alone.
const (
	progressQueue      = 16
	progressQueueBytes = 64 << 10
	logQueue           = 256
	logQueueBytes      = 1 << 20
)

// mailbox hands values to deliver, in order, on a goroutine it starts when
// it has some and that ends when it is empty. It holds at most maxItems
// values and about maxBytes of them, dropping the oldest to make room:
// the newest progress and the latest log lines are the ones worth
// keeping.
type mailbox[T any] struct {
	deliver            func(T)
	maxItems, maxBytes int
	// dropped, when set, is told how many values were dropped since it was
	// last told, when the mailbox empties.
	dropped func(n int)

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

// put queues v, of about size bytes.
func (m *mailbox[T]) put(v T, size int) {
	m.mu.Lock()
	if m.ring == nil {
		m.ring = make([]sized[T], m.maxItems)
	}
	for m.n > 0 && (m.n == len(m.ring) || m.bytes+size > m.maxBytes) {
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

func (m *mailbox[T]) run() {
	for {
		m.mu.Lock()
		if m.n == 0 {
			m.running = false
			drops := m.drops
			m.drops = 0
			close(m.idle)
			m.idle = nil
			m.mu.Unlock()
			if drops > 0 && m.dropped != nil {
				m.dropped(drops)
			}
			return
		}
		e := m.ring[m.head]
		m.ring[m.head] = sized[T]{}
		m.head = (m.head + 1) % len(m.ring)
		m.n--
		m.bytes -= e.size
		m.mu.Unlock()
		m.deliver(e.v)
	}
}

// flush waits until everything put so far has been delivered, for at most
// d or until ctx ends.
func (m *mailbox[T]) flush(ctx context.Context, d time.Duration) {
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
