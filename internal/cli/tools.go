package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// listFlags are the flags that decide a listing. tools, exec and agent share
// them, so that exec resolves calls against what tools printed.
type listFlags struct {
	provider  string
	strict    string
	principal string
}

func (l *listFlags) register(fs *flagSet, strictToo bool) {
	fs.StringVar(&l.provider, "provider", "", "the `provider`: "+providerNames())
	fs.StringVar(&l.principal, "principal", "", "the `ID` of whom the calls are for, as the policy's principal conditions see it")
	if strictToo {
		fs.StringVar(&l.strict, "strict", "auto", "OpenAI strict mode: auto (strict where the schema converts), true (leave out the others) or false")
	}
}

func (l *listFlags) parse(fs *flagSet) (adapters.Provider, driver.StrictMode, error) {
	p, err := parseProvider(fs.cmd, l.provider)
	if err != nil {
		return adapters.Provider{}, 0, err
	}
	s, err := parseStrict(fs.cmd, l.strict)
	return p, s, err
}

type strictNote struct {
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

func runTools(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "tools", `
List the servers' tools in a provider's format, as adapters.Tools makes them:

  {"tools": [...], "fallbacks": [...], "excluded": [...], "warnings": [...],
   "hidden": [...]}

"tools" is the request's tools list (for gemini, the functionDeclarations to
wrap in {"functionDeclarations": tools}). "fallbacks" are tools OpenAI strict
mode could not take, sent with "strict": false (--strict auto); "excluded"
are those left out (--strict true); each says why. "warnings" are what the
provider is known to reject. Tools the policy denies outright for the
principal (--principal, or none) are left out: "hidden" names each one and
the rule that hides it, as stderr does.

Past a size (--search auto) the list is the first turn's of a tool search, as
conduit agent sends it: the always-loaded tools and a search tool, conduit's
search_tools or the provider's own (anthropic, openai-responses), which
finds the others; "search" then names it and counts the tools it can find.
With conduit's search, --revealed lists the tools earlier searches revealed
(exec's "revealed") after the search tool, in their order, as the
conversation offers them on its next turn.`)
	var h hubFlags
	var l listFlags
	var sf searchFlags
	var cm codeModeFlags
	h.register(fs)
	l.register(fs, true)
	sf.register(fs)
	cm.register(fs)
	cacheLast := fs.Bool("cache-last", false, "anthropic: mark the last tool with cache_control, caching the whole list as a prompt prefix")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("tools", "unexpected argument %q", pos[0])
	}
	p, strict, err := l.parse(fs)
	if err != nil {
		return err
	}
	search, err := sf.parse(fs)
	if err != nil {
		return err
	}
	hub, _, err := h.openHub(ctx, env, nil, hubOptions{})
	if err != nil {
		return err
	}
	defer hub.Close()

	var fallbacks []strictNote
	conv, err := adapters.NewConversation(ctx, hub, p, &adapters.ConversationOptions{
		TurnOptions: adapters.TurnOptions{Principal: l.principal,
			Trace: env.listingTrace(&adapters.Trace{StrictFallback: func(f adapters.StrictFallbackInfo) {
				fallbacks = append(fallbacks, strictNote{f.Tool, reason(f.Err)})
			}})},
		Listing: adapters.ListingOptions{CacheLast: *cacheLast, Strict: strict, CodeMode: cm.options()},
		Search:  search,
	})
	if err != nil {
		return failure("listing tools: %v", err)
	}
	listing := conv.Listing()
	excluded := []strictNote{}
	for _, name := range listing.Excluded {
		excluded = append(excluded, strictNote{name, strictReason(ctx, hub, name)})
	}
	reportSkipped(env, listing.ToolSet)
	hidden := reportHidden(env, listing.ToolSet, l.principal)
	return writeJSON(env.Stdout, struct {
		Tools     []map[string]any   `json:"tools"`
		Fallbacks []strictNote       `json:"fallbacks"`
		Excluded  []strictNote       `json:"excluded"`
		Warnings  []toolcall.Warning `json:"warnings"`
		Hidden    []strictNote       `json:"hidden"`
		Search    *searchNote        `json:"search,omitempty"`
	}{jsonv.NonNil(listing.Tools), jsonv.NonNil(fallbacks), excluded, jsonv.NonNil(listing.Warnings), hidden, searchOf(listing)})
}

// reportHidden names on stderr, and returns, the tools the policy hides from
// principal's listing and why. 'conduit servers' counts them. So a shorter
// list must say where the rest went.
func reportHidden(env *Env, ts *conduit.ToolSet, principal string) []strictNote {
	whom := "(listing for no principal)"
	if principal != "" {
		whom = fmt.Sprintf("(listing for principal %q)", principal)
	}
	hidden := []strictNote{}
	for _, s := range ts.Skipped() {
		if s.Reason != conduit.SkipPolicy {
			continue
		}
		why := s.Detail
		if why == "" {
			why = "the policy denies it"
		}
		hidden = append(hidden, strictNote{s.Exposed, why + " " + whom})
		fmt.Fprintf(env.Stderr, "conduit: %s hidden: %s %s\n", s.Exposed, why, whom)
	}
	return hidden
}

// strictReason says why a tool left out under --strict true did not
// convert. The listing's tool set no longer holds it, so it is looked up in
// the hub's.
func strictReason(ctx context.Context, hub *conduit.Hub, name string) string {
	ts, err := hub.ListTools(ctx)
	if err != nil {
		return "its schema does not convert to strict mode"
	}
	t, ok := ts.Lookup(name)
	if !ok {
		return "its schema does not convert to strict mode"
	}
	if _, _, err := driver.StrictSchema(toolcall.SchemaMap(t.InputSchema)); err != nil {
		return reason(err)
	}
	return "its schema does not convert to strict mode"
}

func reason(err error) string {
	var se *driver.StrictError
	if errors.As(err, &se) {
		if se.Pointer != "" {
			return fmt.Sprintf("%s (at %s)", se.Reason, se.Pointer)
		}
		return se.Reason
	}
	return err.Error()
}

// reportSkipped tells stderr about tools left out for reasons other than the
// policy: collisions, bad names, down servers (already reported).
func reportSkipped(env *Env, ts *conduit.ToolSet) {
	for _, s := range ts.Skipped() {
		switch s.Reason {
		case conduit.SkipCollision, conduit.SkipInvalidName:
			fmt.Fprintf(env.Stderr, "conduit: %s/%s left out (%s): %s\n", s.Server, s.Tool, s.Reason, s.Detail)
		}
	}
}
