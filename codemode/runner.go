// The runner: code's calls sent through the caller's governed pipeline.
package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolName is the name of the tool that runs code. ToolServer is the
// server id policies see it under, as for conduit's own search_tools.
const (
	ToolName   = "run_code"
	ToolServer = "conduit"
)

// Options configure code mode. The zero value is the default. Nil is fine.
type Options struct {
	// Limits bound each run (see Limits). Zero fields are the defaults.
	Limits Limits
	// SearchThreshold is a count of tools. Past it, run_code declares
	// conduit.search_tools instead of every tool. The default is
	// DefaultSearchThreshold. Negative means never. Every tool stays callable.
	SearchThreshold int
}

// DefaultSearchThreshold is Options.SearchThreshold's default. It is the
// same as the adapters' tool search.
const DefaultSearchThreshold = 40

// searches reports whether n tools are declared through search.
func (o *Options) searches(n int) bool {
	t := DefaultSearchThreshold
	if o != nil && o.SearchThreshold != 0 {
		t = o.SearchThreshold
	}
	return t >= 0 && n > t
}

// searchDeclaration is what run_code declares past the search threshold.
const searchDeclaration = `declare const conduit: {
  /** Find tools by what they do, in a few words: returns their TypeScript declarations. */
  search_tools(args: { query: string; limit?: number; }): Promise<string>;
};
`

// search answers conduit.search_tools with the declarations of what it finds.
func search(ts *conduit.ToolSet, args json.RawMessage) outcome {
	var a struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if json.Unmarshal(args, &a) != nil || strings.TrimSpace(a.Query) == "" {
		return outcome{err: "conduit.search_tools needs {query: string}"}
	}
	if a.Limit <= 0 || a.Limit > 20 {
		a.Limit = 5
	}
	var found []*conduit.Tool
	if ts != nil {
		found = ts.Search(a.Query, a.Limit)
	}
	d := Declarations(found)
	if d == "" {
		d = "// no tool matches " + strconv.Quote(a.Query)
	}
	b, _ := json.Marshal(d)
	return outcome{value: string(b)}
}

// Record is one call a run made and what it got. A replay answers the
// same call with it, without sending it again.
type Record struct {
	// Server and Tool name the tool. Exposed is its name in the tool set.
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Exposed string `json:"exposed"`
	// Args are the arguments the code passed, as JSON.
	Args json.RawMessage `json:"args"`
	// Value is what the call resolved to (JSON). Error, when it rejected,
	// is the message the code saw.
	Value json.RawMessage `json:"value,omitempty"`
	Error string          `json:"error,omitempty"`
	// Reached is true when the server's output reached the code. That
	// taints the conversation once the code's answer reaches the model.
	Reached bool `json:"reached,omitempty"`
	// Skipped is a call the code issued that was not made: it waited for
	// a decision, or the run stopped first. A replay makes it.
	Skipped bool `json:"skipped,omitempty"`
}

// Run is one run of code.
type Run struct {
	// Source sends the calls. It is a Hub or a Client. Its pipeline
	// governs each call as it governs a model's.
	Source conduit.Source
	// ToolSet is what the code may call, the listing for the principal.
	ToolSet *conduit.ToolSet
	// Call are the options of every call: principal, assigns, taint and
	// handlers. Each call's ID is Call.ID + "/" + its position from 1.
	Call conduit.CallOptions
	// Replay answers the first calls from their records, by the order
	// the code makes them. It sends none of them but those Skipped. A
	// call that differs is ErrDivergent.
	Replay []Record
	// Approval, when set, decides the first Skipped call of Replay, else
	// the first call after it. That is the call a person approved. With
	// AllowTool, it also decides every later call of that tool.
	Approval  *conduit.Approval
	AllowTool string
	// Options are the limits.
	Options *Options
}

