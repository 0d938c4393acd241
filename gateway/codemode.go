package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/codemode"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	ctx = context.WithValue(ctx, nestedKey{}, true)
	return c.g.callTool(context.WithValue(ctx, sessionKey{}, c.s), name, args, o)
}

// nestedKey marks the context of a call made by run_code's code.
type nestedKey struct{}

// nested reports whether ctx is that of a call made by run_code's code.
func nested(ctx context.Context) bool {
	v, _ := ctx.Value(nestedKey{}).(bool)
	return v
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
	ctx = context.WithValue(ctx, runAllowedKey{}, &runAllowed{tools: map[string]bool{}})
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
// calls the tools of ts. For a client of 2026-07-28 it is a round: a
// nested call that asks for approval is answered as an input-required
// result (askCode). The retry runs the code again, replaying what it did.
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
	call := func(ctx context.Context, opts *conduit.CallOptions) (mcp.Result, error) {
		res, err := s.runCode(context.WithValue(ctx, sessionKey{}, s), ts, def, args, opts, conv)
		if de := (*codemode.DeferredError)(nil); errors.As(err, &de) && runFrom(ctx) != nil {
			// A round answers it with the question (callRun.answer).
			return nil, de
		}
		if err != nil {
			return answer(err)
		}
		return s.g.budget(ctx, codemode.ToolName, def, res), nil
	}
	var rq *roundRequest
	if s.rounds(req.Session) {
		d, err := argsDigest(req.Params.Arguments)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the arguments are not JSON: " + err.Error()}
		}
		rq = s.roundRequest(toolMethod, req.Session, codemode.ToolName, d, req.Params.InputResponses, req.Params.RequestState, req.Params.GetProgressToken())
	}
	res, err := s.serve(ctx, rq, opts, call)
	if err != nil {
		return nil, err
	}
	return res.(*mcp.CallToolResult), nil
}

// forRunInput is the field of a code approval's answer that allows the
// tool for the rest of the run.
const forRunInput = "for_run"

// forRunSchema is the schema of a code approval's answer. Its one
// choice allows tool for the rest of the run.
func forRunSchema(tool string) json.RawMessage {
	schema, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{
		forRunInput: map[string]any{"type": "boolean", "default": false,
			"title":       "Allow " + tool + " for the rest of this run",
			"description": "Every later call of " + tool + " by this code is allowed without asking. Other tools still ask."},
	}})
	return schema
}

// runAllowed are the tools a person allowed for the rest of one run, on
// a session (protocol 2025-11-25), where the run waits for each answer.
type runAllowed struct {
	asking sync.Mutex // held while the person is asked
	mu     sync.Mutex
	tools  map[string]bool
}

type runAllowedKey struct{}

// allowedFor returns the run's allowed tools, for a call made by
// run_code's code on a session. It is nil otherwise.
func allowedFor(ctx context.Context) *runAllowed {
	if !nested(ctx) {
		return nil
	}
	a, _ := ctx.Value(runAllowedKey{}).(*runAllowed)
	return a
}

func (a *runAllowed) has(tool string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tools[tool]
}

func (a *runAllowed) add(tool string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tools[tool] = true
}

// deferNested is the approval of a call made by run_code's code in a
// round. The client is asked in the round's answer, so the call is
// deferred: the run stops, with the calls it made, and askCode asks.
func (cr *callRun) deferNested(req conduit.ApprovalRequest) (conduit.Approval, bool) {
	if c := cr.caps(); c == nil || c.Elicitation == nil {
		return conduit.Approval{}, false
	}
	reason := approvalMessage(req.Call)
	cr.mu.Lock()
	if cr.codeAsks == nil {
		cr.codeAsks = map[string]bool{}
	}
	cr.codeAsks[reason] = true
	cr.mu.Unlock()
	return conduit.Defer(reason), true
}

// askedByCode reports whether de waits for a question deferNested made:
// only those are the client's to answer. Any other deferral (the
// operator's Approver, a server's request for input) is not.
func (cr *callRun) askedByCode(de *codemode.DeferredError) bool {
	var d *conduit.Deferral
	if !errors.As(de.Err, &d) || d.Input != nil {
		return false
	}
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.codeAsks[d.Reason]
}

// askCode answers rq with the approval of the call de waits for. Its
// state holds the calls the code made, to be replayed by the retry.
func (g *Gateway) askCode(rq *roundRequest, approved bool, de *codemode.DeferredError) (mcp.Result, error) {
	st := &state{ID: newStateID(), Method: rq.b.method, Name: rq.b.name, Args: rq.b.args, Principal: rq.b.principal,
		Kind: kindCode, Approved: approved, Replay: de.Records, Tool: de.Call.Exposed}
	var shown map[string]any
	_ = json.Unmarshal(de.Call.Args, &shown)
	msg := approvalMessage(&conduit.Call{Method: "tools/call", Exposed: de.Call.Exposed, Server: de.Call.Server, Args: shown})
	msg += fmt.Sprintf(" The code of %s makes it. Calls the code made so far, answered from their records and not made again: %d.", codemode.ToolName, de.Made())
	res, err := g.inputRequired(rq, st, mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{Message: msg, RequestedSchema: forRunSchema(de.Call.Exposed)}})
	if cr, ok := res.(*mcp.CallToolResult); ok && len(cr.RequestState) > maxStateBytes {
		// The retry's state would be refused: say so now, with nothing sent.
		return rq.m.refusal(fmt.Sprintf("%s needs an approval, but the results its code read so far are too large to carry in a requestState (%d bytes, at most %d): nothing more was sent. Read less per run, or have the call allowed by the policy.", de.Call.Exposed, len(cr.RequestState), maxStateBytes))
	}
	return res, err
}

// codeResume is how a retry of a code approval goes on: its state's
// calls replayed, and the client's answer as the decision. No answer
// leaves the call to ask again.
func codeResume(st *state, responses mcp.InputResponseMap) *codemode.Resume {
	r := &codemode.Resume{Replay: st.Replay}
	a, ok := responses[approvalInput].(*mcp.ElicitResult)
	if !ok {
		return r
	}
	decision := conduit.Reject("the user canceled the approval request")
	switch a.Action {
	case "accept":
		decision = conduit.Approve()
		if v, _ := a.Content[forRunInput].(bool); v {
			r.AllowTool = st.Tool
		}
	case "decline":
		decision = conduit.Reject("the user declined it")
	}
	r.Approval = &decision
	return r
}
