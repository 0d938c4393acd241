package conduit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The callback runtime. Approvers and hooks are the user's code. They may
// block, ignore ctx or panic. The call must still be answered on time.

// guard runs f, a stretch of r's pipeline that calls callbacks. The
// request is answered when ctx ends, even if a callback ignores it. While
// conduit's own code runs in f, an ended ctx is waited out. f then stops
// before the next callback. When a callback overruns, r.traced is pointed
// at a copy of r.call. The callback still holds the call. Inline
// callbacks are trusted to return. f runs on the caller's goroutine, and
// still starts no callback once ctx has ended.
//
// The copy is taken as f starts, by value. It reaches the heap only when a
// callback overruns. Its Args are args: arguments no callback of f
// changes, which the copy may share. args may be nil, when f's
// before-hooks may change call.Args in place. Only then is call.Args
// cloned.
//
// The stage and the channel f's goroutine reports on are r's. The
// stretches of one request share them, and run one after the other.
func guard(ctx context.Context, c *core, r *request, args map[string]any, inline bool, f func(*stage) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	if ctx.Done() == nil {
		return f(nil)
	}
	st := &r.stage
	if inline {
		return f(st)
	}
	call := r.call
	tracing := r.info != nil
	var snap Call
	if tracing {
		snap = *call
		if args == nil {
			args = maps.Clone(call.Args)
		}
		snap.Args = args
	}
	if r.guarded == nil {
		r.guarded = make(chan struct{}, 1)
	}
	go r.runGuarded(f)
	select {
	case <-r.guarded:
		return r.gres, r.gerr
	case <-ctx.Done():
		if who := st.callback(); who != "" {
			if tracing {
				s := snap
				r.traced = &s
			}
			return nil, callbackError(ctx, call, who, ctx.Err())
		}
		<-r.guarded
		return r.gres, r.gerr
	}
}

// runGuarded runs f for guard, on a goroutine of its own.
func (r *request) runGuarded(f func(*stage) (*mcp.CallToolResult, error)) {
	r.gres, r.gerr = f(&r.stage)
	r.guarded <- struct{}{}
}

// beforeHooks runs the before-hooks of a tool call.
func (c *core) beforeHooks(ctx context.Context, call *Call, st *stage) error {
	tool := call.Def
	for i, h := range c.Hooks {
		if h.Before == nil {
			continue
		}
		who := &c.hookNames[i]
		herr, err := runCallback(ctx, st, who, func() error { return h.Before(ctx, call) })
		if err != nil {
			return callbackError(ctx, call, *who, err)
		}
		// Hooks may change the arguments only: the call goes where the
		// policy saw it going.
		call.Server, call.Tool, call.Exposed, call.Def = tool.Server, tool.Name, tool.Exposed, tool
		if herr != nil {
			if t := c.Trace; t != nil && t.HookDenied != nil {
				t.HookDenied(StepInfo{Context: ctx, Call: call, Hook: h.Name, Err: herr})
			}
			return hookError(call, h.Name, herr)
		}
		if call.Args == nil {
			call.Args = map[string]any{}
		}
	}
	return nil
}

// afterHooks runs the after-hooks over the server's result.
func (c *core) afterHooks(ctx context.Context, call *Call, res *mcp.CallToolResult, st *stage) (*mcp.CallToolResult, error) {
	for i, h := range c.Hooks {
		if h.After == nil {
			continue
		}
		who := &c.hookNames[i]
		type out struct {
			res *mcp.CallToolResult
			err error
		}
		cur := res
		r, err := runCallback(ctx, st, who, func() out { r, err := h.After(ctx, call, cur); return out{r, err} })
		if err != nil {
			return nil, callbackError(ctx, call, *who, err)
		}
		if r.err != nil {
			if t := c.Trace; t != nil && t.HookDenied != nil {
				t.HookDenied(StepInfo{Context: ctx, Call: call, Hook: h.Name, After: true, Err: r.err})
			}
			return nil, hookError(call, h.Name, r.err)
		}
		if r.res != nil {
			res = r.res
		}
	}
	return res, nil
}

