package conduit

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's prompts, resources and resource templates, listed once per
// session and again after the server says they changed, and the listing
// of every server at once.

// features keeps a server's prompts and resources, listed as its tools
// are: once per session, again after the server says they changed.
type features struct {
	prompts   listCache[*mcp.Prompt]
	resources listCache[*mcp.Resource]
	templates listCache[*mcp.ResourceTemplate]
}

// listCache is one list of a server's, cached for the session it was
// listed on until the server says it changed or its cache hint ran out.
type listCache[T any] struct {
	mu      sync.Mutex
	sess    *mcp.ClientSession // the session items were listed on
	items   []T
	changes uint64   // list_changed notifications seen
	at      uint64   // changes when items were listed
	hint    listHint // how long items stay fresh, and for whom

	fetch sync.Mutex // one listing in flight
}

func (lc *listCache[T]) changed() {
	lc.mu.Lock()
	lc.changes++
	lc.mu.Unlock()
}

func (lc *listCache[T]) cached(sess *mcp.ClientSession, lf listFor) ([]T, bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.sess != sess || lc.at != lc.changes || !lc.hint.fresh(lf, time.Now()) {
		return nil, false
	}
	return lc.items, true
}

// get returns the list for sess and lf, calling list only when it is not
// cached.
func (lc *listCache[T]) get(ctx context.Context, sess *mcp.ClientSession, lf listFor, list func(context.Context) ([]T, error)) ([]T, error) {
	if items, ok := lc.cached(sess, lf); ok {
		return items, nil
	}
	lc.fetch.Lock()
	defer lc.fetch.Unlock()
	if items, ok := lc.cached(sess, lf); ok {
		return items, nil
	}
	lc.mu.Lock()
	at, prev := lc.changes, lc.hint
	if lc.sess != sess {
		prev = listHint{}
	}
	lc.mu.Unlock()
	start := time.Now()
	ctx, hints := withHints(ctx)
	items, err := list(ctx)
	if err != nil {
		return nil, err
	}
	lc.mu.Lock()
	// A change during the listing lists again next time.
	lc.sess, lc.items, lc.at = sess, items, at
	lc.hint = hints.hint(sess, lf.principal, start, prev)
	lc.mu.Unlock()
	return items, nil
}

// collect gathers an SDK list iterator.
func collect[T any](ctx context.Context, seq func(yield func(T, error) bool)) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, ctx.Err()
}

// featureHandlers sets the handlers of the server's notifications about
// its prompts and resources.
func (cn *conn) featureHandlers(o *mcp.ClientOptions) {
	o.PromptListChangedHandler = func(_ context.Context, req *mcp.PromptListChangedRequest) {
		if !cn.fromCurrent(req.Session) {
			return
		}
		cn.feats.prompts.changed()
		if t := cn.core.Trace; t != nil && t.PromptsChanged != nil {
			t.PromptsChanged(ServerEvent{Server: cn.srv.ID, Principal: cn.principal})
		}
	}
	o.ResourceListChangedHandler = func(_ context.Context, req *mcp.ResourceListChangedRequest) {
		if !cn.fromCurrent(req.Session) {
			return
		}
		cn.feats.resources.changed()
		cn.feats.templates.changed()
		if t := cn.core.Trace; t != nil && t.ResourcesChanged != nil {
			t.ResourcesChanged(ServerEvent{Server: cn.srv.ID, Principal: cn.principal})
		}
	}
	o.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		if req == nil || req.Params == nil || !cn.fromCurrent(req.Session) {
			return
		}
		if t := cn.core.Trace; t != nil && t.ResourceUpdated != nil {
			t.ResourceUpdated(ServerEvent{Server: cn.srv.ID, Principal: cn.principal, URI: req.Params.URI})
		}
	}
}

// fromCurrent reports whether a notification came on the current session.
func (cn *conn) fromCurrent(sess *mcp.ClientSession) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return sess == nil || sess == cn.session
}

// capabilities returns what sess's server declared, never nil.
func capabilities(sess *mcp.ClientSession) *mcp.ServerCapabilities {
	if ir := sess.InitializeResult(); ir != nil && ir.Capabilities != nil {
		return ir.Capabilities
	}
	return &mcp.ServerCapabilities{}
}

// listFeature lists one of a server's lists for the set being built: its
// items, or why the server is left out of it.
// The request (method) is traced as a tools/list request is, and list
// given the _meta Trace.RequestMeta contributes.
func listFeature[T any](ctx context.Context, c *core, cn *conn, lc *listCache[T], lf listFor, method string, has func(*mcp.ServerCapabilities) bool,
	list func(context.Context, *mcp.ClientSession, mcp.Meta) ([]T, error)) ([]T, error) {
	sess, err := cn.current()
	if err != nil {
		return nil, err
	}
	if !has(capabilities(sess)) {
		return nil, nil
	}
	items, err := lc.get(ctx, sess, lf, func(ctx context.Context) ([]T, error) {
		ctx, meta, done := cn.traceList(ctx, sess, method)
		items, err := list(ctx, sess, meta)
		if done != nil {
			done(len(items), err)
		}
		return items, err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if rpcErr, _ := wireErrors(err); rpcErr == nil || rpcErr.Code == jsonrpc.CodeInvalidRequest {
			c.lost(ctx, cn, sess, err) // drops a session that is gone
		}
		return nil, err
	}
	return items, nil
}

// eachServer runs f for every server concurrently, bounded by the hub,
// with the session principal's requests go to (see listToolsAs), or why
// there is none; it fails only when ctx ends or the hub is closed.
func (c *core) eachServer(ctx context.Context, principal string, f func(ctx context.Context, i int, id string, cn *conn, err error)) error {
	if c.ctx.Err() != nil {
		return errClosed
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, s := range c.slots {
		wg.Go(func() {
			cn, release, err := s.shared, func() {}, error(nil)
			if s.pool != nil {
				if cn, release, err = s.get(ctx, principal); err != nil {
					f(ctx, i, s.srv.ID, nil, err)
					return
				}
			}
			defer release()
			f(ctx, i, s.srv.ID, cn, nil)
		})
	}
	wg.Wait()
	if c.ctx.Err() != nil {
		return errClosed
	}
	return ctx.Err()
}
