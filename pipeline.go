package conduit

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"time"

	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/conduitmcp/conduit/internal/session"
	"github.com/conduitmcp/conduit/oauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The one pipeline of every governed request. That is a tool call (of a
// server's tool or a local one), a prompt, a resource read or
// (un)subscription, or a completion. Each passes the same stages, in this
// order:
//
//	begin      Trace's start event, and the call's time limit
//	resolve    the name (tool, prompt, URI) to what it names and its server
//	authorize  the policy's decision
//	admit      for "ask", the approver; then the before-hooks (tool calls)
//	check      argument limits after the hooks, validation, halt (tool calls)
//	send       the session, the request, and what its failure means
//	after      the result limit and the after-hooks (tool calls)
//	done       Trace's end event
//
// The request says what differs between methods. It says how its name
// resolves, whether an "ask" is asked, and how it is sent. Everything else
// is written once, here.
//
// The callbacks (approver, hooks) are the user's code and may ignore ctx.
// Yet the request must be answered when ctx ends. So the callbacks of
// admit run together on one goroutine, and the after-hooks on another.
// The caller waits for them or for ctx (see guard). The request itself
// stays on the caller's goroutine. The SDK's deep call path would grow a
// fresh goroutine's stack on every call.

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

// request is one governed request on its way through the pipeline.
type request struct {
	// method is the MCP method sent, for Trace.RequestMeta and the Trace
	// events. call.Method is the one the policy governs.
	method string
	call   *Call // &callv
	callv  Call
	o      *CallOptions // never nil
	// halt is the call's CallOptions.Halt (tool calls only).
	halt <-chan struct{}

	// A tool call has the arguments as the caller gave them. It may have a
	// local tool that answers in place of a server.
	args  any
	local *LocalTool
	// tool is the tool the caller resolved args against (ResolvedCaller).
	// The pipeline checks that the tool set holds it, and resolves nothing.
	tool *Tool
	// stable are arguments no callback changes. A Trace snapshot of the
	// call may share them (see guard). It is nil when before-hooks may
	// change call.Args in place.
	stable map[string]any

	// For any other request, resolve fills in call (Server, Tool, Exposed,
	// Method). do makes the request over sess with the _meta given.
	resolve func(ctx context.Context) error
	do      func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) error
	// noAsk lets a policy's "ask" through unasked: the request runs
	// nothing (a completion, a subscription).
	noAsk bool
	// startMeta is the _meta Trace's start event is given, when not
	// CallOptions.Meta (a completion's own params._meta).
	startMeta mcp.Meta

	// traced is what Trace's done event is given. It is call, or a copy of
	// it when a callback overran (see guard).
	traced *Call
	// What guard runs the callbacks with. These are the callback running,
	// the channel its goroutine reports on, and what it found.
	stage   stage
	guarded chan struct{}
	gres    *mcp.CallToolResult
	gerr    error
	// info, when the done event is traced, is told of the request sent.
	info *RequestInfo
}

// isTool reports whether r is a tools/call, which hooks, validation and
// the limits apply to.
func (r *request) isTool() bool { return r.method == methodCallTool }

// callOptions is opts, or the zero options.
func callOptions(opts *CallOptions) *CallOptions {
	if opts == nil {
		return &CallOptions{}
	}
	return opts
}

// newRequest is a request of method for exposed, made with o. It is as the
// policy sees it before its name resolves.
func newRequest(method string, o *CallOptions, governed, exposed string) *request {
	r := &request{method: method, o: o}
	r.callv = Call{ID: o.ID, Exposed: exposed, Principal: o.Principal, Assigns: o.Assigns, Taint: o.Taint, Method: governed}
	r.call = &r.callv
	return r
}

