package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool search. Past a size, a Conversation does not offer every tool up
// front. It offers the tools SearchOptions.AlwaysLoaded names and a
// search tool. The model finds the rest by what they do:
//
//   - With the provider's own search, where it has one, every tool is
//     sent, deferred. The provider searches and loads them itself. The
//     tool list never changes. Anthropic has its tool search tool, OpenAI
//     Responses its tool_search.
//   - Elsewhere (OpenAI Chat, Gemini), or with SearchOptions.Conduit,
//     conduit's own search serves. It is one function, search_tools, with
//     a query and a limit. The Conversation answers it with ToolSet.Search
//     over the tools it was listed for. Nothing is sent to any server. The
//     tools found are appended to the next request's list, after
//     everything offered before. So the list of turn n is a prefix of the
//     list of turn n+1. A prompt cache of the tools keeps working. A call
//     of a tool not yet found is answered as an unknown tool, and nothing
//     is sent.
//
// Either way the search covers only the tools the Conversation was listed
// for. A tool the policy denies the principal outright is never found,
// nor one the tool filter hides. Conduit's search also leaves out what
// the policy denies with the conversation's taint when it answers (a
// Tainted rule).

// SearchMode says when a Conversation offers tool search.
type SearchMode int

const (
	// SearchAuto (the default) searches when the tools the Conversation
	// offers are more than SearchOptions.Threshold. It also searches when
	// their definitions take more than SearchOptions.Budget bytes.
	SearchAuto SearchMode = iota
	// SearchOn always searches.
	SearchOn
	// SearchOff never searches. Every tool is listed.
	SearchOff
)

// String returns "auto", "on" or "off".
func (m SearchMode) String() string {
	switch m {
	case SearchAuto:
		return "auto"
	case SearchOn:
		return "on"
	case SearchOff:
		return "off"
	}
	return fmt.Sprintf("SearchMode(%d)", int(m))
}

