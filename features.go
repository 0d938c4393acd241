package conduit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP methods of a governed request, as in [Call.Method].
const (
	methodCallTool     = "tools/call"
	methodGetPrompt    = "prompts/get"
	methodReadResource = "resources/read"

	// Requests traced as prompts and resources are, not governed
	// methods of their own.
	methodComplete    = "completion/complete"
	methodSubscribe   = "resources/subscribe"
	methodUnsubscribe = "resources/unsubscribe"
)

// features keeps a server's prompts and resources, listed as its tools
// are: once per session, again after the server says they changed.
type features struct {
	prompts   listCache[*mcp.Prompt]
	resources listCache[*mcp.Resource]
	templates listCache[*mcp.ResourceTemplate]
}

// listCache is one list of a server's, cached for the session it was
// listed on until the server says it changed.
type listCache[T any] struct {
	mu      sync.Mutex
	sess    *mcp.ClientSession // the session items were listed on
	items   []T
	changes uint64 // list_changed notifications seen
	at      uint64 // changes when items were listed

	fetch sync.Mutex // one listing in flight
}

func (lc *listCache[T]) changed() {
	lc.mu.Lock()
	lc.changes++
	lc.mu.Unlock()
}

func (lc *listCache[T]) cached(sess *mcp.ClientSession) ([]T, bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.sess != sess || lc.at != lc.changes {
		return nil, false
	}
	return lc.items, true
}

