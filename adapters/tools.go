package adapters

import (
	"context"
	"log/slog"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/openai"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// ToolsOptions are the options of Tools. The zero value is fine.
type ToolsOptions struct {
	// Principal and Taint leave out the tools the policy denies outright
	// for them.
	Principal string
	Taint     []string
	// CacheLast, for Anthropic, marks the last tool with cache_control so
	// that the whole tool list is cached as a prompt prefix; CacheTTL
	// optionally sets its ttl ("5m", "1h").
	CacheLast bool
	CacheTTL  string
	// Strict is OpenAI's strict-mode choice (default openai.StrictAuto).
	Strict openai.Strict
	// Trace, when set, is told of listing events.
	Trace *Trace
	// Logger, when set, logs listing events.
	Logger *slog.Logger
}

// Trace is a set of optional hooks for adapter events, in the manner of
// net/http/httptrace.
type Trace struct {
	// StrictFallback is called for each tool that OpenAIChat or
	// OpenAIResponses sends with "strict": false under openai.StrictAuto.
	StrictFallback func(tool string, err error)
}

// Listing is a source's tools in a provider's format.
type Listing struct {
	// Tools are the provider's tool definitions, in the tool set's order:
	// for Anthropic and OpenAI the request's "tools"; for Gemini the
	// functionDeclarations, to wrap as {"functionDeclarations": Tools}.
	Tools []map[string]any
	// ToolSet is what the model was offered; pass it to ExecuteToolCalls.
	ToolSet *conduit.ToolSet
	// NullPaths are OpenAI strict mode's null paths; pass them to
	// ExecuteToolCalls.
	NullPaths map[string][]openai.NullPath
	// Fallbacks are tools sent with "strict": false under StrictAuto, and
	// Excluded the tools left out under StrictOn (exposed names).
	Fallbacks []string
	Excluded  []string
	// Warnings are what the provider is known to reject or mishandle.
	Warnings []toolcall.Warning
}

// Tools lists src's tools for provider p. Only tools in the tool set are
// listed, in its order, so the list is stable between turns.
func Tools(ctx context.Context, src conduit.Source, p Provider, o *ToolsOptions) (*Listing, error) {
	if err := p.valid(); err != nil {
		return nil, err
	}
	if o == nil {
		o = &ToolsOptions{}
	}
	ts, err := src.ListToolsFor(ctx, &conduit.ListOptions{Principal: o.Principal, Taint: o.Taint})
	if err != nil {
		return nil, err
	}
	return ListToolSet(ts, p, o)
}

// ListToolSet is Tools over a tool set already at hand.
func ListToolSet(ts *conduit.ToolSet, p Provider, o *ToolsOptions) (*Listing, error) {
	if err := p.valid(); err != nil {
		return nil, err
	}
	if o == nil {
		o = &ToolsOptions{}
	}
	tools, rep, warnings := p.list(ts, o)
	l := &Listing{Tools: tools, ToolSet: ts, NullPaths: rep.NullPaths, Excluded: rep.Excluded, Warnings: warnings}
	for _, f := range rep.Fallbacks {
		l.Fallbacks = append(l.Fallbacks, f.Tool)
		if o.Trace != nil && o.Trace.StrictFallback != nil {
			o.Trace.StrictFallback(f.Tool, f.Err)
		}
		if o.Logger != nil {
			o.Logger.Info("conduit: strict mode fallback", "tool", f.Tool, "err", f.Err)
		}
	}
	return l, nil
}