// ParseSearchMode parses "auto", "on" or "off".
func ParseSearchMode(s string) (SearchMode, error) {
	for _, m := range []SearchMode{SearchAuto, SearchOn, SearchOff} {
		if strings.EqualFold(s, m.String()) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown search mode %q (auto, on, off)", s)
}

const (
	// DefaultSearchThreshold is SearchOptions.Threshold's default. Past 40
	// tools a Conversation searches. That is well below OpenAI's limit of
	// 128 tools a request. Anthropic documents that past
	// 30 to 50 tools, Claude picks the right tool markedly less often. 40
	// is within that range. A single server of a typical size is still
	// offered whole: GitHub's 26 tools, or Playwright's 25.
	DefaultSearchThreshold = 40
	// DefaultSearchBudget is SearchOptions.Budget's default: 64 KiB of
	// definitions. That is about 16,000 tokens at 4 bytes a token, spent
	// on every request. It is 8% of a 200,000-token context. A few servers
	// pass it with few tools: Notion's 24 take 75 KB.
	DefaultSearchBudget = 64 << 10
	// DefaultSearchLimit is how many tools a search_tools call returns
	// when the model gives no limit. MaxSearchLimit is the most it may ask
	// for.
	DefaultSearchLimit = 5
	MaxSearchLimit     = 20
)

// The name of conduit's search function, and its server id. The policy,
// approvers, hooks and Trace see it under that id. The pattern
// "conduit/search_tools" matches it. The pattern also matches a server of
// a hub whose id is conduit, if there is one.
const (
	SearchToolName   = "search_tools"
	SearchToolServer = "conduit"
)

// SearchOptions say when and how a Conversation offers tool search. The
// zero value is SearchAuto with the defaults.
type SearchOptions struct {
	// Mode says when: SearchAuto (the default), SearchOn or SearchOff.
	Mode SearchMode
	// Threshold and Budget are SearchAuto's. It searches when more than
	// Threshold tools are offered (default DefaultSearchThreshold). It
	// also searches when their definitions take more than Budget bytes
	// (default DefaultSearchBudget). The size is that of the provider's
	// JSON. Negative disables either test.
	Threshold int
	Budget    int
	// AlwaysLoaded are patterns of the tools offered from the first turn.
	// They are written as the policy writes them. In "github/get_*" come
	// the server id, '/', and the tool's own name. By default only the
	// search tool is offered from the first turn.
	AlwaysLoaded []string
	// Conduit uses conduit's search_tools even where the provider has a
	// search of its own (Anthropic, OpenAI Responses). It serves models
	// that do not support the provider's search. That search needs Claude
	// Sonnet 4.5, Opus 4.5 or Haiku 4.5 and later, or gpt-5.4 and later.
	// Conduit's search also lets the policy govern searches.
	Conduit bool
	// Regex, for Anthropic's own search, offers its regex variant instead
	// of BM25.
	Regex bool
	// Limit is how many tools a search_tools call returns when the model
	// gives no limit. The default is DefaultSearchLimit, and it is at most
	// MaxSearchLimit.
	Limit int
	// Revealed are tools that earlier search_tools answers revealed. They
	// are named by exposed name, in the order they were revealed. That is
	// the Listing.Revealed of the Conversation that revealed them.
	//
	// With conduit's search, they are offered from the first turn. They
	// come after the always-loaded tools and the search tool, as that
	// Conversation offered them. So a conversation carried across
	// processes keeps its tool list, and its calls of them resolve. A name
	// the Conversation cannot find is left out with a warning in
	// Listing.Warnings. Such a name is not listed for its principal, or
	// it is gone. The provider's own search ignores Revealed: every tool
	// is sent there.
	Revealed []string
}

// localSource is a source that runs conduit's own tools through its
// governance. Hubs and Clients are.
type localSource interface {
	CallLocal(ctx context.Context, t *conduit.LocalTool, args any, opts *conduit.CallOptions) (*mcp.CallToolResult, error)
	OffersLocal(t *conduit.Tool, opts *conduit.ListOptions) bool
}

// searcher is the state of conduit's own search in a Conversation.
type searcher struct {
	p     Provider
	d     driver.Provider
	lo    ListingOptions   // the conversation's, marking the search tool for Anthropic's cache
	all   *conduit.ToolSet // what can be found
	tool  *conduit.LocalTool
	limit int

	// Guarded by the Conversation's mu.
	loaded   []*conduit.Tool // offered, in order: always loaded, the search tool, then as found
	shown    map[*conduit.Tool]bool
	revealed []string           // the exposed names of the tools found, in the order they joined loaded
	notes    []toolcall.Warning // SearchOptions.Revealed names left out
	reported map[string]bool    // strict fallbacks already traced
}

// list makes the Conversation's first listing of ts. It offers search or
// not, as o says.
func (c *Conversation) list(ctx context.Context, ts *conduit.ToolSet, d driver.Provider, o *ConversationOptions) error {
	so := o.Search
	if so.Mode != SearchAuto && so.Mode != SearchOn && so.Mode != SearchOff {
		return fmt.Errorf("adapters: invalid search mode %v", so.Mode)
	}
	if o.Listing.CodeMode.On {
		return c.listCode(ctx, ts, o)
	}
	loaded, err := alwaysLoaded(ts, so.AlwaysLoaded)
	if err != nil {
		return err
	}
	read, notes := c.readTool(ts, o)
	var why string
	search := so.Mode == SearchOn || (so.Mode == SearchAuto && exceeds(ts, d, &o.Listing, so))
	_, native := d.(driver.Searcher)
	if search && (so.Conduit || !native) {
		// conduit's own search, when it can be offered.
		tool := newSearchTool()
		if _, taken := ts.Lookup(SearchToolName); taken {
			why = "a tool of the servers is exposed as " + SearchToolName + ", the name of conduit's search tool"
		} else if ls, ok := c.src.(localSource); ok && !ls.OffersLocal(tool, &conduit.ListOptions{Principal: o.Principal, Taint: o.Taint}) {
			why = "the policy denies " + SearchToolServer + "/" + SearchToolName + " (allow it to search)"
		}
		if why != "" && so.Mode == SearchOn {
			return fmt.Errorf("adapters: conduit's tool search cannot be offered: %s", why)
		}
		if why == "" {
			return c.listConduit(ctx, ts, d, o, loaded, tool, read, notes)
		}
	}
	if search && why == "" {
		return c.listNative(ctx, ts, d, o, loaded, read, notes)
	}
	listing, err := listToolSet(ctx, ts.With(read...), c.p, &o.Listing, o.Trace, o.Logger)
	if err != nil {
		return err
	}
	if why != "" {
		listing.Warnings = append(listing.Warnings, toolcall.Warning{Message: "every tool is listed, without search: " + why})
	}
	listing.Warnings = append(listing.Warnings, notes...)
	c.setListing(listing)
	return nil
}

// alwaysLoaded returns the tools of ts that patterns name, in ts's order.
func alwaysLoaded(ts *conduit.ToolSet, patterns []string) ([]*conduit.Tool, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	p := conduit.NewPolicy(conduit.Allow(patterns...))
	if err := p.Err(); err != nil {
		return nil, fmt.Errorf("adapters: SearchOptions.AlwaysLoaded: %w", err)
	}
	var out []*conduit.Tool
	for t := range ts.All() {
		if _, _, ok := p.Decide(&conduit.Call{Server: t.Server, Tool: t.Name, Exposed: t.Exposed}); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// exceeds reports whether ts is past SearchAuto's threshold or budget.
func exceeds(ts *conduit.ToolSet, d driver.Provider, lo *ListingOptions, so SearchOptions) bool {
	threshold, budget := so.Threshold, so.Budget
	if threshold == 0 {
		threshold = DefaultSearchThreshold
	}
	if budget == 0 {
		budget = DefaultSearchBudget
	}
	if threshold > 0 && ts.Len() > threshold {
		return true
	}
	if budget < 0 {
		return false
	}
	return jsonSize(d.Tools(ts, lo.toDriver())) > budget
}

func jsonSize(v any) int {
	data, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(data)
}

// listNative lists ts for the provider's own search. loaded are listed
// from the start, and every other tool is deferred. The Conversation's
// own tools (extra) are loaded, after the others. Calls resolve against
// all of them.
func (c *Conversation) listNative(ctx context.Context, ts *conduit.ToolSet, d driver.Provider, o *ConversationOptions, loaded, extra []*conduit.Tool, notes []toolcall.Warning) error {
	native, ok := d.(driver.Searcher)
	if !ok {
		return fmt.Errorf("adapters: %s has no tool search of its own", c.p)
	}
	lts := conduit.ToolSetOf(append(slices.Clip(loaded), extra...)...)
	ts = ts.With(extra...)
	lo := o.Listing.toDriver()
	lo.SearchRegex = o.Search.Regex
	s, err := native.SearchTools(lts, ts, lo)
	if err != nil {
		return fmt.Errorf("adapters: %s's tool search: %w", c.p, err)
	}
	l := &Listing{Tools: s.Tools, ToolSet: ts, Warnings: append(append(serverWarnings(ts), s.Warnings...), notes...), SearchTool: s.SearchTool, Deferred: deferredNames(ts, lts)}
	traceFallbacks(ctx, o.Trace, o.Logger, l.strict(c.p, ts, lo))
	c.setListing(l)
	return nil
}

// listConduit lists the loaded tools, conduit's search tool and the
// Conversation's other tools (extra). It keeps what the search needs.
func (c *Conversation) listConduit(ctx context.Context, ts *conduit.ToolSet, d driver.Provider, o *ConversationOptions, loaded []*conduit.Tool, tool *conduit.Tool, extra []*conduit.Tool, notes []toolcall.Warning) error {
	limit := o.Search.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	s := &searcher{p: c.p, d: d, lo: o.Listing, all: ts, limit: min(limit, MaxSearchLimit),
		shown: map[*conduit.Tool]bool{}, reported: map[string]bool{}, notes: notes}
	s.lo.cacheTool = SearchToolName
	s.tool = &conduit.LocalTool{Tool: tool, Answer: func(ctx context.Context, call *conduit.Call) (*mcp.CallToolResult, error) {
		return c.answerSearch(ctx, call)
	}}
	for _, t := range loaded {
		s.shown[t] = true
	}
	s.loaded = append(append(slices.Clip(loaded), tool), extra...)
	for _, name := range o.Search.Revealed {
		t, ok := ts.Lookup(name)
		switch {
		case !ok:
			s.notes = append(s.notes, toolcall.Warning{Tool: name,
				Message: "revealed by an earlier search, but not a tool this conversation can offer (not listed for its principal, or its server is down): left out"})
		case !s.shown[t]:
			s.shown[t] = true
			s.loaded = append(s.loaded, t)
			s.revealed = append(s.revealed, t.Exposed)
		}
	}
	c.search = s
	c.o.locals = append(c.o.locals, s.tool)
	l, fallbacks := s.listing()
	c.setListing(l)
	traceFallbacks(ctx, c.o.Trace, c.o.Logger, fallbacks)
	return nil
}

// listing lists what is offered now. It also returns the strict-mode
// fallbacks not traced before. They are traced once the Conversation's mu
// is released, since a Trace may call the Conversation. The caller holds
// mu, or owns the Conversation while it is made.
func (s *searcher) listing() (*Listing, []fallback) {
	ts := conduit.ToolSetOf(s.loaded...)
	lo := s.lo.toDriver()
	l := &Listing{Tools: s.d.Tools(ts, lo), ToolSet: ts,
		Warnings:   append(append(serverWarnings(s.all), s.notes...), s.d.Check(ts)...),
		SearchTool: SearchToolName, Deferred: deferredNames(s.all, ts), Revealed: slices.Clone(s.revealed)}
	var fresh []fallback
	for _, f := range l.strict(s.p, ts, lo) {
		if !s.reported[f.tool] {
			s.reported[f.tool] = true
			fresh = append(fresh, f)
		}
	}
	return l, fresh
}

// deferredNames are the exposed names of all's tools not in listed.
func deferredNames(all, listed *conduit.ToolSet) []string {
	out := make([]string, 0, max(all.Len()-listed.Len(), 0))
	for t := range all.All() {
		if _, ok := listed.Lookup(t.Exposed); !ok {
			out = append(out, t.Exposed)
		}
	}
	return out
}

// setListing makes l the listing offered from now on.
func (c *Conversation) setListing(l *Listing) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listing = l
	c.o.ToolSet, c.o.NullPaths = l.ToolSet, l.NullPaths
}

// answerSearch answers a search_tools call that the governance let
// through. It lists the matches, each with its exposed name and its
// description's first line. They join the listing once the response's
// calls are all answered. They join in the model's order of the calls
// (see reveals). Several searches of one response run concurrently. This
// way they extend the list the same way every time.
func (c *Conversation) answerSearch(ctx context.Context, call *conduit.Call) (*mcp.CallToolResult, error) {
	query, limit, err := searchArgs(call.Args, c.search.limit)
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
	}
	found := c.find(call, query, limit)
	if rv, i, ok := revealsOf(ctx); ok {
		rv.add(i, found)
	} else {
		c.reveal(ctx, found)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: searchAnswer(query, found)}}}, nil
}

