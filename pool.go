package conduit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// The sessions of a server of IdentityPrincipal: one per principal, each
// a conn of its own (its reconnection, keepalive, list caches, pins and
// mailboxes, as a shared server's), opened on the principal's first
// request with the principal's own credentials, closed when idle, and
// bounded in number.

// slot is one configured server: its one session, or its sessions per
// principal.
type slot struct {
	srv    Server
	shared *conn // IdentityShared
	pool   *pool // IdentityPrincipal
}

// conns returns the slot's sessions: the shared one, or every principal's.
func (s *slot) conns() []*conn {
	if s.shared != nil {
		return []*conn{s.shared}
	}
	return s.pool.conns()
}

// pool keeps a server's sessions per principal.
type pool struct {
	c    *core
	srv  Server
	max  int
	idle time.Duration // 0: no idle closing

	mu     sync.Mutex
	byP    map[string]*pooled
	closed bool
	wg     sync.WaitGroup // sessions closed for idleness
}

// pooled is one principal's session.
type pooled struct {
	principal string
	cn        *conn
	cancel    context.CancelFunc
	done      chan struct{} // closed when cn.run has returned, or never ran
	busy      int           // requests in flight
	last      time.Time     // when the last one ended
	timer     *time.Timer   // closes it when idle
}

func newPool(c *core, srv Server) *pool {
	p := &pool{c: c, srv: srv, max: c.MaxPrincipalSessions, idle: c.PrincipalIdleTimeout, byP: map[string]*pooled{}}
	if p.max <= 0 {
		p.max = defaultMaxPrincipalSessions
	}
	switch {
	case p.idle == 0:
		p.idle = defaultPrincipalIdleTimeout
	case p.idle < 0:
		p.idle = 0
	}
	return p
}

// errPoolBusy is the cause of a request refused because every session the
// pool may hold is busy.
type errPoolBusy struct {
	server string
	max    int
}

func (e *errPoolBusy) Error() string {
	return fmt.Sprintf("server %s has as many sessions open as it may (%d, one per principal), each with a request in flight: retry shortly", e.server, e.max)
}

// get returns principal's session, opening it when there is none, after
// its first connection attempt; release must be called once the request
// is over. A principal without credentials for the server gets their
// LoginError; one beyond the bound, when no session is idle, errPoolBusy.
func (p *pool) get(ctx context.Context, principal string) (*conn, func(), error) {
	if principal == "" {
		return nil, nil, ErrNoPrincipal
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, errClosed
	}
	e := p.byP[principal]
	var victim *pooled
	if e == nil {
		srv, err := p.srv.forPrincipal(principal)
		if err != nil {
			p.mu.Unlock()
			return nil, nil, err
		}
		if len(p.byP) >= p.max {
			if victim = p.lruIdle(); victim == nil {
				p.mu.Unlock()
				return nil, nil, &errPoolBusy{server: p.srv.ID, max: p.max}
			}
		}
		if e, err = p.newPooled(srv, principal); err != nil {
			p.mu.Unlock()
			return nil, nil, err
		}
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
		p.c.Logger.Debug("conduit: closing the least recently used session for another principal's", "server", p.srv.ID)
		victim.close()
		p.c.forget(victim.principal)
	}
	p.start(e)
	release := func() { p.release(e) }
	select {
	case <-e.cn.ready:
		return e.cn, release, nil
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	}
}

// peek returns principal's session when it exists and has tried to
// connect, without opening one or waiting.
func (p *pool) peek(principal string) (*conn, func(), bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.byP[principal]
	if e == nil || p.closed || !isClosed(e.cn.ready) {
		return nil, nil, false
	}
	e.busy++
	e.stopTimer()
	return e.cn, func() { p.release(e) }, true
}

func (p *pool) newPooled(srv Server, principal string) (*pooled, error) {
	srv.OAuth = p.c.principalOAuth(srv, principal)
	cn := newConn(p.c, srv, principal)
	var err error
	if cn.oauth, err = srv.newOAuth(p.c.httpClient, p.c.Store); err != nil {
		return nil, fmt.Errorf("conduit: %w", err)
	}
	return &pooled{principal: principal, cn: cn, done: make(chan struct{})}, nil
}

// start runs e's connection, unless the pool was closed meanwhile.
func (p *pool) start(e *pooled) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.cancel != nil {
		return
	}
	if p.closed || p.byP[e.principal] != e {
		e.cancel = func() {}
		close(e.done)
		e.cn.close()
		close(e.cn.ready)
		return
	}
	var ctx context.Context
	ctx, e.cancel = context.WithCancel(p.c.ctx)
	p.c.wg.Add(1)
	go func() {
		defer p.c.wg.Done()
		defer close(e.done)
		e.cn.run(ctx)
	}()
}

// lruIdle is the session idle the longest, or nil when every one is busy.
// Call with p.mu held.
func (p *pool) lruIdle() *pooled {
	var lru *pooled
	for _, e := range p.byP {
		if e.busy == 0 && (lru == nil || e.last.Before(lru.last)) {
			lru = e
		}
	}
	return lru
}

// release ends a request on e, and closes e after p.idle without another.
func (p *pool) release(e *pooled) {
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
func (p *pool) expire(e *pooled) {
	p.mu.Lock()
	if p.closed || p.byP[e.principal] != e || e.busy > 0 || time.Since(e.last) < p.idle {
		p.mu.Unlock()
		return
	}
	delete(p.byP, e.principal)
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	p.c.Logger.Debug("conduit: closing an idle principal's session", "server", p.srv.ID)
	e.close()
	p.c.forget(e.principal)
}

// stopTimer stops e's idle timer, for release to reset. Call with the
// pool's mu held.
func (e *pooled) stopTimer() {
	if e.timer != nil {
		e.timer.Stop()
	}
}

// close ends e's session and waits for its connection to stop.
func (e *pooled) close() {
	if e.cancel != nil {
		e.cancel()
	}
	e.cn.close()
	<-e.done
}

// close ends every session of the pool.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	all := make([]*pooled, 0, len(p.byP))
	for _, e := range p.byP {
		e.stopTimer()
		all = append(all, e)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range all {
		wg.Go(func() {
			p.start(e) // a session not started yet is ended unstarted
			e.close()
		})
	}
	wg.Wait()
	p.wg.Wait()
}

// conns returns the principals' sessions, by principal.
func (p *pool) conns() []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*conn, 0, len(p.byP))
	for _, e := range p.byP {
		out = append(out, e.cn)
	}
	slices.SortFunc(out, func(a, b *conn) int { return strings.Compare(a.principal, b.principal) })
	return out
}

// status is the server's status: its sessions', by principal.
func (p *pool) status() ServerStatus {
	st := ServerStatus{ID: p.srv.ID, State: StatePerPrincipal, Tools: -1, Identity: IdentityPrincipal}
	p.mu.Lock()
	if p.closed {
		st.State = StateClosed
	}
	p.mu.Unlock()
	for _, cn := range p.conns() {
		ps := cn.status()
		ps.Identity, ps.Principal = IdentityPrincipal, cn.principal
		st.Principals = append(st.Principals, ps)
	}
	return st
}

// connFor returns the session of server id that principal's request goes
// to, and the func that ends its use: the shared one, or principal's own.
func (c *core) connFor(ctx context.Context, id, principal string) (*conn, func(), error) {
	s := c.byID[id]
	if s == nil {
		return nil, nil, fmt.Errorf("conduit: no server %q", id)
	}
	if s.shared != nil {
		return s.shared, func() {}, nil
	}
	return s.pool.get(ctx, principal)
}
