// The run_code tool: its definition, and its answer as a local tool.
package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Definition is run_code's definition. Its description declares, in
// TypeScript, the tools of ts the code may call. Past o's search
// threshold, it declares conduit.search_tools instead. That returns the
// declarations of the tools it finds. o may be nil.
func Definition(ts *conduit.ToolSet, o *Options) *conduit.Tool {
	var tools []*conduit.Tool
	if ts != nil {
		for t := range ts.All() {
			tools = append(tools, t)
		}
	}
	decl := Declarations(tools)
	intro := "Call the tools below with await"
	if o.searches(len(tools)) {
		intro = fmt.Sprintf("There are %d tools: find them with conduit.search_tools, then call them with await", len(tools))
		decl = searchDeclaration
	}
	desc := "Run JavaScript (TypeScript annotations allowed): the body of an async function. " +
		intro + "; a refused or failed call throws an Error saying why. " +
		"Return a JSON value; console.log lines are answered too. " +
		"There is no clock, randomness, network, file system or timer: only these tools.\n\n" + decl
	return &conduit.Tool{
		Tool: &mcp.Tool{
			Name:        ToolName,
			Description: desc,
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"code": map[string]any{"type": "string", "description": "The body of an async function that calls the tools and returns the answer."},
				},
				"required":             []any{"code"},
				"additionalProperties": false,
			},
		},
		Exposed: ToolName,
		Server:  ToolServer,
	}
}

type reachedKey struct{}

type resumeKey struct{}

// Resume is how a run of run_code deferred before goes on. Its calls are
// replayed from their records. The call a person decided is sent with
// the decision. See Run.Replay, Run.Approval and Run.AllowTool.
type Resume struct {
	Replay    []Record
	Approval  *conduit.Approval
	AllowTool string
}

// WithResume returns a context under which a LocalTool's next run goes on
// as r says.
func WithResume(ctx context.Context, r *Resume) context.Context {
	return context.WithValue(ctx, resumeKey{}, r)
}

// WithReached returns a context under which each run of a LocalTool
// reports to f. It reports the servers whose output reached the code.
// That is the taint its answer carries to the model.
func WithReached(ctx context.Context, f func(servers []string)) context.Context {
	return context.WithValue(ctx, reachedKey{}, f)
}

// LocalTool is run_code for src and ts, to offer beside or instead of
// ts's tools. Each call runs its code with Execute. It runs under the
// call's principal, assigns and taint. It answers what the code returned
// and logged. A nil ts is the source's listing for the call's principal
// and taint. That listing is made when the call runs. A nested call may
// wait for a decision. It then fails the run_code call with a
// *DeferredError that matches conduit.ErrDeferred.
func LocalTool(src conduit.Source, ts *conduit.ToolSet, o *Options) *conduit.LocalTool {
	return &conduit.LocalTool{Tool: Definition(ts, o), Answer: func(ctx context.Context, c *conduit.Call) (*mcp.CallToolResult, error) {
		code, _ := c.Args["code"].(string)
		tools := ts
		if tools == nil {
			var err error
			if tools, err = src.ListToolsFor(ctx, &conduit.ListOptions{Principal: c.Principal, Taint: c.Taint}); err != nil {
				return nil, err
			}
		}
		run := &Run{Source: src, ToolSet: tools, Options: o,
			Call: conduit.CallOptions{ID: c.ID, Principal: c.Principal, Assigns: c.Assigns, Taint: c.Taint}}
		if r, ok := ctx.Value(resumeKey{}).(*Resume); ok && r != nil {
			run.Replay, run.Approval, run.AllowTool = r.Replay, r.Approval, r.AllowTool
		}
		res, err := Execute(ctx, code, run)
		if f, ok := ctx.Value(reachedKey{}).(func([]string)); ok && res != nil {
			f(res.Taint)
		}
		return Answer(res, err)
	}}
}

// Answer is run_code's result for a run. It holds what the code returned
// and logged, as JSON text. A failed run is an isError result with the
// error and the logs. A deferred run is not answered. Its *DeferredError
// is returned, which matches conduit.ErrDeferred.
func Answer(res *Result, err error) (*mcp.CallToolResult, error) {
	var de *DeferredError
	if errors.As(err, &de) {
		return nil, de
	}
	if err != nil && res == nil {
		return nil, err
	}
	if err != nil {
		var b strings.Builder
		b.WriteString("Error: " + err.Error())
		if len(res.Logs) > 0 {
			b.WriteString("\nlogs:\n" + strings.Join(res.Logs, "\n"))
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		return nil, merr
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
}