// find searches the tools the conversation was listed for. It leaves out
// those the policy denies the call's principal with the taint of the
// moment. A tool a Tainted rule denies now is not found. It may have been
// listed when the conversation began. A source of the caller's own has no
// policy conduit can ask. It is searched as it was listed.
func (c *Conversation) find(call *conduit.Call, query string, limit int) []*conduit.Tool {
	s := c.search
	ls, governed := c.src.(localSource)
	if !governed {
		return s.all.Search(query, limit)
	}
	lo := &conduit.ListOptions{Principal: call.Principal, Taint: call.Taint}
	var out []*conduit.Tool
	for _, r := range s.all.SearchScored(query, 0) {
		if ls.OffersLocal(r.Tool, lo) {
			out = append(out, r.Tool)
			if len(out) == limit {
				break
			}
		}
	}
	return out
}

// reveal adds the tools found that are not offered yet to the listing, in
// order. It returns their exposed names.
func (c *Conversation) reveal(ctx context.Context, found []*conduit.Tool) []string {
	s := c.search
	var added []string
	c.mu.Lock()
	for _, t := range found {
		if !s.shown[t] {
			s.shown[t] = true
			s.loaded = append(s.loaded, t)
			s.revealed = append(s.revealed, t.Exposed)
			added = append(added, t.Exposed)
		}
	}
	var fallbacks []fallback
	if len(added) > 0 {
		var l *Listing
		l, fallbacks = s.listing()
		c.listing = l
		c.o.ToolSet, c.o.NullPaths = l.ToolSet, l.NullPaths
	}
	c.mu.Unlock()
	traceFallbacks(ctx, c.o.Trace, c.o.Logger, fallbacks)
	return added
}