// run takes r through the pipeline. Results are returned as the server
// sent them, after-hooks aside. A request other than a tool call returns
// a nil result here. Its result is what its do stored.
func (c *core) run(ctx context.Context, r *request) (res *mcp.CallToolResult, err error) {
	r.traced = r.call
	// begin
	if c.Trace != nil {
		ctx = c.traceStart(ctx, r)
		if r.info != nil {
			start, dctx := time.Now(), ctx
			defer func() { c.traceDone(dctx, r, res, err, time.Since(start)) }()
		}
	}
	limit := r.o.CallTimeout
	if limit == 0 {
		limit = c.CallTimeout
	}
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = c.withLimit(ctx, limit)
		defer cancel()
	}
	// resolve
	if r.isTool() {
		err = c.resolveTool(ctx, r)
	} else {
		err = r.resolve(ctx)
	}
	if err != nil {
		return nil, err
	}
	// authorize
	call := r.call
	ask, rule, err := c.authorize(ctx, call, r.halt, r.o.Approval != nil)
	if err != nil {
		return nil, err
	}
	ask = ask && !r.noAsk
	// admit
	hooks := r.isTool() && c.before
	if ask || hooks {
		// An approval decided beforehand runs no approver.
		inline := (!ask || r.o.Approval != nil) && c.beforeInline
		if _, err := guard(ctx, c, r, r.stable, inline, func(st *stage) (*mcp.CallToolResult, error) {
			return nil, c.admit(ctx, r, ask, rule, st)
		}); err != nil {
			return nil, err
		}
	}
	// check
	if r.isTool() {
		if err := c.check(ctx, r); err != nil {
			return nil, err
		}
	}
	// send
	if r.local != nil {
		res, err = r.local.answer(ctx, call)
	} else {
		res, err = c.send(ctx, r)
		if r.info != nil {
			r.info.Err = err
		}
	}
	if err != nil || !r.isTool() || (res != nil && res.NeedsInput() && r.o.Input != nil && r.o.Input.Return) {
		// A server's request for input returned as asked
		// (CallOptions.Input.Return) is no result yet: the round that
		// completes the call is checked.
		return res, err
	}
	// after
	if reason := c.limits.checkResult(res); reason != nil {
		return nil, resultLimitError(call.Def, reason)
	}
	if c.after {
		cur := res
		if res, err = guard(ctx, c, r, call.Args, c.afterInline, func(st *stage) (*mcp.CallToolResult, error) {
			return c.afterHooks(ctx, call, cur, st)
		}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// withLimit is ctx bounded by limit. Its cause tells the limit's expiry
// from the end of ctx itself.
func (c *core) withLimit(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	cause := c.limitErr
	if cause == nil || limit != cause.limit {
		cause = &limitError{limit}
	}
	return context.WithTimeoutCause(ctx, limit, cause)
}

// resolveTool resolves a tool call. The name resolves against the offered
// tool set, or the local tool. The arguments become an object within the
// limits.
func (c *core) resolveTool(ctx context.Context, r *request) error {
	ts := r.o.ToolSet
	if ts == nil && r.local == nil {
		var err error
		if ts, err = c.listToolsAs(ctx, listFor{principal: r.o.Principal, resolve: true}); err != nil {
			return listingError(ctx, err)
		}
	}
	if err := c.checkArgs(ts, r.local, r.call.Exposed, r.args); err != nil {
		return err
	}
	tool, args, err := r.resolveIn(ts)
	if err != nil {
		var e *Error
		if p := r.o.Principal; p != "" && errors.As(err, &e) && e.Kind == ErrUnavailable && e.Err != nil {
			// A server down for this principal: say whose.
			return sessionError(e.Server, e.Tool, r.call.Exposed, p, e.Err)
		}
		return err
	}
	if r.local == nil && c.byID[tool.Server] == nil {
		// A tool set of another hub's.
		return unknownToolError(r.call.Exposed)
	}
	call := r.call
	call.Server, call.Tool, call.Exposed, call.Def, call.Args = tool.Server, tool.Name, tool.Exposed, tool, args
	r.stable = args
	// The caller's map is copied only when a callback could change it,
	// deeply, so that no callback's edit reaches the caller.
	if _, isMap := r.args.(map[string]any); isMap && (len(c.Hooks) > 0 || c.Approver != nil) {
		call.Args = jsonv.CloneObject(call.Args)
	} else if c.before {
		r.stable = nil
	}
	return nil
}

// resolveIn resolves r's tool and arguments, in one of three ways:
//
//   - the name against ts
//   - a local tool, which is its own
//   - the tool the caller resolved (ResolvedCaller), which must be ts's own
//
// A tool of another set, or one made by hand, could skip the offered
// definition.
func (r *request) resolveIn(ts *ToolSet) (*Tool, map[string]any, error) {
	switch {
	case r.tool != nil:
		if got, ok := ts.Lookup(r.tool.Exposed); !ok || got != r.tool {
			return nil, nil, unknownToolError(r.tool.Exposed)
		}
		if args, _ := r.args.(map[string]any); args != nil {
			return r.tool, args, nil
		}
		return r.tool, map[string]any{}, nil
	case r.local != nil:
		m, err := objectArgs(r.args)
		if err != nil {
			return r.local.Tool, nil, invalidArgumentsError(r.local.Tool, err)
		}
		return r.local.Tool, m, nil
	}
	return ts.Resolve(r.call.Exposed, r.args)
}

// checkArgs applies the argument limits to args as the caller gave them.
// It runs before they are decoded. So a hostile call costs no more than
// its measuring.
func (c *core) checkArgs(ts *ToolSet, local *LocalTool, name string, args any) error {
	reason := c.limits.checkArgs(args)
	if reason == nil {
		return nil
	}
	if local != nil {
		return argsLimitError(local.Tool, reason)
	}
	t, ok := ts.Lookup(name)
	if !ok {
		return ts.unknown(name)
	}
	return argsLimitError(t, reason)
}

// authorize applies the policy. ask reports that the approver must be
// asked. It is true only when an approver is configured, or the approval
// was decided beforehand.
func (c *core) authorize(ctx context.Context, call *Call, halt <-chan struct{}, decided bool) (ask bool, rule Rule, err error) {
	if c.Policy == nil {
		return false, Rule{}, nil
	}
	d, rule, matched, err := decide(c.Policy, call)
	if err != nil {
		return false, rule, newError(ErrInternal, call.Server, call.Tool, "The policy could not decide on "+call.Exposed+".", err)
	}
	if t := c.Trace; t != nil && t.Decided != nil {
		t.Decided(StepInfo{Call: call, Decision: d, Rule: rule, Matched: matched, Context: ctx})
	}
	switch d {
	case DecisionAllow:
		return false, rule, nil
	case DecisionDeny:
		msg := "The policy does not allow calling " + call.Exposed + "."
		if !matched {
			msg = "The policy does not allow calling " + call.Exposed + " (no rule allows it)."
		}
		return false, rule, newError(ErrDenied, call.Server, call.Tool, msg, nil)
	}
	if halted(halt) {
		return false, rule, haltedError(call.Def)
	}
	if c.Approver == nil && !decided {
		return false, rule, newError(ErrApprovalRequired, call.Server, call.Tool,
			"Calling "+call.Exposed+" needs approval, and no approver is configured.", nil)
	}
	return true, rule, nil
}

// admit asks the approver, when the policy said ask, and runs the
// before-hooks of a tool call.
func (c *core) admit(ctx context.Context, r *request, ask bool, rule Rule, st *stage) error {
	call := r.call
	if ask {
		if err := c.approve(ctx, r, rule, st); err != nil {
			return err
		}
	}
	// A halted batch runs no hooks for the calls it has not sent.
	if halted(r.halt) {
		return haltedError(call.Def)
	}
	if r.isTool() && c.before {
		if err := c.beforeHooks(ctx, call, st); err != nil {
			return err
		}
	}
	// A callback that returned after ctx ended must not get the call sent.
	if ctx.Err() != nil {
		return contextError(ctx, call, nil)
	}
	return nil
}

// check is what a tool call must pass after the before-hooks. It checks
// the limits on the arguments they may have changed. Then it checks the
// input schema and the halt.
func (c *core) check(ctx context.Context, r *request) error {
	call := r.call
	if c.before {
		if reason := c.limits.checkArgs(call.Args); reason != nil {
			return argsLimitError(call.Def, reason)
		}
	}
	if c.Validate {
		if verr := call.Def.validate(call.Args); verr != nil {
			if t := c.Trace; t != nil && t.ValidationFailed != nil {
				t.ValidationFailed(StepInfo{Context: ctx, Call: call, Err: verr})
			}
			return invalidArgumentsError(call.Def, verr)
		}
	}
	if halted(r.halt) {
		return haltedError(call.Def)
	}
	return nil
}

// session picks the session r is sent on. That is the one of its server.
// For a server of IdentityPrincipal, it is the one of the call's
// principal. It is opened with their credentials from the pool. release
// ends its use. It is the one place that picks. So no request ever goes
// out on another principal's session, or a shared one. A tool call also
// checks that the server still offers the tool, and its pinned definition.
func (c *core) session(ctx context.Context, r *request) (_ *conn, _ *mcp.ClientSession, release func(), _ error) {
	call := r.call
	cn, release, err := c.connFor(ctx, call.Server, call.Principal)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil, contextError(ctx, call, err)
		}
		return nil, nil, nil, sessionError(call.Server, call.Tool, call.Exposed, call.Principal, c.byID[call.Server].srv.redact(err))
	}
	fail := func(err error) (*conn, *mcp.ClientSession, func(), error) {
		release()
		return nil, nil, nil, err
	}
	if r.isTool() {
		if has, known := cn.has(call.Tool); known && !has {
			return fail(newError(ErrUnknownTool, call.Server, call.Tool,
				"The tool "+call.Exposed+" is no longer offered by its server.", nil))
		}
	}
	sess, err := cn.current()
	if err != nil {
		return fail(sessionError(call.Server, call.Tool, call.Exposed, call.Principal, err))
	}
	if r.isTool() && c.Pins != nil {
		if sess, err = c.checkPinned(ctx, cn, call); err != nil {
			return fail(err)
		}
	}
	return cn, sess, release, nil
}

