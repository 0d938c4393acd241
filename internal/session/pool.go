// Package session keeps the sessions of a server that serves each
// principal with their own credentials. There is one per principal,
// opened on the principal's first request, closed when idle, and bounded
// in number. What a session is, and how it connects, is its owner's.
package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrClosed is the error of a request to a closed pool.
var ErrClosed = errors.New("conduit: closed")

// BusyError is the cause of a request refused because every session the
// pool may hold is busy.
type BusyError struct {
	Server string
	Max    int
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("server %s has as many sessions open as it may (%d, one per principal), each with a request in flight: retry shortly", e.Server, e.Max)
}

// Hooks are what a Pool does with its sessions, of type C.
type Hooks[C any] struct {
	// Open checks that principal may have a session; its error refuses
	// the request. It returns the function that makes the session, not yet
	// started, called once there is room.
	Open func(principal string) (func() (C, error), error)
	// Run keeps c connected until ctx ends. The pool runs it on a
	// goroutine of its own.
	Run func(ctx context.Context, c C)
	// Ready is closed after c's first connection attempt.
	Ready func(c C) <-chan struct{}
	// Close ends c. Started is false for a session Run never ran; Close
	// then also ends the wait on its Ready.
	Close func(c C, started bool)
	// Evict closes principal's session by calling close. The pool calls it
	// to make room for another's (idle false), or for idleness.
	Evict func(principal string, idle bool, close func())
}

// Pool keeps one server's sessions, one per principal.
type Pool[C any] struct {
	h    Hooks[C]
	ctx  context.Context // the sessions' runs end with it
	runs *sync.WaitGroup // counts the sessions' runs
	max  int
	idle time.Duration // 0: no idle closing
	name string        // the server's id, for BusyError

	mu     sync.Mutex
	byP    map[string]*pooled[C]
	closed bool
	wg     sync.WaitGroup // sessions closed for idleness
}

// pooled is one principal's session.
type pooled[C any] struct {
	principal string
	c         C
	cancel    context.CancelFunc
	done      chan struct{} // closed when Run has returned, or never ran
	busy      int           // requests in flight
	last      time.Time     // when the last one ended
	timer     *time.Timer   // closes it when idle
}

// New returns the pool of server name's sessions. At most max are open;
// each closes after idle without a request (0: never). Their runs end
// with ctx, and runs counts them.
func New[C any](ctx context.Context, runs *sync.WaitGroup, name string, max int, idle time.Duration, h Hooks[C]) *Pool[C] {
	return &Pool[C]{h: h, ctx: ctx, runs: runs, name: name, max: max, idle: idle, byP: map[string]*pooled[C]{}}
}

// Get returns principal's session, opening it when there is none, after
// its first connection attempt; release must be called once the request
// is over. One beyond the bound, when no session is idle, gets a
// *BusyError.
func (p *Pool[C]) Get(ctx context.Context, principal string) (_ C, release func(), _ error) {
	var zero C
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return zero, nil, ErrClosed
	}
	e := p.byP[principal]
	var victim *pooled[C]
	if e == nil {
		open, err := p.h.Open(principal)
		if err != nil {
			p.mu.Unlock()
			return zero, nil, err
		}
		if len(p.byP) >= p.max {
			if victim = p.lruIdle(); victim == nil {
				p.mu.Unlock()
				return zero, nil, &BusyError{Server: p.name, Max: p.max}
			}
		}
		c, err := open()
		if err != nil {
			p.mu.Unlock()
			return zero, nil, err
		}
		e = &pooled[C]{principal: principal, c: c, done: make(chan struct{})}
		if victim != nil {
			delete(p.byP, victim.principal)
			victim.stopTimer()
		}
		p.byP[principal] = e
	}
	e.busy++
	e.stopTimer()
	p.mu.Unlock()
	if victim != nil {
		// Before the new session starts: the bound holds for processes
		// too.
		p.h.Evict(victim.principal, false, func() { p.close(victim) })
	}
	p.start(e)
	release = func() { p.release(e) }
	select {
	case <-p.h.Ready(e.c):
		return e.c, release, nil
	case <-ctx.Done():
		release()
		return zero, nil, ctx.Err()
	}
}

// Peek returns principal's session when it exists and has tried to
// connect, without opening one or waiting.
func (p *Pool[C]) Peek(principal string) (_ C, release func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.byP[principal]
	if e == nil || p.closed || !isClosed(p.h.Ready(e.c)) {
		var zero C
		return zero, nil, false
	}
	e.busy++
	e.stopTimer()
	return e.c, func() { p.release(e) }, true
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// start runs e's session, unless the pool was closed meanwhile.
func (p *Pool[C]) start(e *pooled[C]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.cancel != nil {
		return
	}
	if p.closed || p.byP[e.principal] != e {
		e.cancel = func() {}
		close(e.done)
		p.h.Close(e.c, false)
		return
	}
	var ctx context.Context
	ctx, e.cancel = context.WithCancel(p.ctx)
	p.runs.Add(1)
	go func() {
		defer p.runs.Done()
		defer close(e.done)
		p.h.Run(ctx, e.c)
	}()
}

// lruIdle is the session idle the longest, or nil when every one is busy.
// Call with p.mu held.
func (p *Pool[C]) lruIdle() *pooled[C] {
	var lru *pooled[C]
	for _, e := range p.byP {
		if e.busy == 0 && (lru == nil || e.last.Before(lru.last)) {
			lru = e
		}
	}
	return lru
}

// release ends a request on e, and closes e after p.idle without another.
func (p *Pool[C]) release(e *pooled[C]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.busy--
	if e.busy > 0 {
		return
	}
	e.last = time.Now()
	if p.idle > 0 && !p.closed && p.byP[e.principal] == e {
		// One timer per session, reset at each idle start: a fire that
		// a request has made stale finds it busy or recently used.
		if e.timer == nil {
			e.timer = time.AfterFunc(p.idle, func() { p.expire(e) })
		} else {
			e.timer.Reset(p.idle)
		}
	}
}

// expire closes e, when it is still idle.
func (p *Pool[C]) expire(e *pooled[C]) {
	p.mu.Lock()
	if p.closed || p.byP[e.principal] != e || e.busy > 0 || time.Since(e.last) < p.idle {
		p.mu.Unlock()
		return
	}
	delete(p.byP, e.principal)
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	p.h.Evict(e.principal, true, func() { p.close(e) })
}

// stopTimer stops e's idle timer, for release to reset. Call with the
// pool's mu held.
func (e *pooled[C]) stopTimer() {
	if e.timer != nil {
		e.timer.Stop()
	}
}

// close ends e's session and waits for its run to stop.
func (p *Pool[C]) close(e *pooled[C]) {
	if e.cancel != nil {
		e.cancel()
	}
	p.h.Close(e.c, true)
	<-e.done
}

// Close ends every session of the pool.
func (p *Pool[C]) Close() {
	p.mu.Lock()
	p.closed = true
	all := make([]*pooled[C], 0, len(p.byP))
	for _, e := range p.byP {
		e.stopTimer()
		all = append(all, e)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range all {
		wg.Go(func() {
			p.start(e) // a session not started yet is ended unstarted
			p.close(e)
		})
	}
	wg.Wait()
	p.wg.Wait()
}

// Closed reports whether Close was called.
func (p *Pool[C]) Closed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// All returns the sessions, in no order.
func (p *Pool[C]) All() []C {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]C, 0, len(p.byP))
	for _, e := range p.byP {
		out = append(out, e.c)
	}
	return out
}
