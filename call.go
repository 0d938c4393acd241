package conduit

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Call is one call on its way through the pipeline, as conditions,
// approvers and hooks see it.
type Call struct {
	// ID is the call's id from the model's response, when it came from
	// one ([CallOptions.ID]).
	ID      string
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
	// Method is the MCP method of the call: "tools/call", "prompts/get"
	// or "resources/read". For a prompt, Tool is the prompt's name and Def
	// is nil; for a resource, Tool is its URI (or, in a listing, its URI
	// template) and Def is nil.
	Method string
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
	// ID is the call's id in the model's response, passed on to approvers,
	// hooks and Trace as Call.ID.
	ID string
	// Principal is who the call is made for, seen by policy conditions,
	// approvers and hooks.
	Principal string
	// Assigns carries values of the caller's for approvers and hooks.
	Assigns map[string]any
	// Taint lists the servers whose output is already in the model's
	// context; Tainted conditions react to it.
	Taint []string
	// CallTimeout bounds the whole call, approval and hooks included, even
	// when an approver or hook ignores its context: past it the call is
	// answered with KindTimeout. Zero means the hub's Options.CallTimeout
	// (default DefaultCallTimeout); negative, no bound beyond ctx.
	CallTimeout time.Duration
	// Timeout bounds the request to the server; on expiry the call is
	// answered with KindTimeout and the SDK sends the server
	// notifications/cancelled. Zero means the hub's RequestTimeout.
	Timeout time.Duration
	// Meta is sent as the request's _meta (of prompts/get, resources/read
	// and completion/complete too). Keys a Trace.RequestMeta sets replace
	// its own: a trace context here is the parent of the call's, whose
	// context the server then gets.
	Meta mcp.Meta
	// Progress, when set, receives the server's progress notifications
	// with the call they belong to, in order, on a goroutine apart from
	// the call's. While it is slower than the server, at most 16 wait and
	// the oldest are dropped, so a flooding server costs bounded memory.
	// Notifications that arrive after the result are dropped; those that
	// arrived before it are delivered before the call returns, unless the
	// callback takes more than 2s to catch up (then just after).
	Progress func(*Call, Progress)
	// Halt, when closed, stops the call before it is sent: it is answered
	// with a KindHalted error. The adapters close it when an approver halts
	// the batch.
	Halt <-chan struct{}
	// Handlers answer what the server sends during this call: elicitation,
	// sampling and roots requests, and log messages. They take effect on
	// a hub or client whose Options.Handlers are set; see [Handlers].
	Handlers *Handlers
}

// call is the governed pipeline of one call: resolve, object arguments,
// policy, approval, before-hooks, validation, the request, after-hooks.
// Results are returned as the server sent them (after-hooks aside):
// [ShapeForModel] is for callers that hand them to a model themselves.
//
// The callbacks (approver, hooks) are the user's code and may ignore ctx,
// yet the call must be answered when ctx ends; so the callbacks before the
// request run together on one goroutine, and the after-hooks on another,
// while the caller waits for them or for ctx (see guard). The request
// itself stays on the caller's goroutine: the SDK's deep call path would
// grow a fresh goroutine's stack on every call.
func (c *core) call(ctx context.Context, name string, args any, opts *CallOptions) (res *mcp.CallToolResult, err error) {
	return c.pipeline(ctx, name, args, opts, nil)
}