// sessionError is the error of a request that found no session to go on.
// The request is of tool (named exposed) of server, for principal. err
// says why:
//
//   - a server that is down
//   - one that needs the principal to log in
//   - one whose sessions are per principal while the request names none
//   - a pool with no room
//
// Nothing was sent.
func sessionError(server, tool, exposed, principal string, err error) *Error {
	switch {
	case errors.Is(err, oauth.ErrNeedsLogin):
		who := "a login"
		if principal != "" {
			who = "a login by " + strconv.Quote(principal)
		}
		return newError(ErrUnavailable, server, tool, "The server of "+exposed+" needs "+who+"; the request was not sent.", err)
	case errors.Is(err, ErrNoPrincipal):
		return newError(ErrUnavailable, server, tool, "The server of "+exposed+" serves each user with their own credentials, and the request names no user; it was not sent.", err)
	}
	var busy *session.BusyError
	if errors.As(err, &busy) {
		return newError(ErrUnavailable, server, tool, "The server of "+exposed+" is busy with other users' requests; retry shortly. The request was not sent.", err)
	}
	return unavailableError(server, tool, exposed, err)
}

// send sends r's request with its _meta and progress. Its request timeout
// bounds it, and Close ends it. What the server sends meanwhile is routed
// to the call's Handlers. Its failure is told apart.
func (c *core) send(ctx context.Context, r *request) (*mcp.CallToolResult, error) {
	call, o := r.call, r.o
	cn, sess, release, err := c.session(ctx, r)
	if err != nil {
		return nil, err
	}
	defer release()
	var meta mcp.Meta
	if len(o.Meta) > 0 {
		// The SDK adds its own keys to the request's _meta.
		meta = maps.Clone(o.Meta)
	}
	if c.Trace != nil {
		meta = c.requestMeta(ctx, r.method, call.Server, call, meta)
	}
	var params *mcp.CallToolParams
	var recorded *Input
	if o.Input != nil && o.Input.Resend {
		// A call deferred for its server's JSON-RPC request is sent again:
		// the same question gets the recorded answer from its handler. A
		// retry's answers go with the request (inputMiddleware).
		recorded = o.Input
	}
	if r.isTool() {
		params = &mcp.CallToolParams{Name: call.Tool, Arguments: call.Args, Meta: meta}
		if o.Progress != nil {
			token := "conduit-" + strconv.FormatUint(c.tokens.Add(1), 10)
			// Notifications that arrive after the result are dropped; those
			// already in the mailbox are delivered before the call returns
			// (a gateway forwards them, and a client ignores progress of a
			// request already answered), unless the callback is slower than
			// progressFlush.
			mb := c.newProgress(call.Server, call, o.Progress)
			c.progress.Store(token, mb)
			defer func() {
				c.progress.Delete(token)
				mb.Flush(ctx, progressFlush)
			}()
			params.SetProgressToken(token)
		}
	}
	timeout := o.RequestTimeout
	if timeout <= 0 {
		timeout = c.RequestTimeout
	}
	// The request ends with the caller's ctx, with the timeout and with
	// Close; the SDK then tells the server with notifications/cancelled.
	rctx, cancel := c.bound(ctx)
	defer cancel()
	tctx := rctx
	if timeout > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(rctx, timeout)
		defer cancel()
	}
	var in *inflight
	if c.routing() {
		var end func()
		tctx, in, end = cn.calls.start(tctx, o.Handlers, recorded)
		defer end()
	}
	tctx = withDetach(withInput(tctx, o.Input), o.DetachTask)
	var sent time.Time
	if r.info != nil {
		sent = r.info.start(cn.peer, sess)
		tctx = withRequestSlot(tctx, r.info)
	}
	var res *mcp.CallToolResult
	if r.isTool() {
		res, err = sess.CallTool(tctx, params)
	} else {
		err = r.do(tctx, sess, meta)
	}
	if r.info != nil {
		r.info.Elapsed = time.Since(sent)
	}
	if d := inputDeferred(in, err); d != nil {
		return nil, deferredError(call, &Deferral{Reason: d.reason, Args: maps.Clone(call.Args), Input: d.input})
	}
	if err != nil {
		return nil, named(c.requestError(ctx, tctx, cn, sess, call, timeout, err), call)
	}
	if r.isTool() && res == nil {
		return nil, newError(ErrServerError, call.Server, call.Tool, modeltext.NoResult(call.Exposed), nil)
	}
	return res, nil
}