// hookName is how messages name h. It is computed once per hub, since a
// running callback is marked by a pointer to its name (see stage).
func hookName(h Hook) string {
	if h.Name == "" {
		return "a hook"
	}
	return "hook " + h.Name
}

// approve asks the approver about a request the policy sent to it. It is
// the one approver runner of every method. Trace.Approved is told of it.
// A request's approval may have been decided beforehand
// (CallOptions.Approval). That is a deferred call, decided later. It is
// not asked about again: that decision is its approval.
func (c *core) approve(ctx context.Context, r *request, rule Rule, st *stage) error {
	call := r.call
	var asked time.Time
	t := c.Trace
	if t != nil && t.Approved != nil {
		asked = time.Now()
	}
	var a Approval
	if pre := r.o.Approval; pre != nil {
		a = *pre
	} else {
		var err error
		a, err = runCallback(ctx, st, &approverName, func() Approval { return c.Approver(ctx, ApprovalRequest{Call: call, Rule: rule}) })
		if err != nil {
			return callbackError(ctx, call, approverName, err)
		}
	}
	if t != nil && t.Approved != nil {
		t.Approved(StepInfo{Context: ctx, Call: call, Rule: rule, Approval: a, Elapsed: time.Since(asked)})
	}
	return approvalOutcome(call, rule, a)
}

// approvalOutcome is what an approver's answer makes of the request. It is
// nil to go on, the denial the model is told of, or the deferral that
// leaves it pending. The outcome of an approval is decided here. It is the
// seam for deferred approvals.
func approvalOutcome(call *Call, rule Rule, a Approval) error {
	switch {
	case a.Allow:
		return nil
	case a.Defer:
		return deferredError(call, &Deferral{Rule: rule, Reason: a.Reason, Args: maps.Clone(call.Args)})
	}
	return deniedError(call, a.Reason, a.Halt)
}

// approverName is how messages name the approver.
var approverName = "the approver"

// stage is which callback a call's pipeline goroutine is running.
type stage struct{ who atomic.Pointer[string] }

// callback returns the callback running, or "".
func (s *stage) callback() string {
	if p := s.who.Load(); p != nil {
		return *p
	}
	return ""
}

// runCallback runs a user callback. A panic becomes an error. With st, it
// first marks the callback as running. Then it starts it only if ctx has
// not ended. So a caller that finds ctx ended and no callback running can
// rely on none starting.
func runCallback[T any](ctx context.Context, st *stage, who *string, f func() T) (v T, err error) {
	if st != nil {
		st.who.Store(who)
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

// callbackError is the error of a request whose callback who failed with
// err, or overran ctx.
func callbackError(ctx context.Context, call *Call, who string, err error) *Error {
	if ctx.Err() != nil {
		e := contextError(ctx, call, err)
		e.Message = strings.TrimSuffix(e.Message, ".") + ", waiting for " + who + "."
		return e
	}
	return newError(ErrInternal, call.Server, call.Tool, subject(call)+" failed in "+who+".", err)
}

// contextError is the error of a request that ctx's end stopped.
func contextError(ctx context.Context, call *Call, cause error) *Error {
	return named(endedError(ctx, call.Def, 0, cause), call)
}

// named puts call's server, name and exposed name into an error that
// endedError made without a tool.
func named(e *Error, call *Call) *Error {
	if e.Server == "" {
		e.Server, e.Tool = call.Server, call.Tool
		if rest, ok := strings.CutPrefix(e.Message, "The call "); ok {
			e.Message = "The request for " + call.Exposed + " " + rest
		}
	}
	return e
}

// subject is how a message names the request. It is "The call to x" for a
// tool call, and "The request for x" for the others.
func subject(call *Call) string {
	if call.Method == methodCallTool || call.Method == "" {
		return "The call to " + call.Exposed
	}
	return "The request for " + call.Exposed
}

// hookError is the error of a call that hook refused with err.
func hookError(call *Call, hook string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	msg := "The call to " + call.Exposed + " was refused"
	if hook != "" {
		msg += " by " + hook
	}
	return newError(ErrDenied, call.Server, call.Tool, msg+": "+err.Error(), err)
}
