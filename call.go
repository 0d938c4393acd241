package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call is one call on its way through the pipeline, as conditions,
// approvers and hooks see it.
type Call struct {
	Server  string // server id
	Tool    string // the tool's own name on its server
	Exposed string // the name the model used
	Def     *Tool  // the offered definition
	// Args are the arguments, a JSON object; before-hooks may change them.
	Args map[string]any
	// Principal, Assigns and Taint are the call's [CallOptions] of the
	// same names.
	Principal string
	Assigns   map[string]any
	Taint     []string
}

// Progress is one progress notification of a running call.
type Progress struct {
	Progress float64 // how far the call is, in the server's units
	Total    float64 // zero when unknown
	Message  string  // optional, from the server
}

// CallOptions are the options of one call. The zero value is fine.
type CallOptions struct {
	// ToolSet is the tool set the model was offered; the name resolves
	// against it only. Nil means the current tool set.
	ToolSet *ToolSet
	// Principal is who the call is made for, seen by policy conditions,
	// approvers and hooks.
	Principal string
	// Assigns carries values of the caller's for approvers and hooks.
	Assigns map[string]any
	// Taint lists the servers whose output is already in the model's
	// context; Tainted conditions react to it.
	Taint []string
	// Timeout bounds the request to the server; on expiry the call is
	// answered with KindTimeout and the SDK sends the server
	// notifications/cancelled. Zero means the hub's RequestTimeout. The
	// whole pipeline, approval and hooks included, is bounded by ctx.
	Timeout time.Duration
	// Meta is sent as the request's _meta.
	Meta mcp.Meta
	// Progress, when set, receives the server's progress notifications.
	// Notifications that arrive after the result are dropped.
	Progress func(Progress)
	// Shape says how the result is prepared; ShapeLLM for a model.
	Shape Shape
	// Halt, when closed, stops the call before it is sent: it is answered
	// with a KindHalted error. The adapters close it when an approver halts
	// the batch.
	Halt <-chan struct{}
}

// call is the governed pipeline of one call: resolve, object arguments,
// policy, approval, before-hooks, validation, the request, after-hooks,
// shaping.
//
// The callbacks (approver, hooks) are the user's code and may ignore ctx,
// yet the call must be answered when ctx ends; so the callbacks before the
// request run together on one goroutine, and the after-hooks on another,
// while the caller waits for them or for ctx. The request itself stays on
// the caller's goroutine: the SDK's deep call path would grow a fresh
// goroutine's stack on every call.
func (c *core) call(ctx context.Context, name string, args any, opts *CallOptions) (res *mcp.CallToolResult, err error) {
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	call := &Call{Exposed: name, Principal: o.Principal, Assigns: o.Assigns, Taint: o.Taint}
	traced := call // what Trace.CallDone is given
	if t := c.trace; t != nil && t.CallDone != nil {
		start := time.Now()
		defer func() { t.CallDone(traced, res, err, time.Since(start)) }()
	}
	ts := o.ToolSet
	if ts == nil {
		if ts, err = c.listTools(ctx); err != nil {
			return nil, contextError(ctx, "", "", err)
		}
	}
	tool, ok := ts.Lookup(name)
	if !ok || c.byID[tool.Server] == nil {
		return nil, newError(KindUnknownTool, "", "", fmt.Sprintf("Unknown tool %q: it is not among the tools offered.", name), nil)
	}
	call.Server, call.Tool, call.Def = tool.Server, tool.Name, tool
	// The caller's map is copied only when a callback could change it.
	if call.Args, err = objectArgs(args, len(c.Hooks) > 0 || c.Approver != nil); err != nil {
		return nil, newError(KindInvalidArguments, tool.Server, tool.Name,
			"Invalid arguments for "+tool.Exposed+": "+err.Error()+".", err)
	}
	ask, rule, err := c.authorize(call, o.Halt)
	if err != nil {
		return nil, err
	}
	if ask || c.before {
		if _, err := guard(ctx, c, call, &traced, !ask && c.beforeInline, func(st *stage) (struct{}, error) {
			return struct{}{}, c.beforeHooks(ctx, call, o.Halt, ask, rule, st)
		}); err != nil {
			return nil, err
		}
	}
	if c.Validate {
		if verr := tool.validate(call.Args); verr != nil {
			return nil, newError(KindInvalidArguments, call.Server, call.Tool,
				"Invalid arguments for "+call.Exposed+": "+verr.Error()+".", verr)
		}
	}
	if halted(o.Halt) {
		return nil, haltedError(call)
	}
	if res, err = c.send(ctx, call, &o); err != nil {
		return nil, err
	}
	if c.after {
		cur := res
		if res, err = guard(ctx, c, call, &traced, c.afterInline, func(st *stage) (*mcp.CallToolResult, error) {
			return c.afterHooks(ctx, call, cur, st)
		}); err != nil {
			return nil, err
		}
	}
	if o.Shape == ShapeLLM {
		res = ShapeForModel(res)
	}
	return res, nil
}