// reveals collects what the searches of one response found, by the
// calls' positions in it. Execute reveals them in that order once every
// call is answered.
type reveals struct {
	mu    sync.Mutex
	found map[int][]*conduit.Tool
}

type revealsKey struct{}

// callIndexKey carries a local call's position in its response, for
// reveals.
type callIndexKey struct{}

func withReveals(ctx context.Context, rv *reveals) context.Context {
	return context.WithValue(ctx, revealsKey{}, rv)
}

func withCallIndex(ctx context.Context, i int) context.Context {
	return context.WithValue(ctx, callIndexKey{}, i)
}

// revealsOf returns the Execute's reveals and the call's position. It
// finds them when the call runs within a Conversation's Execute.
func revealsOf(ctx context.Context) (*reveals, int, bool) {
	rv, ok := ctx.Value(revealsKey{}).(*reveals)
	i, iok := ctx.Value(callIndexKey{}).(int)
	return rv, i, ok && iok
}

func (rv *reveals) add(i int, found []*conduit.Tool) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.found == nil {
		rv.found = map[int][]*conduit.Tool{}
	}
	rv.found[i] = found
}

// inOrder returns the tools found, in the order of the calls that found
// them. It leaves out the calls that were not answered with their
// matches. An answer that came too late was answered with a timeout.
func (rv *reveals) inOrder(errs []error) []*conduit.Tool {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	var out []*conduit.Tool
	for i, err := range errs {
		if err == nil {
			out = append(out, rv.found[i]...)
		}
	}
	return out
}