// get returns the list for sess, calling list only when it is not cached.
func (lc *listCache[T]) get(ctx context.Context, sess *mcp.ClientSession, list func(context.Context) ([]T, error)) ([]T, error) {
	if items, ok := lc.cached(sess); ok {
		return items, nil
	}
	lc.fetch.Lock()
	defer lc.fetch.Unlock()
	if items, ok := lc.cached(sess); ok {
		return items, nil
	}
	lc.mu.Lock()
	at := lc.changes
	lc.mu.Unlock()
	items, err := list(ctx)
	if err != nil {
		return nil, err
	}
	lc.mu.Lock()
	// A change during the listing lists again next time.
	lc.sess, lc.items, lc.at = sess, items, at
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
			t.PromptsChanged(PromptsChangedInfo{Server: cn.srv.ID})
		}
	}
	o.ResourceListChangedHandler = func(_ context.Context, req *mcp.ResourceListChangedRequest) {
		if !cn.fromCurrent(req.Session) {
			return
		}
		cn.feats.resources.changed()
		cn.feats.templates.changed()
		if t := cn.core.Trace; t != nil && t.ResourcesChanged != nil {
			t.ResourcesChanged(ResourcesChangedInfo{Server: cn.srv.ID})
		}
	}
	o.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		if req == nil || req.Params == nil || !cn.fromCurrent(req.Session) {
			return
		}
		if t := cn.core.Trace; t != nil && t.ResourceUpdated != nil {
			t.ResourceUpdated(ResourceUpdatedInfo{Server: cn.srv.ID, URI: req.Params.URI})
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
func listFeature[T any](ctx context.Context, c *core, cn *conn, lc *listCache[T], method string, has func(*mcp.ServerCapabilities) bool,
	list func(context.Context, *mcp.ClientSession, mcp.Meta) ([]T, error)) ([]T, error) {
	sess, err := cn.current()
	if err != nil {
		return nil, err
	}
	if !has(capabilities(sess)) {
		return nil, nil
	}
	items, err := lc.get(ctx, sess, func(ctx context.Context) ([]T, error) {
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
// and fails only when ctx ends or the hub is closed.
func (c *core) eachServer(ctx context.Context, f func(ctx context.Context, i int, cn *conn)) error {
	if c.ctx.Err() != nil {
		return errClosed
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, cn := range c.conns {
		wg.Go(func() { f(ctx, i, cn) })
	}
	wg.Wait()
	if c.ctx.Err() != nil {
		return errClosed
	}
	return ctx.Err()
}

// named puts call's server, name and exposed name into an error that
// ContextError made without a tool.
func named(e *Error, call *Call) *Error {
	if e.Server == "" {
		e.Server, e.Tool = call.Server, call.Tool
		if rest, ok := strings.CutPrefix(e.Message, "The call "); ok {
			e.Message = "The request for " + call.Exposed + " " + rest
		}
	}
	return e
}

// policyDenies reports whether the policy denies call outright, as a
// listing for a principal leaves out.
func (c *core) policyDenies(call *Call) bool {
	if c.Policy == nil {
		return false
	}
	d, _, _, err := decide(c.Policy, call)
	return err == nil && d == DecisionDeny
}

// SetLoggingLevel asks every server that is up and offers logging to send
// log messages of level and above (logging/setLevel); they then reach the
// [Handlers]' Logging. A server that connects later is not told: call
// again after [Trace.ServerUp]. A server on protocol 2026-07-28 takes
// the level with each request instead: put it in the call's
// CallOptions.Meta under mcp.MetaKeyLogLevel. The error joins the
// servers' errors.
func (h *Hub) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	return h.c.setLoggingLevel(ctx, level)
}

// SetLoggingLevel asks the server to send log messages of level and
// above, as [Hub.SetLoggingLevel] does.
func (cl *Client) SetLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	return cl.c.setLoggingLevel(ctx, level)
}

func (c *core) setLoggingLevel(ctx context.Context, level mcp.LoggingLevel) error {
	errs := make([]error, len(c.conns))
	err := c.eachServer(ctx, func(ctx context.Context, i int, cn *conn) {
		sess, err := cn.current()
		if err != nil || capabilities(sess).Logging == nil {
			return
		}
		if err := sess.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			errs[i] = fmt.Errorf("server %s: %w", cn.srv.ID, err)
		}
	})
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

// Complete asks the server of params.Ref for completions
// (completion/complete): a prompt named by its exposed name, or a
// resource or resource template by its URI, each as listed for opts'
// principal and taint. The policy governs it as it governs the prompt or
// resource: what it denies is refused; an "ask" is not asked about, since
// a completion runs nothing. Params are not modified. The values are the
// server's output: a caller that keeps a taint (as package gateway does
// for each session) counts an answer with values as the output of the
// reference's server; conduit's own empty answer, for a server that
// offers no completions, is nobody's.
func (h *Hub) Complete(ctx context.Context, params *mcp.CompleteParams, opts *CallOptions) (*mcp.CompleteResult, error) {
	return h.c.complete(ctx, params, opts)
}

// Complete asks the server for completions, as [Hub.Complete] does.
func (cl *Client) Complete(ctx context.Context, params *mcp.CompleteParams, opts *CallOptions) (*mcp.CompleteResult, error) {
	return cl.c.complete(ctx, params, opts)
}

func (c *core) complete(ctx context.Context, params *mcp.CompleteParams, opts *CallOptions) (*mcp.CompleteResult, error) {
	o := callOptions(opts)
	var exposed string
	if params != nil && params.Ref != nil {
		exposed = params.Ref.Name
		if params.Ref.Type == "ref/resource" {
			exposed = params.Ref.URI
		}
	}
	r := &request{method: methodComplete, call: newCall(o, "", exposed), o: o, noAsk: true, startMeta: o.Meta}
	if len(r.startMeta) == 0 && params != nil {
		r.startMeta = params.Meta
	}
	var p mcp.CompleteParams
	var res *mcp.CompleteResult
	r.resolve = func(ctx context.Context) error {
		if params == nil || params.Ref == nil {
			return newError(KindInvalidArguments, "", "", "A completion needs a reference to a prompt or a resource.", nil)
		}
		p = *params
		ref := *params.Ref
		p.Ref = &ref
		call := r.call
		switch ref.Type {
		case "ref/prompt":
			ps, err := c.listPrompts(ctx)
			if err != nil {
				return listingError(ctx, err)
			}
			pr, ok := ps.Lookup(ref.Name)
			if !ok {
				return unknownPromptError(ref.Name)
			}
			call.Method, call.Server, call.Tool, call.Exposed = methodGetPrompt, pr.Server, pr.Name, pr.Exposed
			ref.Name = pr.Name
		case "ref/resource":
			rs, err := c.listResources(ctx)
			if err != nil {
				return listingError(ctx, err)
			}
			server, err := rs.route(ref.URI, true)
			if err != nil {
				return err
			}
			call.Method, call.Server, call.Tool, call.Exposed = methodReadResource, server, ref.URI, ref.URI
		default:
			return newError(KindInvalidArguments, "", "", fmt.Sprintf("Unknown completion reference type %q.", ref.Type), nil)
		}
		return nil
	}
	r.do = func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) error {
		if capabilities(sess).Completions == nil {
			// Nothing to complete with: the empty answer, as the spec's.
			r.info.unsent()
			res = &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
			return nil
		}
		if len(meta) > 0 {
			// The trace's keys over those of params' own _meta.
			merged := make(mcp.Meta, len(p.Meta)+len(meta))
			maps.Copy(merged, p.Meta)
			maps.Copy(merged, meta)
			p.Meta = merged
		}
		var err error
		res, err = sess.Complete(ctx, &p)
		return err
	}
	if _, err := c.run(ctx, r); err != nil {
		return nil, err
	}
	return res, nil
}
