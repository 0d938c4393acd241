package adapters

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/openai"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultCallTimeout bounds one call, approval and hooks included, when
// ExecOptions.CallTimeout is zero.
const DefaultCallTimeout = 300 * time.Second

// ExecOptions are the options of ExecuteToolCalls. The zero value is fine,
// but pass the listing's ToolSet and NullPaths.
type ExecOptions struct {
	// ToolSet is the tool set the model was offered (Listing.ToolSet);
	// calls resolve against it only. Nil lists the source's tools now.
	ToolSet *conduit.ToolSet
	// NullPaths are OpenAI strict mode's null paths (Listing.NullPaths):
	// the nulls strict mode made the model send are removed before a call.
	NullPaths map[string][]openai.NullPath
	// MaxConcurrency is how many calls run at once (default
	// runtime.GOMAXPROCS(0)).
	MaxConcurrency int
	// CallTimeout bounds each call in all, approval and hooks included
	// (default DefaultCallTimeout); past it the call is cancelled and
	// answered with a timeout error.
	CallTimeout time.Duration
	// Structured says how structuredContent is used (default: the
	// provider's).
	Structured toolcall.Structured
	// NoShape skips shaping results for a model.
	NoShape bool
	// ErrorPrefix, for OpenAI, starts the text of an error answer; nil
	// means "Error: ".
	ErrorPrefix *string

	// Principal, Assigns, Taint, Timeout and Meta are passed to every call
	// (see conduit.CallOptions). Timeout bounds the request to the server;
	// CallTimeout bounds the whole call.
	Principal string
	Assigns   map[string]any
	Taint     []string
	Timeout   time.Duration
	Meta      mcp.Meta
	// Progress, when set, receives the calls' progress notifications, with
	// the call each belongs to. Calls run concurrently, so it may be
	// called from several goroutines at once.
	Progress func(c toolcall.Call, p conduit.Progress)
}

// Execution is the outcome of a model's tool calls.
type Execution struct {
	// Results answer every call, in the model's order, each keyed by the
	// call's id, in the provider's shape: Anthropic tool_result blocks (put
	// them first in the next user message), OpenAI Chat tool messages,
	// Responses function_call_output items, Gemini functionResponse parts
	// (send them as {"role": "user", "parts": Results}).
	Results []map[string]any
	// Halted reports that an approver denied a call and asked to stop the
	// agent loop: every call is still answered, but the loop should end.
	Halted bool
	// Calls are the calls that resolved, in the model's order, each with
	// its server, tool, id and arguments (a copy, with strict mode's nulls
	// removed; hooks' rewrites are not reflected), for the next turn's
	// taint (see Taint). Calls answered without being sent (unknown name,
	// non-object arguments) are not among them.
	Calls []toolcall.Call
	// Errors holds each call's failure, by position in Results (nil for a
	// call that completed, even with an isError result).
	Errors []error
}

// Taint returns prev plus the servers of the calls that resolved, the
// taint of the next turn once their results are in the model's context.
func (e *Execution) Taint(prev []string) []string {
	out := slices.Clone(prev)
	for _, c := range e.Calls {
		if !slices.Contains(out, c.Server) {
			out = append(out, c.Server)
		}
	}
	return out
}

// ExecuteToolCalls runs the tool calls of a provider response through src's
// governed pipeline and answers every one of them in the model's order,
// each keyed by the call's id. A call to a name not in the tool set, or
// with arguments that are not an object, is answered with the provider's
// error answer, and nothing is sent to any server. The calls of one
// response run concurrently, up to MaxConcurrency at a time, and see the
// same taint.
//
// Each call is bounded by CallTimeout, approval and hooks included, even
// when src, an approver or a hook ignores its context: past it the call's
// context is cancelled (which cancels the request on the server) and the
// call is answered with a timeout error. When an approver denies a call
// and asks to halt, the calls not yet sent are answered without being
// sent, and the Execution is Halted.
//
// The response is the provider's response body as []byte, json.RawMessage,
// a map[string]any or any value that marshals to it (an official SDK's
// response struct). It is never modified: hooks and null stripping work on
// copies of the arguments. The error is non-nil only when the response
// cannot be read at all (or no tool set is at hand); a response without
// tool calls gives an Execution with no Results.
func ExecuteToolCalls(ctx context.Context, src conduit.Source, p Provider, response any, o *ExecOptions) (*Execution, error) {
	if err := p.valid(); err != nil {
		return nil, err
	}
	if o == nil {
		o = &ExecOptions{}
	}
	raws, err := p.parse(response)
	if err != nil {
		return nil, err
	}
	exec := &Execution{Results: make([]map[string]any, len(raws)), Errors: make([]error, len(raws))}
	if len(raws) == 0 {
		return exec, nil
	}
	ts := o.ToolSet
	if ts == nil {
		if ts, err = src.ListToolsFor(ctx, &conduit.ListOptions{Principal: o.Principal, Taint: o.Taint}); err != nil {
			return nil, err
		}
	}
	calls := toolcall.Resolve(raws, ts)
	answerOpts := &toolcall.AnswerOptions{Structured: o.Structured, ErrorPrefix: o.ErrorPrefix}
	strip := p == OpenAIChat || p == OpenAIResponses
	_, shared := response.(map[string]any)

	var pending []int
	for i := range calls {
		c := &calls[i]
		if c.Err != nil {
			exec.Errors[i] = c.Err
			exec.Results[i] = p.answer(*c, nil, c.Err, answerOpts)
			continue
		}
		// The model's arguments belong to the caller when it handed over a
		// decoded response: Calls get a deep copy, stripped of strict
		// mode's nulls (a response given as bytes or a struct was decoded
		// here, so its arguments are already Calls' own), and the pipeline,
		// whose hooks may rewrite them, another.
		if shared {
			c.Args = toolcall.CloneArgs(c.Args)
		}
		if np := o.NullPaths[c.Name]; strip && len(np) > 0 {
			c.Args = openai.StripNulls(c.Args, np)
		}
		exec.Calls = append(exec.Calls, *c)
		pending = append(pending, i)
	}
	if len(pending) == 0 {
		return exec, nil
	}

	r := &runner{src: src, p: p, o: o, ts: ts, exec: exec, answerOpts: answerOpts, halt: make(chan struct{})}
	r.timeout = o.CallTimeout
	if r.timeout <= 0 {
		r.timeout = DefaultCallTimeout
	}
	workers := o.MaxConcurrency
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(pending))
	if workers <= 1 {
		for _, i := range pending {
			r.run(ctx, calls[i])
		}
		return exec, nil
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r.run(ctx, calls[i])
			}
		}()
	}
	for _, i := range pending {
		next <- i
	}
	close(next)
	wg.Wait()
	return exec, nil
}

