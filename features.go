package conduit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

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
// are: once per session, again after the server says they changed or
// their cache hint ran out (cache.go).
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

// callLimit bounds ctx by the call's time limit, as the tool pipeline does.
func (c *core) callLimit(ctx context.Context, o *CallOptions) (context.Context, context.CancelFunc) {
	limit := o.CallTimeout
	if limit == 0 {
		limit = c.CallTimeout
	}
	if limit > 0 {
		return withLimit(ctx, limit)
	}
	return ctx, func() {}
}

// featureCall is the pipeline of a prompt or resource request, after the
// name has been resolved: the policy, the approver for "ask" (unless
// noAsk), then do, the request, made like a tool call's (timeout,
// cancellation, routing of what the server sends) and with its failures
// told apart the same way. Hooks and validation are for tool calls only.
//
// method is the request's, for Trace.RequestMeta; do is given the
// request's _meta (CallOptions.Meta and the trace's). req, when not nil,
// is told of the request for Trace.RequestDone.
func (c *core) featureCall(ctx context.Context, method string, call *Call, o *CallOptions, noAsk bool, req *RequestInfo,
	do func(context.Context, *mcp.ClientSession, mcp.Meta) error) error {
	if c.Policy != nil {
		ask, rule, err := c.authorize(ctx, call, nil)
		if err != nil {
			return err
		}
		if ask && !noAsk {
			if err := c.approveRequest(ctx, call, rule); err != nil {
				return err
			}
		}
	}
	cn := c.byID[call.Server]
	sess, err := cn.current()
	if err != nil {
		return newError(KindUnavailable, call.Server, call.Tool, "The server of "+call.Exposed+" is unavailable.", err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = c.RequestTimeout
	}
	rctx, cancel := c.bound(ctx)
	defer cancel()
	tctx := rctx
	if timeout > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(rctx, timeout)
		defer cancel()
	}
	if c.routing() {
		var end func()
		tctx, end = cn.calls.start(tctx, o.Handlers)
		defer end()
	}
	var meta mcp.Meta
	if len(o.Meta) > 0 {
		meta = maps.Clone(o.Meta) // the SDK adds its own keys to a request's _meta
	}
	if c.Trace != nil {
		meta = c.requestMeta(ctx, method, call.Server, call, meta)
	}
	var sent time.Time
	if req != nil {
		sent = req.start(cn.peer, sess)
		tctx = withRequestSlot(tctx, req)
	}
	err = do(tctx, sess, meta)
	if req != nil {
		req.Elapsed = time.Since(sent)
	}
	if err != nil {
		return named(c.requestError(ctx, tctx, cn, sess, call, timeout, err), call)
	}
	return nil
}

// approveRequest asks the approver about a prompt or resource request, on
// a goroutine of its own so that the request is answered when ctx ends
// even if the approver ignores it.
func (c *core) approveRequest(ctx context.Context, call *Call, rule Rule) error {
	type answer struct {
		a   Approval
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		a, err := runCallback(ctx, nil, "the approver", func() Approval {
			return c.Approver(ctx, ApprovalRequest{Call: call, Rule: rule})
		})
		ch <- answer{a, err}
	}()
	var r answer
	select {
	case r = <-ch:
	case <-ctx.Done():
		e := named(ContextError(ctx, nil, 0, nil), call)
		e.Message = strings.TrimSuffix(e.Message, ".") + ", waiting for the approver."
		return e
	}
	switch {
	case r.err != nil:
		return newError(KindInternal, call.Server, call.Tool, "The request for "+call.Exposed+" failed in the approver.", r.err)
	case ctx.Err() != nil:
		return named(ContextError(ctx, nil, 0, nil), call)
	case r.a.Allow:
		return nil
	}
	msg := "The request for " + call.Exposed + " was denied"
	if reason := strings.TrimSpace(r.a.Reason); reason != "" {
		msg += ": " + strings.TrimSuffix(reason, ".")
	}
	e := newError(KindDenied, call.Server, call.Tool, msg+".", nil)
	e.Halt = r.a.Halt
	return e
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

func (c *core) complete(ctx context.Context, params *mcp.CompleteParams, opts *CallOptions) (res *mcp.CompleteResult, err error) {
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	call := &Call{ID: o.ID, Principal: o.Principal, Assigns: o.Assigns, Taint: o.Taint}
	if params != nil && params.Ref != nil {
		call.Exposed = params.Ref.Name
		if params.Ref.Type == "ref/resource" {
			call.Exposed = params.Ref.URI
		}
	}
	meta := o.Meta
	if len(meta) == 0 && params != nil {
		meta = params.Meta
	}
	ctx, req, done := c.traceRequest(ctx, methodComplete, call, meta)
	defer func() { done(err) }()
	if params == nil || params.Ref == nil {
		return nil, newError(KindInvalidArguments, "", "", "A completion needs a reference to a prompt or a resource.", nil)
	}
	ctx, cancel := c.callLimit(ctx, &o)
	defer cancel()
	p := *params
	ref := *params.Ref
	p.Ref = &ref
	switch ref.Type {
	case "ref/prompt":
		ps, err := c.listPromptsAs(ctx, listFor{principal: o.Principal, resolve: true})
		if err != nil {
			return nil, listingError(ctx, err)
		}
		pr, ok := ps.Lookup(ref.Name)
		if !ok {
			return nil, unknownPromptError(ref.Name)
		}
		call.Method, call.Server, call.Tool, call.Exposed = methodGetPrompt, pr.Server, pr.Name, pr.Exposed
		ref.Name = pr.Name
	case "ref/resource":
		rs, err := c.listResourcesAs(ctx, listFor{principal: o.Principal, resolve: true})
		if err != nil {
			return nil, listingError(ctx, err)
		}
		server, err := rs.route(ref.URI, true)
		if err != nil {
			return nil, err
		}
		call.Method, call.Server, call.Tool, call.Exposed = methodReadResource, server, ref.URI, ref.URI
	default:
		return nil, newError(KindInvalidArguments, "", "", fmt.Sprintf("Unknown completion reference type %q.", ref.Type), nil)
	}
	err = c.featureCall(ctx, methodComplete, call, &o, true, req, func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) error {
		if capabilities(sess).Completions == nil {
			// Nothing to complete with: the empty answer, as the spec's.
			req.unsent()
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
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