// guard runs f, a stretch of the pipeline that calls callbacks, so that the
// call is answered when ctx ends even if a callback ignores it. While
// conduit's own code runs in f, an ended ctx is waited out: f then stops
// before the next callback. traced is pointed at a copy of call when a
// callback overruns, since the callback still holds call. Inline
// callbacks are trusted to return: f runs on the caller's goroutine, and
// still starts no callback once ctx has ended.
func guard[T any](ctx context.Context, c *core, call *Call, traced **Call, inline bool, f func(*stage) (T, error)) (T, error) {
	if ctx.Done() == nil {
		return f(nil)
	}
	if inline {
		return f(&stage{})
	}
	var snap *Call
	if c.trace != nil && c.trace.CallDone != nil {
		s := *call
		s.Args = maps.Clone(call.Args)
		snap = &s
	}
	type result struct {
		v   T
		err error
	}
	st := &stage{}
	ch := make(chan result, 1)
	go func() {
		v, err := f(st)
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if who := st.callback(); who != "" {
			if snap != nil {
				*traced = snap
			}
			var zero T
			return zero, callbackError(ctx, call.Def, who, ctx.Err())
		}
		r := <-ch
		return r.v, r.err
	}
}

// beforeHooks asks the approver, when the policy said ask, and runs the
// before-hooks.
func (c *core) beforeHooks(ctx context.Context, call *Call, halt <-chan struct{}, ask bool, rule Rule, st *stage) error {
	tool := call.Def
	if ask {
		if err := c.approve(ctx, call, rule, st); err != nil {
			return err
		}
	}
	// A halted batch runs no hooks for the calls it has not sent.
	if halted(halt) {
		return haltedError(call)
	}
	for _, h := range c.Hooks {
		if h.Before == nil {
			continue
		}
		herr, err := runCallback(ctx, st, hookName(h), func() error { return h.Before(ctx, call) })
		if err != nil {
			return callbackError(ctx, tool, hookName(h), err)
		}
		// Hooks may change the arguments only: the call goes where the
		// policy saw it going.
		call.Server, call.Tool, call.Exposed, call.Def = tool.Server, tool.Name, tool.Exposed, tool
		if herr != nil {
			return hookError(call, h.Name, herr)
		}
		if call.Args == nil {
			call.Args = map[string]any{}
		}
	}
	// A callback that returned after ctx ended must not get the call sent.
	if err := ctx.Err(); err != nil {
		return contextError(ctx, call.Server, call.Tool, err)
	}
	return nil
}

// afterHooks runs the after-hooks over the server's result.
func (c *core) afterHooks(ctx context.Context, call *Call, res *mcp.CallToolResult, st *stage) (*mcp.CallToolResult, error) {
	for _, h := range c.Hooks {
		if h.After == nil {
			continue
		}
		type out struct {
			res *mcp.CallToolResult
			err error
		}
		cur := res
		r, err := runCallback(ctx, st, hookName(h), func() out { r, err := h.After(ctx, call, cur); return out{r, err} })
		if err != nil {
			return nil, callbackError(ctx, call.Def, hookName(h), err)
		}
		if r.err != nil {
			return nil, hookError(call, h.Name, r.err)
		}
		if r.res != nil {
			res = r.res
		}
	}
	return res, nil
}

func hookName(h Hook) string {
	if h.Name == "" {
		return "a hook"
	}
	return "hook " + h.Name
}

// authorize applies the policy. ask reports that the approver must be
// asked; it is true only when an approver is configured.
func (c *core) authorize(call *Call, halt <-chan struct{}) (ask bool, rule Rule, err error) {
	if c.Policy == nil {
		return false, Rule{}, nil
	}
	d, rule, matched, err := decide(c.Policy, call)
	if err != nil {
		return false, rule, newError(KindInternal, call.Server, call.Tool, "The policy could not decide on "+call.Exposed+".", err)
	}
	if t := c.trace; t != nil && t.Decided != nil {
		t.Decided(call, d, rule)
	}
	switch d {
	case DecisionAllow:
		return false, rule, nil
	case DecisionDeny:
		msg := "The policy does not allow calling " + call.Exposed + "."
		if !matched {
			msg = "The policy does not allow calling " + call.Exposed + " (no rule allows it)."
		}
		return false, rule, newError(KindDenied, call.Server, call.Tool, msg, nil)
	}
	if halted(halt) {
		return false, rule, haltedError(call)
	}
	if c.Approver == nil {
		return false, rule, newError(KindApprovalRequired, call.Server, call.Tool,
			"Calling "+call.Exposed+" needs approval, and no approver is configured.", nil)
	}
	return true, rule, nil
}