// searchArgs reads a search_tools call's query and limit.
func searchArgs(args map[string]any, def int) (string, int, error) {
	q, ok := args["query"].(string)
	if _, has := args["query"]; has && !ok {
		return "", 0, errors.New(`"query" must be a string: the words to search the tools' names and descriptions for.`)
	}
	if strings.TrimSpace(q) == "" {
		return "", 0, errors.New(`"query" is empty: give the words to search the tools' names and descriptions for.`)
	}
	limit := def
	if v, has := args["limit"]; has && v != nil {
		n, ok := wholeNumber(v)
		if !ok || n < 1 {
			return "", 0, fmt.Errorf(`"limit" must be a whole number from 1 to %d.`, MaxSearchLimit)
		}
		limit = int(min(n, MaxSearchLimit))
	}
	return q, limit, nil
}

// wholeNumber reads a JSON number that is a whole number.
func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, false
		}
		return int64(n), true
	case int:
		return int64(n), true
	case int64:
		return n, true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

// searchAnswer is what the model reads of a search. It gives each match's
// exposed name and the first line of its description.
func searchAnswer(query string, found []*conduit.Tool) string {
	if len(found) == 0 {
		return fmt.Sprintf("No tool matches %q. Try other words, or fewer.", query)
	}
	var b strings.Builder
	if len(found) == 1 {
		fmt.Fprintf(&b, "1 tool matches %q; it can be called from now on:\n", query)
	} else {
		fmt.Fprintf(&b, "%d tools match %q, best first; they can be called from now on:\n", len(found), query)
	}
	for _, t := range found {
		b.WriteString(t.Exposed)
		if d := firstLine(toolcall.Description(t.Description)); d != "" {
			b.WriteString(": ")
			b.WriteString(d)
		}
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// maxSummary bounds a match's one-line description, in bytes.
const maxSummary = 200

// firstLine is a description's first line, cut at maxSummary bytes on a
// character boundary.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) <= maxSummary {
		return s
	}
	cut := maxSummary - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// newSearchTool is conduit's search function, for one Conversation.
func newSearchTool() *conduit.Tool {
	return &conduit.Tool{
		Tool: &mcp.Tool{
			Name: SearchToolName,
			Description: "Search the tools you can use by what they do. Few tools are listed at first: find the others here " +
				"by a few words of what you need (\"create a pull request\", \"list kubernetes pods\"). " +
				"The tools found can be called from the next step on.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"query": map[string]any{"type": "string", "description": "What the tool should do, in a few words."},
					"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": MaxSearchLimit,
						"description": fmt.Sprintf("At most this many tools (default %d).", DefaultSearchLimit)},
				},
				"required":             []any{"query"},
				"additionalProperties": false,
			},
		},
		Exposed: SearchToolName,
		Server:  SearchToolServer,
	}
}

// callLocal runs a call of the Conversation's own tool. It goes through
// src's governance when src has one (a Hub or a Client). A source of the
// caller's own cannot govern it, and it is answered as it is.
func callLocal(ctx context.Context, src conduit.Source, t *conduit.LocalTool, args map[string]any, o *conduit.CallOptions) (*mcp.CallToolResult, error) {
	if ls, ok := src.(localSource); ok {
		return ls.CallLocal(ctx, t, args, o)
	}
	return t.Answer(ctx, &conduit.Call{ID: o.ID, Server: t.Tool.Server, Tool: t.Tool.Name, Exposed: t.Tool.Exposed, Def: t.Tool,
		Args: args, Principal: o.Principal, Assigns: o.Assigns, Taint: o.Taint})
}