// Result is what a run returned and did.
type Result struct {
	// Value is what the code returned, as JSON ("null" for nothing).
	Value json.RawMessage `json:"result"`
	// Logs are the lines console.log wrote.
	Logs []string `json:"logs,omitempty"`
	// Calls are the calls the code made, by the order it made them,
	// replayed ones included. Those not made are Skipped.
	Calls []Record `json:"-"`
	// Taint is Call.Taint plus the servers whose output reached the code.
	Taint []string `json:"-"`
}

// ErrDivergent is a replay whose code made a call other than the one
// recorded at that place. The code is not deterministic. Nothing of the
// run past the record is sent.
var ErrDivergent = errors.New("code mode: the code's calls differ from the recorded run")

// DeferredError is a run stopped by a call that waits for a decision.
// Its Records replay the run when the decision is made. It matches
// conduit.ErrDeferred. It unwraps to the nested call's *conduit.Error.
type DeferredError struct {
	// Records are the calls the code made, by the order it made them.
	// They are Run.Replay when the run goes on. Those not made (Skipped)
	// are the deferred call and any other call that waited. Calls made
	// concurrently with the deferred one, before or after it, are there
	// with their outcomes.
	Records []Record
	// Call is the deferred call: its tool and arguments. Index is its
	// place in Records.
	Call  Record
	Index int
	// Err is the pipeline's error for it (ErrDeferred, with the
	// conduit.Deferral).
	Err error
}

// Error says which nested call waits.
func (e *DeferredError) Error() string {
	return "code mode: " + e.Err.Error()
}

// Unwrap is the nested call's error.
func (e *DeferredError) Unwrap() error { return e.Err }

// Made counts the Records of calls that were made: those a replay
// answers without sending them again.
func (e *DeferredError) Made() int {
	n := 0
	for _, r := range e.Records {
		if !r.Skipped {
			n++
		}
	}
	return n
}

