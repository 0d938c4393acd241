package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/codemode"
	"github.com/conduitmcp/conduit/internal/bounded"
	"github.com/conduitmcp/conduit/internal/errtext"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ExecOptions are the options of ExecuteToolCalls. The zero value is fine.
// Still, pass the listing's ToolSet and NullPaths, as a [Conversation] does.
type ExecOptions struct {
	// ToolSet is the tool set the model was offered (Listing.ToolSet).
	// Calls resolve against it. Nil lists the source's tools now.
	ToolSet *conduit.ToolSet
	// NullPaths are strict mode's null paths (Listing.NullPaths). Strict
	// mode made the model send these nulls. They are removed before a call.
	NullPaths map[string][]driver.NullPath
	// TurnOptions are every call's options, how answers are written, and
	// the turn's bounds. Each call's ID is its id in the response.
	TurnOptions
	// Halt, when closed, stops the calls not yet sent. They are answered
	// with a ErrHalted error.
	Halt <-chan struct{}
	// CodeMode, when On, answers calls of run_code. A listing with
	// ListingOptions.CodeMode offers that tool. Each nested call is made
	// on the source with these options' principal and taint. Off by default.
	CodeMode CodeModeOptions

	// locals, in a Conversation, are its own tools: conduit's search and
	// the read tool. The Conversation answers them. reader keeps the
	// results cut for its read tool.
	locals []*conduit.LocalTool
	reader *reader
}

// Execution is the outcome of a model's tool calls.
type Execution struct {
	// Results answer every call, in the model's order. Each is keyed by
	// the call's id and has the provider's shape:
	//
	//   - Anthropic: tool_result blocks. Put them first in the next user message.
	//   - OpenAI Chat: tool messages.
	//   - Responses: function_call_output items.
	//   - Gemini: functionResponse parts. Send them as {"role": "user", "parts": Results}.
	//
	// Wire.Answers puts them in the conversation for any provider.
	Results []map[string]any `json:"results"`
	// Halted reports that an approver denied a call and asked to stop the
	// agent loop. Every call is still answered, but the loop should end.
	Halted bool `json:"halted"`
	// Calls are the calls that resolved, in the model's order. Each has
	// its server, tool, id and arguments. The arguments are a copy, with
	// strict mode's nulls removed. Hooks' rewrites are not reflected.
	// Calls answered without being sent are not among them. Those have an
	// unknown name, non-object arguments, or come past
	// ResponseLimits.MaxToolCalls.
	Calls []toolcall.Call `json:"calls"`
	// Errors holds each call's failure, by position in Results. It is nil
	// for a call that completed, even with an isError result. It marshals
	// to JSON as a list of null or {"kind", "message", ...} (see CallErrors).
	Errors CallErrors `json:"errors"`
	// Revealed, in a Conversation with conduit's search, are the tools its
	// search_tools calls revealed in this response. They are exposed
	// names, in the order of the calls that found them. They are offered
	// from the next turn on, after what was offered before.
	Revealed []string `json:"revealed"`
	// Pending are the calls that wait for a decision, in the model's
	// order. The decision is an approver's conduit.Defer or a handler's
	// conduit.DeferInput. Their places in Results are nil. Their Errors
	// match conduit.ErrDeferred. The turn is not complete (see Complete),
	// so its answers must not be sent yet. A Conversation keeps the turn.
	// Its Resume completes the turn when the calls are decided. The
	// answers already written are final. They are cut within the turn's
	// budget, and each pending call holds its place (see BudgetOptions).
	Pending []Pending `json:"pending"`
	// Budgets say, by position in Results, what the result budget did to
	// each answer. Each holds the result's tokens, those kept, its budget,
	// and whether it was cut. When the whole was kept, it holds the read
	// tool's reference to it.
	Budgets []toolcall.Budgeted `json:"budgets"`

	locals  []*conduit.Tool // the Conversation's own tools, whose output taints nothing
	demands []int           // each answer's demand on the turn's budget
	// nested, by position, are the servers whose output reached the code
	// of a run_code call. Its answer carries their taint.
	nested map[int][]string
}

