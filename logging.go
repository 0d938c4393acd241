package conduit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/mailbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Servers' log messages: asking for them (logging/setLevel), attributing
// each to the call it belongs to, and delivering it through a bounded
// mailbox to the Handlers' Logging or the hub's Logger.

// SetLoggingLevel asks every server that is up and offers logging to send
// log messages of level and above (logging/setLevel); they then reach the
// [Handlers]' Logging. A server that connects later is not told: call
// again after [Trace.ServerUp] (a principal's session of a server of
// IdentityPrincipal, opened on demand, is given the level by conduit). A
// server on protocol 2026-07-28 takes
// the level with each request instead: put it in the call's
// CallOptions.Meta under mcp.MetaKeyLogLevel. The error joins the
// servers' errors.
func (g *governed) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	return g.c.setLoggingLevel(ctx, level)
}

func (c *core) setLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if c.ctx.Err() != nil {
		return errClosed
	}
	c.level.Store(&level)
	var conns []*conn
	for _, s := range c.slots {
		conns = append(conns, s.conns()...)
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, cn := range conns {
		wg.Go(func() { errs[i] = cn.setLevel(ctx, level) })
	}
	wg.Wait()
	if c.ctx.Err() != nil {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// setLevel asks cn's server for log messages of level and above, when it
// is up and offers logging.
func (cn *conn) setLevel(ctx context.Context, level mcp.LoggingLevel) error {
	sess, err := cn.current()
	if err != nil || capabilities(sess).Logging == nil {
		return nil
	}
	if err := sess.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		if cn.principal != "" {
			return fmt.Errorf("server %s (the session of %q): %w", cn.srv.ID, cn.principal, err)
		}
		return fmt.Errorf("server %s: %w", cn.srv.ID, err)
	}
	return nil
}

// levelTimeout bounds the logging/setLevel a principal's new session is
// sent.
const levelTimeout = 10 * time.Second

// restoreLevel gives a principal's new session the level SetLoggingLevel
// last set, which the session, opened on demand, was not there to get.
func (cn *conn) restoreLevel(ctx context.Context) {
	l := cn.core.level.Load()
	if cn.principal == "" || l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, levelTimeout)
	defer cancel()
	if err := cn.setLevel(ctx, *l); err != nil {
		cn.core.Logger.Debug("conduit: setting the log level of a principal's session", "server", cn.srv.ID, "err", err)
	}
}

// onLog hands a server's log message to the call it belongs to.
func (cn *conn) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	if req == nil || req.Params == nil {
		return
	}
	// Attributed now, delivered by the mailbox.
	l := logged{req: req}
	if in, ok := cn.calls.owner(ctx, true); ok && in != nil && in.h != nil && in.h.Logging != nil {
		l.f, l.ctx = in.h.Logging, context.WithoutCancel(in.ctx)
	} else if h := cn.core.Handlers; h != nil && h.Logging != nil && (in != nil || cn.principal == "") {
		// A principal's session's messages that no call of theirs
		// claims reach no one else's Logging.
		l.f, l.ctx = h.Logging, context.WithoutCancel(ctx)
	} else if !cn.core.Logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	cn.logs.Put(l, logSize(req.Params))
}

// logged is a server's log message on its way to f, or to the hub's
// Logger when f is nil.
type logged struct {
	f   func(context.Context, *mcp.LoggingMessageRequest)
	ctx context.Context
	req *mcp.LoggingMessageRequest
}

func (cn *conn) newLogs() *mailbox.Box[logged] {
	return &mailbox.Box[logged]{
		Deliver:  cn.deliverLog,
		MaxItems: logQueue, MaxBytes: logQueueBytes,
		Dropped: func(n int) {
			cn.core.Logger.Warn("conduit: server log messages dropped: their handler was slower than the server", "server", cn.srv.ID, "dropped", n)
		},
	}
}

func (cn *conn) deliverLog(l logged) {
	if l.f != nil {
		l.f(l.ctx, l.req)
		return
	}
	cn.core.Logger.Debug("conduit: server log", "server", cn.srv.ID, "level", l.req.Params.Level, "logger", l.req.Params.Logger)
}

// logSize is about the bytes a log message holds.
func logSize(p *mcp.LoggingMessageParams) int {
	m := jsonv.Measure{MaxBytes: logQueueBytes}
	m.Value(p.Data, 0)
	return m.Size + len(p.Logger) + len(p.Level) + 32
}
