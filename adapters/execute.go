package adapters

import (
	"context"
	"errors"
	"maps"
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
	// (see conduit.CallOptions).
	Principal string
	Assigns   map[string]any
	Taint     []string
	Timeout   time.Duration
	Meta      mcp.Meta
	// Progress, when set, receives the calls' progress notifications.
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
	// Calls are the calls that resolved, in order, for the next turn's
	// taint (see Taint).
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
// governed pipeline and answers every one of them in the model's order. A
// call to a name not in the tool set, or with arguments that are not an
// object, is answered with the provider's error answer, and nothing is sent
// to any server. The calls of one response run concurrently and see the
// same taint.
//
// The response is the provider's response body as []byte, json.RawMessage,
// a map[string]any or any value that marshals to it (an official SDK's
// response struct). It is not modified. The error is non-nil only when the
// response cannot be read at all (or no tool set is at hand); a response
// without tool calls gives an Execution with no Results.
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

	var pending []int
	for i := range calls {
		c := &calls[i]
		if c.Err != nil {
			exec.Errors[i] = c.Err
			exec.Results[i] = p.answer(*c, nil, c.Err, answerOpts)
			continue
		}
		// The model's arguments belong to the caller's response: hooks and
		// null stripping work on a copy.
		c.Args = maps.Clone(c.Args)
		if np := o.NullPaths[c.Name]; len(np) > 0 && (p == OpenAIChat || p == OpenAIResponses) {
			c.Args = openai.StripNulls(c.Args, np)
		}
		exec.Calls = append(exec.Calls, *c)
		pending = append(pending, i)
	}

	timeout := o.CallTimeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	workers := o.MaxConcurrency
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(pending))
	halt := make(chan struct{})
	var haltOnce sync.Once
	var mu sync.Mutex

	run := func(i int) {
		c := calls[i]
		copts := &conduit.CallOptions{
			ToolSet: ts, Principal: o.Principal, Assigns: o.Assigns, Taint: o.Taint,
			Timeout: o.Timeout, Meta: o.Meta, Halt: halt,
		}
		if !o.NoShape {
			copts.Shape = conduit.ShapeLLM
		}
		if o.Progress != nil {
			copts.Progress = func(pr conduit.Progress) { o.Progress(c, pr) }
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		res, err := src.CallTool(cctx, c.Name, c.Args, copts)
		cancel()
		var ce *conduit.Error
		if errors.As(err, &ce) && ce.Halt {
			haltOnce.Do(func() { close(halt) })
			mu.Lock()
			exec.Halted = true
			mu.Unlock()
		}
		exec.Errors[i] = err
		exec.Results[i] = p.answer(c, res, err, answerOpts)
	}

	if workers <= 1 {
		for _, i := range pending {
			run(i)
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
				run(i)
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