// CallErrors are the calls' failures, by position. errors.Is and
// errors.As work on each. In JSON each is one of:
//
//   - null, for no failure;
//   - a *conduit.Error, as it marshals itself;
//   - another error, as {"kind": "internal", "message": its text}.
//
// So an HTTP handler can send an Execution as it is.
type CallErrors []error

// MarshalJSON writes es as described on CallErrors.
func (es CallErrors) MarshalJSON() ([]byte, error) {
	out := make([]any, len(es))
	for i, err := range es {
		var ce *conduit.Error
		switch {
		case err == nil:
		case errors.As(err, &ce):
			out[i] = ce
		default:
			out[i] = map[string]string{"kind": conduit.ErrInternal.String(), "message": err.Error()}
		}
	}
	return json.Marshal(out)
}

// Complete reports whether every call of the response is answered. Then
// no call is pending, and Results may be sent to the model.
func (e *Execution) Complete() bool { return len(e.Pending) == 0 }

// Taint returns prev plus the servers whose output reached the model in
// these results. That is the taint of the next turn. It adds the
// servers of calls that produced a result, isError results included. It
// also adds those whose server answered with an error message. Some
// calls add nothing: those denied, halted, never sent, timed out, or
// whose server was unavailable. No output of their server is in the answer.
func (e *Execution) Taint(prev []string) []string {
	out := slices.Clone(prev)
	for _, c := range e.Calls {
		if servers, ok := e.nested[c.Index]; ok && e.Errors[c.Index] == nil {
			for _, s := range servers {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
		if slices.Contains(e.locals, c.Def) || isRunCode(c.Def) {
			continue
		}
		if Reached(e.Errors[c.Index]) && !slices.Contains(out, c.Server) {
			out = append(out, c.Server)
		}
	}
	return out
}

// Reached reports whether a call that ended with err carries its
// server's output to the model. Such a call taints the conversation. A
// nil err means a result. A result or the server's own error reached
// the model. A refusal, a time limit or a failure to reach it did not.
func Reached(err error) bool {
	if err == nil {
		return true
	}
	return errors.Is(err, conduit.ErrServerError)
}

// ExecuteToolCalls runs the tool calls of a provider response through
// src's governed pipeline. It answers every call in the model's order,
// each keyed by the call's id. Some calls get the provider's error answer
// and reach no server. Those name a tool not in the tool set, or have
// arguments that are not an object. The calls of one response run
// concurrently, up to MaxConcurrency at a time. They all see the same taint.
//
// Each call is bounded by CallTimeout, approval and hooks included. This
// holds even when src, an approver or a hook ignores its context. Past
// the limit the call's context is cancelled, which cancels the request
// on the server. The call is then answered with a timeout error. An
// approver may deny a call and ask to halt, or the options' Halt may
// close. Then the calls not yet sent are answered without being sent. An
// approver's halt makes the Execution Halted.
//
// The response is the provider's response body. It may be []byte,
// json.RawMessage, a map[string]any, or any value that marshals to it.
// An official SDK's response struct is such a value. The response is
// never modified: hooks and null stripping work on copies of the
// arguments. The error is non-nil only when the response cannot be read
// at all, or no tool set is at hand. A response without tool calls gives
// an Execution with no Results. o may be nil.
//
// A call an approver defers (conduit.Defer) is not answered. It is in
// Execution.Pending, and only a Conversation can resume it. In a turn an
// approver halts, it is answered as halted instead, and never sent.
//
// The response is bounded by o.Limits. One over MaxResponseBytes is not
// parsed, and the error matches ErrResponseTooLarge. The calls past
// MaxToolCalls are answered with an error and not sent. The answers are
// written once every call is done. Each result is cut to its budget. The
// turn's results together are cut to the turn's budget (see
// BudgetOptions). Budgets says what was cut.
func ExecuteToolCalls(ctx context.Context, src conduit.Source, p Provider, response any, o *ExecOptions) (*Execution, error) {
	if o == nil {
		o = &ExecOptions{}
	}
	exec, ts, err := readToolCalls(ctx, src, p, response, o)
	if err != nil || len(exec.Calls) == 0 {
		return exec, err
	}
	r := &runner{src: src, d: p.impl(), o: o, ts: ts, exec: exec, halt: make(chan struct{}), results: make([]*mcp.CallToolResult, len(exec.Results))}
	defer r.pendingInOrder()
	if o.Halt != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-o.Halt:
				r.stop()
			case <-done:
			}
		}()
	}
	run := slices.Clone(exec.Calls)
	r.runAll(ctx, run)
	r.finish(ctx, run)
	return exec, nil
}