// traceStart tells Trace that r enters the pipeline, and returns the
// request's context from then on. It sets r.info when the end is traced.
func (c *core) traceStart(ctx context.Context, r *request) context.Context {
	t := c.Trace
	if r.isTool() {
		if t.CallStart != nil {
			if sctx := t.CallStart(CallStartInfo{Context: ctx, Method: methodCallTool, Call: r.call, Meta: r.o.Meta, Local: r.local != nil}); sctx != nil {
				ctx = sctx
			}
		}
		if t.CallDone != nil {
			r.info = new(RequestInfo)
		}
		return ctx
	}
	if t.RequestStart != nil {
		meta := r.startMeta
		if meta == nil {
			meta = r.o.Meta
		}
		if sctx := t.RequestStart(CallStartInfo{Context: ctx, Method: r.method, Call: r.call, Meta: meta}); sctx != nil {
			ctx = sctx
		}
	}
	if t.RequestDone != nil {
		r.info = new(RequestInfo)
	}
	return ctx
}

// traceDone tells Trace that r was answered.
func (c *core) traceDone(ctx context.Context, r *request, res *mcp.CallToolResult, err error, elapsed time.Duration) {
	if r.isTool() {
		c.Trace.CallDone(CallDoneInfo{Method: methodCallTool, Call: r.traced, Result: res, Err: err, Elapsed: elapsed, Context: ctx, Request: r.info.ifSent(), Local: r.local != nil})
		return
	}
	c.Trace.RequestDone(CallDoneInfo{Context: ctx, Method: r.method, Call: r.traced, Err: err, Elapsed: elapsed, Request: r.info.ifSent()})
}