// approve asks the approver about a call the policy sent to it.
func (c *core) approve(ctx context.Context, call *Call, rule Rule, st *stage) error {
	a, err := runCallback(ctx, st, "the approver", func() Approval { return c.Approver(ctx, ApprovalRequest{Call: call, Rule: rule}) })
	if err != nil {
		return callbackError(ctx, call.Def, "the approver", err)
	}
	if a.Allow {
		return nil
	}
	msg := "The call to " + call.Exposed + " was denied"
	if r := strings.TrimSpace(a.Reason); r != "" {
		msg += ": " + strings.TrimSuffix(r, ".")
	}
	e := newError(KindDenied, call.Server, call.Tool, msg+".", nil)
	e.Halt = a.Halt
	return e
}

// probeTimeout bounds the ping that tells a lost session from a live one
// after a call failed in a way the SDK does not classify. A variable for
// tests.
var probeTimeout = 5 * time.Second

func (c *core) send(ctx context.Context, call *Call, o *CallOptions) (*mcp.CallToolResult, error) {
	cn := c.byID[call.Server]
	if has, known := cn.has(call.Tool); known && !has {
		return nil, newError(KindUnknownTool, call.Server, call.Tool,
			"The tool "+call.Exposed+" is no longer offered by its server.", nil)
	}
	sess, err := cn.current()
	if err != nil {
		return nil, newError(KindUnavailable, call.Server, call.Tool,
			"The server of "+call.Exposed+" is unavailable.", err)
	}
	params := &mcp.CallToolParams{Name: call.Tool, Arguments: call.Args}
	if len(o.Meta) > 0 {
		// The SDK adds its own keys to the request's _meta.
		params.Meta = maps.Clone(o.Meta)
	}
	if o.Progress != nil {
		token := "conduit-" + strconv.FormatUint(c.tokens.Add(1), 10)
		c.progress.Store(token, o.Progress)
		defer c.progress.Delete(token)
		params.SetProgressToken(token)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = c.requestTimeout
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
	res, err := sess.CallTool(tctx, params)
	if err == nil {
		if res == nil {
			return nil, newError(KindServerError, call.Server, call.Tool, "The server sent an empty result.", nil)
		}
		return res, nil
	}
	switch {
	case ctx.Err() != nil:
		return nil, contextError(ctx, call.Server, call.Tool, err)
	case c.ctx.Err() != nil:
		return nil, newError(KindUnavailable, call.Server, call.Tool,
			"The call to "+call.Exposed+" was ended: the tools were closed.", errors.Join(errClosed, err))
	case tctx.Err() != nil:
		return nil, newError(KindTimeout, call.Server, call.Tool,
			fmt.Sprintf("The call to %s timed out after %v.", call.Exposed, timeout), errors.Join(context.DeadlineExceeded, err))
	}
	rpcErr, rejected := wireErrors(err)
	if rpcErr != nil && rpcErr.Code != jsonrpc.CodeInvalidRequest {
		return nil, newError(KindServerError, call.Server, call.Tool,
			"The server of "+call.Exposed+" answered with an error: "+rpcErr.Message, err)
	}
	if c.lost(ctx, cn, sess, err) {
		return nil, newError(KindUnavailable, call.Server, call.Tool,
			"The server of "+call.Exposed+" became unavailable during the call.", err)
	}
	switch {
	case rpcErr != nil:
		return nil, newError(KindServerError, call.Server, call.Tool,
			"The server of "+call.Exposed+" answered with an error: "+rpcErr.Message, err)
	case rejected:
		return nil, newError(KindUnavailable, call.Server, call.Tool,
			"The request to the server of "+call.Exposed+" failed; it may succeed if tried again.", err)
	}
	return nil, newError(KindServerError, call.Server, call.Tool,
		"The server of "+call.Exposed+" sent an answer that could not be read.", err)
}

// codeRejected is the code of the SDK's jsonrpc2.ErrRejected (internal to
// the SDK): the transport did not deliver the request, as when an HTTP
// request fails, without the session being over.
const codeRejected = -32005

// wireErrors finds the *jsonrpc.Errors in err's tree. rpcErr is the first
// that is not the transport's rejection: a JSON-RPC error from the server,
// except that the SDK's reader also fails with one (CodeInvalidRequest) on
// a line of stdout that is JSON but not a message. rejected reports a
// rejection.
func wireErrors(err error) (rpcErr *jsonrpc.Error, rejected bool) {
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if w, ok := err.(*jsonrpc.Error); ok {
			if w.Code == codeRejected {
				rejected = true
			} else if rpcErr == nil {
				rpcErr = w
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return rpcErr, rejected
}

// lost reports whether err, a failed request's error, means that the
// session is gone, and if so makes sure that it is dropped. The SDK ends a
// session itself when its transport fails (a child that died, garbage on
// stdout), but the failed request may return before the end is visible; and
// it keeps an HTTP session whose requests fail to be sent. A ping settles
// it.
func (c *core) lost(ctx context.Context, cn *conn, sess *mcp.ClientSession, err error) bool {
	if !cn.live(sess) {
		return true
	}
	gone := errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if !gone {
		pctx, cancel := c.bound(ctx)
		defer cancel()
		pctx, cancel2 := context.WithTimeout(pctx, probeTimeout)
		defer cancel2()
		gone = sess.Ping(pctx, nil) != nil
	}
	// An HTTP request can fail with EOF while the SDK keeps the session,
	// so a session found gone is dropped here in any case; dropping one
	// that is already ending is harmless.
	if gone && ctx.Err() == nil && c.ctx.Err() == nil {
		cn.drop(sess, err)
	}
	return gone
}

// objectArgs turns the model's arguments into a JSON object. A map is
// copied when copyMap is set, so that callbacks leave the caller's alone.
func objectArgs(args any, copyMap bool) (map[string]any, error) {
	var data []byte
	switch a := args.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		if a == nil {
			return map[string]any{}, nil
		}
		if copyMap {
			return maps.Clone(a), nil
		}
		return a, nil
	case json.RawMessage:
		data = a
	case []byte:
		data = a
	case string:
		data = []byte(a)
	default:
		var err error
		if data, err = json.Marshal(a); err != nil {
			return nil, fmt.Errorf("arguments are not JSON: %v", err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		if len(strings.TrimSpace(string(data))) == 0 {
			return map[string]any{}, nil
		}
		return nil, errors.New("the arguments must be a JSON object")
	}
	return m, nil
}

func halted(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func haltedError(call *Call) *Error {
	return newError(KindHalted, call.Server, call.Tool,
		"The call to "+call.Exposed+" was not made: the run was halted by an approver.", nil)
}

// stage is which callback a call's pipeline goroutine is running.
type stage struct{ who atomic.Pointer[string] }

// callback returns the callback running, or "".
func (s *stage) callback() string {
	if p := s.who.Load(); p != nil {
		return *p
	}
	return ""
}

// runCallback runs a user callback; a panic becomes an error. With st, it
// first marks the callback as running, then starts it only if ctx has not
// ended: a caller that finds ctx ended and no callback running can rely on
// none starting.
func runCallback[T any](ctx context.Context, st *stage, who string, f func() T) (v T, err error) {
	if st != nil {
		st.who.Store(&who)
		defer st.who.Store(nil)
		if err := ctx.Err(); err != nil {
			return v, err
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f(), nil
}

func callbackError(ctx context.Context, t *Tool, who string, err error) *Error {
	if ctx.Err() != nil {
		e := contextError(ctx, t.Server, t.Name, err)
		e.Message = "The call to " + t.Exposed + " ran out of time waiting for " + who + "."
		return e
	}
	return newError(KindInternal, t.Server, t.Name, "The call to "+t.Exposed+" failed in "+who+".", err)
}

func hookError(call *Call, hook string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	msg := "The call to " + call.Exposed + " was refused"
	if hook != "" {
		msg += " by " + hook
	}
	return newError(KindDenied, call.Server, call.Tool, msg+": "+err.Error(), err)
}

func contextError(ctx context.Context, server, tool string, err error) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return newError(KindTimeout, server, tool, "The call ran out of time.", errors.Join(context.DeadlineExceeded, err))
	}
	if ctx.Err() != nil {
		return newError(KindCanceled, server, tool, "The call was canceled.", errors.Join(context.Canceled, err))
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return newError(KindUnavailable, server, tool, "The tools are unavailable: "+err.Error(), err)
}
