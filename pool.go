package conduit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit/internal/session"
)

// The sessions of a server of IdentityPrincipal: one per principal, each
// a conn of its own (its reconnection, keepalive, list caches, pins and
// mailboxes, as a shared server's). The pool's bound, idle closing and
// eviction run in internal/session; the hub decides who may have a
// session and with which credentials.

// slot is one configured server: its one session, or its sessions per
// principal.
type slot struct {
	srv    Server
	shared *conn                // IdentityShared
	pool   *session.Pool[*conn] // IdentityPrincipal
}

// conns returns the slot's sessions: the shared one, or every principal's
// by principal.
func (s *slot) conns() []*conn {
	if s.shared != nil {
		return []*conn{s.shared}
	}
	out := s.pool.All()
	slices.SortFunc(out, func(a, b *conn) int { return strings.Compare(a.principal, b.principal) })
	return out
}

// get returns principal's session of a pooled slot, opening it when there
// is none, after its first connection attempt; release must be called
// once the request is over. A principal without credentials for the
// server gets their LoginError; one beyond the bound, when no session is
// idle, a *session.BusyError.
func (s *slot) get(ctx context.Context, principal string) (*conn, func(), error) {
	if principal == "" {
		return nil, nil, ErrNoPrincipal
	}
	return s.pool.Get(ctx, principal)
}

// newPool is the pool of srv's sessions, each opened with the principal's
// own credentials.
func newPool(c *core, srv Server) *session.Pool[*conn] {
	max, idle := c.MaxPrincipalSessions, c.PrincipalIdleTimeout
	if max <= 0 {
		max = defaultMaxPrincipalSessions
	}
	switch {
	case idle == 0:
		idle = defaultPrincipalIdleTimeout
	case idle < 0:
		idle = 0
	}
	return session.New(c.ctx, &c.wg, srv.ID, max, idle, session.Hooks[*conn]{
		Open: func(principal string) (func() (*conn, error), error) {
			psrv, err := srv.forPrincipal(principal)
			if err != nil {
				return nil, err
			}
			return func() (*conn, error) {
				psrv.OAuth = c.principalOAuth(psrv, principal)
				cn := newConn(c, psrv, principal)
				if cn.oauth, err = psrv.newOAuth(c.httpClient, c.Store); err != nil {
					return nil, fmt.Errorf("conduit: %w", err)
				}
				return cn, nil
			}, nil
		},
		Run:   func(ctx context.Context, cn *conn) { cn.run(ctx) },
		Ready: func(cn *conn) <-chan struct{} { return cn.ready },
		Close: func(cn *conn, started bool) {
			cn.close()
			if !started {
				close(cn.ready)
			}
		},
		Evict: func(principal string, idle bool, close func()) {
			msg := "conduit: closing the least recently used session for another principal's"
			if idle {
				msg = "conduit: closing an idle principal's session"
			}
			c.Logger.Debug(msg, "server", srv.ID)
			close()
			c.forget(principal)
		},
	})
}

// poolStatus is the status of a pooled server: its sessions', by
// principal.
func poolStatus(s *slot) ServerStatus {
	st := ServerStatus{ID: s.srv.ID, State: StatePerPrincipal, Tools: -1, Identity: IdentityPrincipal}
	if s.pool.Closed() {
		st.State = StateClosed
	}
	for _, cn := range s.conns() {
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
	return s.get(ctx, principal)
}
