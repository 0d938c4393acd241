package gateway

import (
	"context"
	"slices"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/codemode"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Code mode served: run_code offered to MCP hosts, each nested call governed.

// CodeModeOptions say whether the gateway offers run_code (see package
// codemode). run_code takes the body of an async function that calls the
// tools. Each call is governed for the session's principal and taint, as
// a client's own call is. The zero value is off.
type CodeModeOptions struct {
	// On offers run_code, governed as conduit/run_code. The policy must
	// allow it.
	On bool
	// Direct offers the tools themselves beside run_code. By default
	// run_code is offered alone, so that a host's model reads one small
	// listing.
	Direct bool
	// Options bound each run. Nil is codemode's defaults.
	Options *codemode.Options
}

// codeSource is the gateway's source as the code sees it. Each nested
// call is counted against the principal's limits, as a client's call is.
type codeSource struct {
	g *Gateway
	s *session
}

func (c codeSource) ListTools(ctx context.Context) (*conduit.ToolSet, error) {
	return c.g.src.ListToolsFor(ctx, &conduit.ListOptions{Principal: c.s.principal})
}

func (c codeSource) ListToolsFor(ctx context.Context, o *conduit.ListOptions) (*conduit.ToolSet, error) {
	return c.g.src.ListToolsFor(ctx, o)
}

func (c codeSource) CallTool(ctx context.Context, name string, args any, o *conduit.CallOptions) (*mcp.CallToolResult, error) {
	return c.g.callTool(context.WithValue(ctx, sessionKey{}, c.s), name, args, o)
}

// localCaller is a source that governs the program's own tools.
type localCaller interface {
	CallLocal(ctx context.Context, t *conduit.LocalTool, args any, opts *conduit.CallOptions) (*mcp.CallToolResult, error)
}

// codeModeSet is what a session is offered over ts in code mode.
func (g *Gateway) codeModeSet(ts *conduit.ToolSet) *conduit.ToolSet {
	def := codemode.Definition(ts, g.codeMode.Options)
	if g.codeMode.Direct {
		return ts.With(def)
	}
	return conduit.ToolSetOf(def)
}

// runCode answers a call of run_code, def, offered over ts. The call goes
// through the hub's governance as conduit/run_code. Each nested call goes
// through its pipeline. The servers the code read are recorded in the
// taint.
func (s *session) runCode(ctx context.Context, ts *conduit.ToolSet, def *conduit.Tool, args any, opts *conduit.CallOptions, conv string) (*mcp.CallToolResult, error) {
	lc, ok := s.g.src.(localCaller)
	if !ok {
		return nil, &conduit.Error{Kind: conduit.ErrInternal, Message: "code mode needs a governed source"}
	}
	lt := codemode.LocalTool(codeSource{s.g, s}, ts, s.g.codeMode.Options)
	lt.Tool = def
	var reached []string
	ctx = codemode.WithReached(ctx, func(servers []string) { reached = slices.Clone(servers) })
	res, err := lc.CallLocal(ctx, lt, args, opts)
	for _, server := range reached {
		if terr := s.taintFrom(ctx, opts, conv, server, nil); terr != nil {
			return nil, terr
		}
	}
	return res, err
}

// callCode answers a client's tools/call of run_code (def), whose code
// calls the tools of ts.
func (s *session) callCode(ctx context.Context, ts *conduit.ToolSet, def *conduit.Tool, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	opts, conv, err := s.callOptions(ctx, ts, req.Params.Meta)
	if err != nil {
		return answer(err)
	}
	opts.Meta = clientMeta(req.Session, req.Params.Meta, forwardMeta(req.Params.Meta, opts.Meta))
	var args any
	if len(req.Params.Arguments) > 0 {
		args = req.Params.Arguments
	}
	res, err := s.runCode(context.WithValue(ctx, sessionKey{}, s), ts, def, args, opts, conv)
	if err != nil {
		return answer(err)
	}
	return s.g.budget(ctx, codemode.ToolName, def, res), nil
}