// runner runs the resolved calls of one Execution.
type runner struct {
	src        conduit.Source
	p          Provider
	o          *ExecOptions
	ts         *conduit.ToolSet
	exec       *Execution
	answerOpts *toolcall.AnswerOptions
	timeout    time.Duration

	halt     chan struct{}
	haltOnce sync.Once
	mu       sync.Mutex // guards exec.Halted
}

// run runs one call and answers it at its place in Results.
func (r *runner) run(ctx context.Context, c toolcall.Call) {
	res, err := r.call(ctx, c)
	var ce *conduit.Error
	if errors.As(err, &ce) && ce.Halt {
		r.haltOnce.Do(func() { close(r.halt) })
		r.mu.Lock()
		r.exec.Halted = true
		r.mu.Unlock()
	}
	r.exec.Errors[c.Index] = err
	r.exec.Results[c.Index] = r.p.answer(c, res, err, r.answerOpts)
}

// call sends one call through the pipeline, bounded by the call timeout
// whether or not the source honours its context.
func (r *runner) call(ctx context.Context, c toolcall.Call) (*mcp.CallToolResult, error) {
	select {
	case <-r.halt:
		return nil, &conduit.Error{Kind: conduit.KindHalted, Server: c.Server, Tool: c.Tool,
			Message: "The call to " + c.Name + " was not made: the run was halted by an approver."}
	default:
	}
	if ctx.Err() != nil {
		return nil, ctxError(ctx, c, ctx.Err(), 0)
	}
	copts := &conduit.CallOptions{
		ToolSet: r.ts, Principal: r.o.Principal, Assigns: r.o.Assigns, Taint: r.o.Taint,
		Timeout: r.o.Timeout, Meta: r.o.Meta, Halt: r.halt,
	}
	if !r.o.NoShape {
		copts.Shape = conduit.ShapeLLM
	}
	if r.o.Progress != nil {
		copts.Progress = func(pr conduit.Progress) { r.o.Progress(c, pr) }
	}
	args := toolcall.CloneArgs(c.Args)
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	call := func() (out outcome) {
		defer func() {
			if p := recover(); p != nil {
				out = outcome{err: &conduit.Error{Kind: conduit.KindInternal, Server: c.Server, Tool: c.Tool,
					Message: "The call to " + c.Name + " failed.", Err: fmt.Errorf("panic: %v", p)}}
			}
		}()
		out.res, out.err = r.src.CallTool(cctx, c.Name, args, copts)
		return out
	}
	var out outcome
	switch r.src.(type) {
	case *conduit.Hub, *conduit.Client:
		// conduit's own sources end a call, approval and hooks included,
		// when its context ends: a goroutine to bound them is not needed.
		out = call()
	default:
		done := make(chan outcome, 1)
		go func() { done <- call() }()
		select {
		case out = <-done:
		case <-cctx.Done():
			select {
			case out = <-done:
			default:
				// The source did not return when its context ended; it is
				// left to finish on its own, and its late answer is dropped.
				return nil, ctxError(ctx, c, cctx.Err(), r.timeout)
			}
		}
	}
	if out.err != nil {
		// A pipeline that ran out of the call's time says so in its own
		// words; the model is told which call and after how long.
		if k, _ := conduit.KindOf(out.err); k == conduit.KindTimeout && ctx.Err() == nil && cctx.Err() != nil {
			return nil, ctxError(ctx, c, out.err, r.timeout)
		}
		return nil, out.err
	}
	if out.res == nil {
		return nil, &conduit.Error{Kind: conduit.KindInternal, Server: c.Server, Tool: c.Tool, Message: toolcall.NoResult}
	}
	return out.res, nil
}

// ctxError is the error of a call whose context ended: the call's own
// deadline (timeout), or the caller's context running out or being
// cancelled (timeout zero).
func ctxError(ctx context.Context, c toolcall.Call, cause error, timeout time.Duration) *conduit.Error {
	e := &conduit.Error{Kind: conduit.KindTimeout, Server: c.Server, Tool: c.Tool}
	switch {
	case ctx.Err() == nil && timeout > 0:
		e.Message = fmt.Sprintf("The call to %s timed out after %v.", c.Name, timeout)
		e.Err = errors.Join(context.DeadlineExceeded, cause)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		e.Message = "The call to " + c.Name + " ran out of time."
		e.Err = errors.Join(context.DeadlineExceeded, cause)
	default:
		e.Kind = conduit.KindCanceled
		e.Message = "The call to " + c.Name + " was canceled."
		e.Err = errors.Join(context.Canceled, cause)
	}
	return e
}