// ReadToolCalls reads the tool calls of a response as ExecuteToolCalls
// does, and sends nothing. The response is bounded by o.Limits. The
// calls resolve against o.ToolSet, or src's listing when it is nil.
// Strict mode's nulls are removed. The Execution it returns answers the
// calls that are not to be sent:
//
//   - a name not offered;
//   - arguments that are not an object;
//   - a call past ResponseLimits.MaxToolCalls.
//
// Its Calls are the others: the calls to send. Each has its server, tool
// and arguments (a copy).
//
// It is for programs that run each call on their own terms. They may run
// one at a time, or in another process, such as a durable workflow's
// activity per call. Send each call c with src.CallTool(ctx, c.Name,
// c.Args, opts), opts holding o's ToolSet and c.ID. Answer it at
// Results[c.Index] with p.Answer. The errors are ExecuteToolCalls'. o
// may be nil.
func ReadToolCalls(ctx context.Context, src conduit.Source, p Provider, response any, o *ExecOptions) (*Execution, error) {
	if o == nil {
		o = &ExecOptions{}
	}
	exec, _, err := readToolCalls(ctx, src, p, response, o)
	return exec, err
}

// readToolCalls is ReadToolCalls. It also returns the tool set the calls
// resolved against.
func readToolCalls(ctx context.Context, src conduit.Source, p Provider, response any, o *ExecOptions) (*Execution, *conduit.ToolSet, error) {
	d, err := p.valid()
	if err != nil {
		return nil, nil, err
	}
	bounded, err := o.Limits.bound(response)
	if err != nil {
		return nil, nil, err
	}
	raws, err := d.Parse(bounded)
	if err != nil {
		return nil, nil, err
	}
	exec := &Execution{Results: make([]map[string]any, len(raws)), Errors: make([]error, len(raws)),
		Budgets: make([]toolcall.Budgeted, len(raws)), demands: make([]int, len(raws))}
	for _, l := range o.locals {
		exec.locals = append(exec.locals, l.Tool)
	}
	if len(raws) == 0 {
		return exec, nil, nil
	}
	ts := o.ToolSet
	if ts == nil {
		if ts, err = src.ListToolsFor(ctx, &conduit.ListOptions{Principal: o.Principal, Taint: o.Taint}); err != nil {
			return nil, nil, err
		}
		if o.CodeMode.On {
			if ts, err = codeModeToolSet(ts, o.CodeMode); err != nil {
				return nil, nil, err
			}
		}
	}
	calls := o.Limits.resolve(raws, ts)
	shared := jsonv.Shared(response)
	for i := range calls {
		c := &calls[i]
		if c.Err != nil {
			exec.Errors[i] = c.Err
			exec.Results[i], exec.Budgets[i] = write(d, *c, nil, c.Err, &o.Answers)
			continue
		}
		// The model's arguments belong to the caller when it handed over a
		// decoded response. Calls then get a deep copy, stripped of strict
		// mode's nulls. A response given as bytes or a struct was decoded
		// here, so its arguments are already Calls' own. The pipeline,
		// whose hooks may rewrite them, gets another copy.
		if shared {
			c.Args = jsonv.CloneObject(c.Args)
		}
		if s, ok := d.(driver.Strict); ok {
			for _, np := range o.NullPaths[c.Name] {
				s.StripNull(c.Args, np)
			}
		}
		exec.Calls = append(exec.Calls, *c)
	}
	return exec, ts, nil
}

