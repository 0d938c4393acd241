package adapters

import (
	"context"
	"log/slog"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// ToolsOptions are the options of Tools. The zero value is fine.
type ToolsOptions struct {
	// Principal and Taint leave out the tools the policy denies outright
	// for them.
	Principal string
	Taint     []string
	// Listing says how the tools are written for the provider.
	Listing ListingOptions
	// Trace, when set, is told of strict-mode fallbacks. Logger, when
	// set, logs them.
	Trace  *Trace
	Logger *slog.Logger
}

// ListingOptions say how a provider's tool definitions are written. The
// zero value is fine.
type ListingOptions struct {
	// CacheLast, for Anthropic, marks the last tool with cache_control.
	// Then the whole tool list is cached as a prompt prefix. CacheTTL
	// optionally sets its ttl ("5m", "1h").
	CacheLast bool
	CacheTTL  string
	// Strict, for OpenAI, is the strict-mode choice (default
	// driver.StrictAuto).
	Strict driver.StrictMode
	// CodeMode, when On, offers run_code instead of the tools. Its
	// description declares the tools in TypeScript. With Direct, it is
	// offered beside them. See CodeModeOptions. Off by default.
	CodeMode CodeModeOptions

	// cacheTool is where CacheLast's mark goes instead of the last tool.
	cacheTool string
}

// Trace is a set of optional hooks for adapter events, in the manner of
// net/http/httptrace. Each takes an info struct. Each is called
// synchronously, so it must be quick and safe for concurrent use.
type Trace struct {
	// StrictFallback is called for each tool sent with "strict": false.
	// OpenAIChat and OpenAIResponses do so under driver.StrictAuto.
	StrictFallback func(StrictFallbackInfo)
	// ResultBudget is called once a result's answer is written. It is
	// called for each result over BudgetOptions.WarnTokens. It is also
	// called for each result cut to its budget.
	ResultBudget func(ResultBudgetInfo)
}

// StrictFallbackInfo is the argument of [Trace.StrictFallback].
type StrictFallbackInfo struct {
	Tool string // the exposed name
	Err  error  // why its schema does not convert
	// Context is the listing's context: Tools' and NewConversation's
	// ctx, context.Background() for ListToolSet.
	Context context.Context
}

// Listing is a source's tools in a provider's format.
type Listing struct {
	// Tools are the provider's tool definitions, in the tool set's order.
	// For Anthropic and OpenAI they are the request's "tools". For Gemini
	// they are the functionDeclarations. Wrap those as
	// {"functionDeclarations": Tools}.
	Tools []map[string]any
	// ToolSet is what the model was offered. Calls resolve against it.
	ToolSet *conduit.ToolSet
	// NullPaths are strict mode's null paths, by exposed name. Strict
	// mode makes the model send these nulls. They are removed before a
	// call (OpenAI only).
	NullPaths map[string][]driver.NullPath
	// Fallbacks are tools sent with "strict": false under
	// driver.StrictAuto. Excluded are the tools left out under
	// driver.StrictOn. Both hold exposed names.
	Fallbacks []string
	Excluded  []string
	// Warnings are what the user should know before the tools are sent.
	// They name servers that are down (conduit.ToolSet.Warnings). Above
	// all, they say when no tool is offered at all. They also name what
	// the provider is known to reject or mishandle.
	Warnings []toolcall.Warning
	// SearchTool, in a Conversation's search mode, is the name of the
	// search tool offered: search_tools, or the provider's own. Deferred
	// are the tools that can be found but are not loaded yet. They are
	// exposed names, in the tool set's order. Both are empty otherwise.
	SearchTool string
	Deferred   []string
	// Revealed, with conduit's search, are the tools its searches have
	// revealed so far. SearchOptions.Revealed come first. They are exposed
	// names, in the order they joined the list. SearchOptions.Revealed
	// takes them to carry the conversation on in another process.
	Revealed []string
}

// Tools lists src's tools for provider p. It leaves out those the policy
// denies outright for o's principal and taint. Only tools in the tool
// set are listed, in its order. So the list is stable between turns. o
// may be nil. A [Conversation] lists once and keeps the listing for its
// turns.
func Tools(ctx context.Context, src conduit.Source, p Provider, o *ToolsOptions) (*Listing, error) {
	if _, err := p.valid(); err != nil {
		return nil, err
	}
	if o == nil {
		o = &ToolsOptions{}
	}
	if o.Listing.CodeMode.On {
		if err := checkCodeMode(src, o.Principal, o.Taint); err != nil {
			return nil, err
		}
	}
	ts, err := src.ListToolsFor(ctx, &conduit.ListOptions{Principal: o.Principal, Taint: o.Taint})
	if err != nil {
		return nil, err
	}
	return listToolSet(ctx, ts, p, &o.Listing, o.Trace, o.Logger)
}

// ListToolSet is Tools over a tool set already at hand. Its strict-mode
// fallbacks are in the Listing only. o may be nil.
func ListToolSet(ts *conduit.ToolSet, p Provider, o *ListingOptions) (*Listing, error) {
	return listToolSet(context.Background(), ts, p, o, nil, nil)
}

// listToolSet is ListToolSet in ctx. tr is given ctx with the fallbacks.
// lg logs them.
func listToolSet(ctx context.Context, ts *conduit.ToolSet, p Provider, o *ListingOptions, tr *Trace, lg *slog.Logger) (*Listing, error) {
	d, err := p.valid()
	if err != nil {
		return nil, err
	}
	if o == nil {
		o = &ListingOptions{}
	}
	if o.CodeMode.On {
		if ts, err = codeModeToolSet(ts, o.CodeMode); err != nil {
			return nil, err
		}
	}
	lo := o.toDriver()
	l := &Listing{Tools: d.Tools(ts, lo), ToolSet: ts, Warnings: append(serverWarnings(ts), d.Check(ts)...)}
	traceFallbacks(ctx, tr, lg, l.strict(p, ts, lo))
	return l, nil
}

// toDriver is o as a driver takes it.
func (o *ListingOptions) toDriver() *driver.ListOptions {
	return &driver.ListOptions{CacheLast: o.CacheLast, CacheTTL: o.CacheTTL, CacheTool: o.cacheTool,
		Strict: o.Strict}
}

// strict fills in what strict mode did to the listing of ts. It does so
// for a provider p that has strict mode. It returns the fallbacks.
func (l *Listing) strict(p Provider, ts *conduit.ToolSet, lo *driver.ListOptions) []fallback {
	s, ok := p.impl().(driver.Strict)
	if !ok {
		return nil
	}
	var fallbacks []fallback
	l.NullPaths = map[string][]driver.NullPath{}
	for t := range ts.All() {
		r := s.StrictTool(t, lo)
		switch {
		case r.Excluded:
			l.Excluded = append(l.Excluded, t.Exposed)
		case r.Fallback != nil:
			l.Fallbacks = append(l.Fallbacks, t.Exposed)
			fallbacks = append(fallbacks, fallback{t.Exposed, r.Fallback})
		}
		if len(r.NullPaths) > 0 {
			// A tool's null paths are its own under a provider. Every
			// listing shares them, and none modifies them.
			l.NullPaths[t.Exposed] = r.NullPaths
		}
	}
	return fallbacks
}

// fallback is a tool sent without strict mode, and why.
type fallback struct {
	tool string
	err  error
}

// serverWarnings are ts's warnings of servers that are down.
func serverWarnings(ts *conduit.ToolSet) []toolcall.Warning {
	var ws []toolcall.Warning
	for _, w := range ts.Warnings() {
		ws = append(ws, toolcall.Warning{Message: w})
	}
	return ws
}

// traceFallbacks tells tr and lg of strict-mode fallbacks. ctx is the
// listing's.
func traceFallbacks(ctx context.Context, tr *Trace, lg *slog.Logger, fallbacks []fallback) {
	for _, f := range fallbacks {
		if tr != nil && tr.StrictFallback != nil {
			tr.StrictFallback(StrictFallbackInfo{Tool: f.tool, Err: f.err, Context: ctx})
		}
		if lg != nil {
			lg.Info("conduit: strict mode fallback", "tool", f.tool, "err", f.err)
		}
	}
}
