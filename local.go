package conduit

import (
	"context"
	"errors"
	"fmt"

	"github.com/conduitmcp/conduit/internal/bounded"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LocalTool is a tool that the program answers itself, where a server
// would. The adapters' search_tools is one. [Hub.CallLocal] runs its calls
// through the same governance as a server's tools. That is policy,
// approval, hooks, argument validation, the call's time limit and Trace.
// Answer takes the place of the request. Nothing is sent to any server.
type LocalTool struct {
	// Tool is the definition. Exposed is the name a model calls it by.
	// Server and Name are what the policy's patterns, approvers and hooks
	// see. The pattern server/name matches it. Server need not be one of
	// the hub's servers. A policy that names another needs it in
	// Options.LocalServers.
	Tool *Tool
	// Answer answers a call that the governance let through. c carries
	// its arguments as the before-hooks left them. Its result is answered
	// as a server's would be. A failure the model should read is an
	// isError result. An error that is not an *Error is answered as an
	// internal error, and so is a panic. It should honour ctx. When it
	// does not, the call is still answered when ctx ends. Its late answer
	// is dropped.
	Answer func(ctx context.Context, c *Call) (*mcp.CallToolResult, error)
}

// CallLocal runs one call of a tool the program answers itself through the
// governed pipeline, as CallTool runs a server's. args are the model's
// arguments, as CallTool takes them. opts are the call's options. ToolSet
// is not used, since the call names t. The error, if any, is an *Error.
func (g *governed) CallLocal(ctx context.Context, t *LocalTool, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	return g.c.callLocal(ctx, t, args, opts)
}

// OffersLocal reports whether a listing for opts' principal and taint
// would offer t, a tool the program answers itself. It is false when the
// policy denies it outright. ListToolsFor leaves out such tools of the
// servers likewise. opts may be nil.
func (g *governed) OffersLocal(t *Tool, opts *ListOptions) bool { return g.c.offersLocal(t, opts) }

var errNoLocalTool = errors.New("the local tool has no definition or no answer")

func (c *core) callLocal(ctx context.Context, t *LocalTool, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	if t == nil || t.Tool == nil || t.Answer == nil {
		return nil, &Error{Kind: ErrInternal, Message: "The tool could not be called.", Err: errNoLocalTool}
	}
	o := callOptions(opts)
	r := newRequest(methodCallTool, o, methodCallTool, t.Tool.Exposed)
	r.halt, r.args, r.local = o.Halt, args, t
	return c.run(ctx, r)
}

func (c *core) offersLocal(t *Tool, opts *ListOptions) bool {
	if t == nil {
		return false
	}
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	return !c.policyDenies(&Call{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Def: t, Principal: o.Principal, Taint: o.Taint, Method: methodCallTool})
}

// answer runs the local tool's Answer in the place of the request. It is
// the program's code, which may ignore ctx. So it runs on a goroutine of
// its own, and the call is answered when ctx ends.
func (t *LocalTool) answer(ctx context.Context, call *Call) (*mcp.CallToolResult, error) {
	return bounded.Run(ctx, func(ctx context.Context) (*mcp.CallToolResult, error) { return t.run(ctx, call) },
		func() error { return endedError(ctx, call.Def, 0, nil) })
}

func (t *LocalTool) run(ctx context.Context, call *Call) (res *mcp.CallToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, newError(ErrInternal, call.Server, call.Tool, modeltext.CallFailed(call.Exposed), fmt.Errorf("panic: %v", p))
		}
	}()
	res, err = t.Answer(ctx, call)
	var ce *Error
	if err != nil && !errors.As(err, &ce) {
		err = newError(ErrInternal, call.Server, call.Tool, modeltext.CallFailed(call.Exposed), err)
	}
	if err == nil && res == nil {
		err = newError(ErrInternal, call.Server, call.Tool, modeltext.NoResult(call.Exposed), nil)
	}
	return res, err
}