// runner runs the resolved calls of one Execution.
type runner struct {
	src  conduit.Source
	d    driver.Provider
	o    *ExecOptions
	ts   *conduit.ToolSet
	exec *Execution
	// results are the calls' results, by position. They wait here until
	// the turn's budget has shared them out and they are answered.
	results []*mcp.CallToolResult

	halt     chan struct{}
	haltOnce sync.Once
	mu       sync.Mutex // guards exec.Halted and exec.Pending
	// resumed are the options of the calls a Resume runs. They hold the
	// decision that approves them, and the answers to what their server asked.
	resumed map[int]resumedCall
}

// resumedCall is what a resumed call is sent with.
type resumedCall struct {
	approval *conduit.Approval
	input    *conduit.Input
	// code, for a run_code call, is how its code goes on.
	code *codemode.Resume
}

// stop halts the calls not yet sent.
func (r *runner) stop() { r.haltOnce.Do(func() { close(r.halt) }) }

// run runs one call and keeps its outcome at its place. It is answered
// with the others.
func (r *runner) run(ctx context.Context, c toolcall.Call) {
	res, err := r.call(ctx, c)
	if err != nil {
		if ce := (*conduit.Error)(nil); errors.As(err, &ce) && ce.Halt {
			r.stop()
			r.mu.Lock()
			r.exec.Halted = true
			r.mu.Unlock()
		}
	}
	r.exec.Errors[c.Index] = err
	if p, ok := pendingOf(c, err); ok {
		// Not answered: the turn waits for the decision.
		r.mu.Lock()
		r.exec.Pending = append(r.exec.Pending, p)
		r.mu.Unlock()
		return
	}
	r.results[c.Index] = res
}

// call sends one call through the pipeline.
func (r *runner) call(ctx context.Context, c toolcall.Call) (*mcp.CallToolResult, error) {
	if halted(r.halt) {
		return nil, haltedError(c.Def)
	}
	copts := r.o.callOptions(r.ts, c.ID, r.halt)
	if rc, ok := r.resumed[c.Index]; ok {
		copts.Approval, copts.Input = rc.approval, rc.input
	}
	callResolved := r.resolvedCaller()
	args := c.Args
	if callResolved == nil || r.o.isLocal(c.Def) {
		// A source of the caller's, or a local tool's Answer, may change
		// the arguments it is given. Calls keep the model's.
		args = jsonv.CloneObject(c.Args)
	}
	var res *mcp.CallToolResult
	var err error
	if callResolved != nil {
		// conduit's own source bounds the call itself. It copies the
		// arguments before a callback could change them.
		res, err = r.send(ctx, c, callResolved, args, &copts)
	} else {
		// A source of the caller's may ignore its context.
		res, err = r.callBounded(ctx, c, func(ctx context.Context) (*mcp.CallToolResult, error) {
			return r.send(ctx, c, nil, args, &copts)
		})
	}
	if err == nil && res == nil {
		err = &conduit.Error{Kind: conduit.ErrInternal, Server: c.Server, Tool: c.Tool, Message: modeltext.NoResult(c.Name)}
	}
	return res, err
}