// Execute runs code as the body of an async function. Each call it makes
// goes through r.Source's pipeline with r.Call's principal and taint.
// The calls the code has made run concurrently, as many as it makes
// before it awaits (within Limits.MaxCalls). Their outcomes reach the
// code in the order it made them. Each call carries the taint of the
// outcomes that reached the code before it was made. The error is one of:
//
//   - a *CodeError: a syntax error or an uncaught throw, with its line;
//   - a *LimitError;
//   - ErrNeverSettled;
//   - ErrDivergent;
//   - a *DeferredError;
//   - the context's.
//
// The Result, even with an error, holds the logs and calls so far.
func Execute(ctx context.Context, code string, r *Run) (*Result, error) {
	var lim Limits
	if r.Options != nil {
		lim = r.Options.Limits
	}
	var tools []*conduit.Tool
	if r.ToolSet != nil {
		tools = slices.Collect(r.ToolSet.All())
	}
	by, names, _ := bindings(tools)
	searching := r.Options.searches(len(tools))
	if searching {
		names[searchGlobal] = []string{"search_tools"}
	}
	// The decision applies to the first call the record did not make:
	// the one that waited for it. An old record has none; then it is the
	// call after the record.
	approvedAt := len(r.Replay)
	for i, old := range r.Replay {
		if old.Skipped {
			approvedAt = i
			break
		}
	}
	res := &Result{Taint: slices.Clone(r.Call.Taint)}
	var mu sync.Mutex // guards res.Calls, stop and deferred
	var stop error
	deferred := -1 // the first call, by position, that waits for a decision
	var deferErr error
	start := func(global, method string, args json.RawMessage) (outcome, func(context.Context) outcome) {
		if searching && global == searchGlobal && method == "search_tools" {
			return search(r.ToolSet, args), nil
		}
		t, ok := by[binding{global, method}]
		if !ok {
			return outcome{err: fmt.Sprintf("%s.%s is not a tool", global, method)}, nil
		}
		rec := Record{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Args: args}
		mu.Lock()
		defer mu.Unlock()
		n := len(res.Calls)
		if n < len(r.Replay) {
			old := r.Replay[n]
			if old.Exposed != rec.Exposed || !sameJSON(old.Args, rec.Args) {
				stop = fmt.Errorf("%w: call %d is %s, the record has %s", ErrDivergent, n+1, rec.Exposed, old.Exposed)
				return outcome{err: stop.Error()}, nil
			}
			if !old.Skipped {
				res.Calls = append(res.Calls, old)
				return old.outcome(), nil
			}
		}
		var m map[string]any
		if err := json.Unmarshal(args, &m); err != nil || m == nil {
			rec.Error = fmt.Sprintf("the arguments of %s.%s must be an object", global, method)
			res.Calls = append(res.Calls, rec)
			return outcome{err: rec.Error}, nil
		}
		// Held by its place until it ends: a run stopped before then
		// records it as not made.
		res.Calls = append(res.Calls, Record{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Args: args, Skipped: true})
		o := r.Call
		o.ToolSet = r.ToolSet
		o.Taint = slices.Clone(res.Taint)
		o.ID = r.Call.ID + "/" + strconv.Itoa(n+1)
		o.Approval = nil
		if r.Approval != nil && (n == approvedAt || r.AllowTool != "" && r.AllowTool == t.Exposed) {
			o.Approval = r.Approval
		}
		return outcome{}, func(ctx context.Context) outcome {
			cr, err := r.Source.CallTool(ctx, t.Exposed, m, &o)
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, conduit.ErrDeferred) {
				if deferred < 0 || n < deferred {
					deferred, deferErr = n, err
				}
				if stop == nil {
					stop = err
				}
				return outcome{err: "deferred"}
			}
			rec.Reached = reached(err)
			switch {
			case err != nil:
				rec.Error = err.Error()
			case cr.IsError:
				rec.Error = text(cr)
				if rec.Error == "" {
					rec.Error = t.Exposed + " failed"
				}
			default:
				rec.Value = value(cr)
			}
			res.Calls[n] = rec
			return rec.outcome()
		}
	}
	v, logs, err := run(ctx, code, names, lim, start, func() error {
		mu.Lock()
		defer mu.Unlock()
		return stop
	}, func(out outcome) {
		// The server's output, read by the code, taints its later calls.
		if out.reached != "" && !slices.Contains(res.Taint, out.reached) {
			res.Taint = append(res.Taint, out.reached)
		}
	})
	// Every call has ended: no goroutine touches res now.
	res.Logs = logs
	for _, rec := range res.Calls {
		res.reach(rec)
	}
	if deferred >= 0 {
		call := res.Calls[deferred]
		call.Skipped = false
		return res, &DeferredError{Records: slices.Clone(res.Calls), Call: call, Index: deferred, Err: deferErr}
	}
	if stop != nil {
		return res, stop
	}
	if err != nil {
		return res, err
	}
	res.Value = json.RawMessage(v)
	return res, nil
}

// outcome is what the code is answered for rec.
func (rec Record) outcome() outcome {
	var o outcome
	if rec.Reached {
		o.reached = rec.Server
	}
	if rec.Error != "" {
		o.err = rec.Error
		return o
	}
	o.value = string(rec.Value)
	return o
}

// reach adds the record's server to the taint when its output reached
// the code.
func (res *Result) reach(rec Record) {
	if rec.Reached && !slices.Contains(res.Taint, rec.Server) {
		res.Taint = append(res.Taint, rec.Server)
	}
}

// reached reports whether a call that ended with err carried its
// server's output. A result or the server's own error did.
func reached(err error) bool {
	if err == nil {
		return true
	}
	return errors.Is(err, conduit.ErrServerError)
}

// value is what a call resolves to in the code: structuredContent, else
// its text.
func value(cr *mcp.CallToolResult) json.RawMessage {
	if cr.StructuredContent != nil {
		if b, err := json.Marshal(cr.StructuredContent); err == nil {
			return b
		}
	}
	b, _ := json.Marshal(text(cr))
	return b
}

// text joins a result's text content.
func text(cr *mcp.CallToolResult) string {
	var parts []string
	for _, c := range cr.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