// pipeline is call; a local tool (CallLocal) takes the place of the
// resolution and of the request.
func (c *core) pipeline(ctx context.Context, name string, args any, opts *CallOptions, local *LocalTool) (res *mcp.CallToolResult, err error) {
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	call := &Call{ID: o.ID, Exposed: name, Principal: o.Principal, Assigns: o.Assigns, Taint: o.Taint, Method: methodCallTool}
	traced := call // what Trace.CallDone is given
	var req *RequestInfo
	if t := c.Trace; t != nil {
		if t.CallStart != nil {
			if sctx := t.CallStart(CallStartInfo{Context: ctx, Call: call, Meta: o.Meta, Local: local != nil}); sctx != nil {
				ctx = sctx
			}
		}
		if t.CallDone != nil {
			start, cctx := time.Now(), ctx
			req = new(RequestInfo)
			defer func() {
				t.CallDone(CallDoneInfo{Call: traced, Result: res, Err: err, Elapsed: time.Since(start), Context: cctx, Request: req.ifSent(), Local: local != nil})
			}()
		}
	}
	limit := o.CallTimeout
	if limit == 0 {
		limit = c.CallTimeout
	}
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = withLimit(ctx, limit)
		defer cancel()
	}
	ts := o.ToolSet
	if ts == nil && local == nil {
		if ts, err = c.listToolsAs(ctx, listFor{principal: o.Principal, resolve: true}); err != nil {
			return nil, listingError(ctx, err)
		}
	}
	if err := c.checkArgs(ts, local, name, args); err != nil {
		return nil, err
	}
	tool, argsObj, err := resolveCall(ts, local, name, args)
	if err != nil {
		return nil, err
	}
	if local == nil && c.byID[tool.Server] == nil {
		// A tool set of another hub's.
		return nil, unknownToolError(name)
	}
	call.Server, call.Tool, call.Exposed, call.Def = tool.Server, tool.Name, tool.Exposed, tool
	call.Args = argsObj
	// Arguments no callback changes, which a Trace.CallDone snapshot of
	// the call may share (see guard); nil when before-hooks may change
	// call.Args in place.
	stable := argsObj
	// The caller's map is copied only when a callback could change it.
	if _, isMap := args.(map[string]any); isMap && (len(c.Hooks) > 0 || c.Approver != nil) {
		call.Args = maps.Clone(call.Args)
	} else if c.before {
		stable = nil
	}
	ask, rule, err := c.authorize(ctx, call, o.Halt)
	if err != nil {
		return nil, err
	}
	if ask || c.before {
		if _, err := guard(ctx, c, call, stable, &traced, !ask && c.beforeInline, func(st *stage) (struct{}, error) {
			return struct{}{}, c.beforeHooks(ctx, call, o.Halt, ask, rule, st)
		}); err != nil {
			return nil, err
		}
		if c.before {
			// Hooks may have changed the arguments.
			if reason := c.limits.checkArgs(call.Args); reason != nil {
				return nil, argsLimitError(tool, reason)
			}
		}
	}
	if c.Validate {
		if verr := tool.validate(call.Args); verr != nil {
			if t := c.Trace; t != nil && t.ValidationFailed != nil {
				t.ValidationFailed(ValidationFailedInfo{Context: ctx, Call: call, Err: verr})
			}
			return nil, InvalidArgumentsError(tool, verr)
		}
	}
	if halted(o.Halt) {
		return nil, HaltedError(tool)
	}
	if local != nil {
		res, err = local.answer(ctx, call)
	} else {
		res, err = c.send(ctx, call, &o, req)
		if req != nil {
			req.Err = err
		}
	}
	if err != nil {
		return nil, err
	}
	if reason := c.limits.checkResult(res); reason != nil {
		return nil, resultLimitError(tool, reason)
	}
	if c.after {
		cur := res
		if res, err = guard(ctx, c, call, call.Args, &traced, c.afterInline, func(st *stage) (*mcp.CallToolResult, error) {
			return c.afterHooks(ctx, call, cur, st)
		}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// checkArgs applies the argument limits to args as the caller gave them,
// before they are decoded, so that a hostile call costs no more than its
// measuring.
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
		return unknownToolError(name)
	}
	return argsLimitError(t, reason)
}

// authorize applies the policy. ask reports that the approver must be
// asked; it is true only when an approver is configured.
func (c *core) authorize(ctx context.Context, call *Call, halt <-chan struct{}) (ask bool, rule Rule, err error) {
	if c.Policy == nil {
		return false, Rule{}, nil
	}
	d, rule, matched, err := decide(c.Policy, call)
	if err != nil {
		return false, rule, newError(KindInternal, call.Server, call.Tool, "The policy could not decide on "+call.Exposed+".", err)
	}
	if t := c.Trace; t != nil && t.Decided != nil {
		t.Decided(DecidedInfo{Call: call, Decision: d, Rule: rule, Matched: matched, Context: ctx})
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
		return false, rule, HaltedError(call.Def)
	}
	if c.Approver == nil {
		return false, rule, newError(KindApprovalRequired, call.Server, call.Tool,
			"Calling "+call.Exposed+" needs approval, and no approver is configured.", nil)
	}
	return true, rule, nil
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

// limitError is the cause of a context ended by a call's own time limit,
// which the call's timeout error names.
type limitError struct{ limit time.Duration }

func (e *limitError) Error() string {
	return fmt.Sprintf("the call's time limit of %v passed", e.limit)
}

// Is makes the limit a deadline, for errors.Is(err, context.DeadlineExceeded).
func (e *limitError) Is(target error) bool { return target == context.DeadlineExceeded }

// withLimit is ctx bounded by limit, whose expiry is told from the end of
// ctx itself by its cause.
func withLimit(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, limit, &limitError{limit})
}