// send makes the call c with args and o. It uses callResolved when that
// is given, else the source's CallTool. A panic of the source's is
// answered as an internal error.
func (r *runner) send(ctx context.Context, c toolcall.Call, callResolved resolvedFunc, args map[string]any, o *conduit.CallOptions) (res *mcp.CallToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, &conduit.Error{Kind: conduit.ErrInternal, Server: c.Server, Tool: c.Tool,
				Message: modeltext.CallFailed(c.Name), Err: fmt.Errorf("panic: %v", p)}
		}
	}()
	if l := r.o.local(c.Def); l != nil {
		if isRunCode(l.Tool) {
			ctx = r.withNestedTaint(ctx, c.Index)
			if rc, ok := r.resumed[c.Index]; ok && rc.code != nil {
				ctx = codemode.WithResume(ctx, rc.code)
			}
		}
		return callLocal(withCallIndex(ctx, c.Index), r.src, l, args, o)
	}
	if r.o.CodeMode.On && isRunCode(c.Def) {
		// Outside a Conversation the code calls what the source lists
		// when it runs. The listing is for the principal and taint.
		return callLocal(r.withNestedTaint(ctx, c.Index), r.src, runCodeTool(r.src, c.Def, nil, r.o.CodeMode), args, o)
	}
	if callResolved != nil {
		return callResolved(ctx, c.Def, args, o)
	}
	return r.src.CallTool(ctx, c.Name, args, o)
}

// resolvedFunc runs a call resolved against the offered tool set.
type resolvedFunc = func(ctx context.Context, t *conduit.Tool, args map[string]any, opts *conduit.CallOptions) (*mcp.CallToolResult, error)

// resolver is conduit's Hub and Client. They run a call resolved here,
// so its name is resolved once. They bound the call themselves.
type resolver interface {
	ResolvedCaller(src conduit.Source) resolvedFunc
}

// resolvedCaller is how to run a resolved call on the source. It is nil
// when the source is not conduit's own. A type that embeds a Hub to
// change its CallTool gets nil. Its CallTool is then used, bounded here.
func (r *runner) resolvedCaller() resolvedFunc {
	if rs, ok := r.src.(resolver); ok {
		return rs.ResolvedCaller(r.src)
	}
	return nil
}

// callBounded runs call on a Source of the caller's within the call's
// time limit. Such a source may not honour its context. Past the limit
// the call is answered with a timeout. The source's late answer is dropped.
func (r *runner) callBounded(ctx context.Context, c toolcall.Call, call func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	limit := r.o.CallTimeout
	if limit == 0 {
		limit = bounded.DefaultCallTimeout
	}
	cctx, cancel := ctx, context.CancelFunc(func() {})
	if limit > 0 {
		cctx, cancel = context.WithTimeout(ctx, limit)
	}
	defer cancel()
	return bounded.Run(cctx, call, func() error {
		if ctx.Err() != nil {
			limit = 0 // the caller's context ended, not the limit
		}
		return contextError(cctx, c.Def, limit)
	})
}

// contextError is the error of a call to t whose context ctx ended,
// worded as the pipeline words it. limit is the call's time limit, 0 when
// the caller's context ended first.
func contextError(ctx context.Context, t *conduit.Tool, limit time.Duration) *conduit.Error {
	e := &conduit.Error{Kind: conduit.ErrInternal}
	what := "The call"
	if t != nil {
		e.Server, e.Tool, what = t.Server, t.Name, "The call to "+t.Exposed
	}
	var end errtext.End
	end, e.Message, e.Err = errtext.Context(ctx, what, limit, nil)
	switch end {
	case errtext.Canceled:
		e.Kind = conduit.ErrCanceled
	case errtext.TimedOut:
		e.Kind = conduit.ErrTimeout
	}
	return e
}

// haltedError is the error of a call to t not sent because an approver
// halted its batch, worded as the pipeline words it.
func haltedError(t *conduit.Tool) *conduit.Error {
	return &conduit.Error{Kind: conduit.ErrHalted, Server: t.Server, Tool: t.Name, Message: errtext.Halted(t.Exposed)}
}

func halted(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// isLocal reports whether t is one of the Conversation's own tools.
func (o *ExecOptions) isLocal(t *conduit.Tool) bool { return o.local(t) != nil }

// local is the Conversation's own tool whose definition is t, if any.
func (o *ExecOptions) local(t *conduit.Tool) *conduit.LocalTool {
	for _, l := range o.locals {
		if l.Tool == t {
			return l
		}
	}
	return nil
}
