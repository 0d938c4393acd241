// Package footprint measures what tool search saves on every request over
// the real tool lists of testdata/servers: the bytes of the request's
// "tools" and the approximate tokens of tool definitions the model reads,
// for each provider, with every tool listed against a Conversation in
// search mode, at its first turn and after three searches revealed tools.
//
// Tokens are approximated as ceil(bytes / 4), the rule of thumb both
// Anthropic's and OpenAI's documentation give (a token is about four
// characters of English); JSON schemas tokenize somewhat denser, so read
// the token columns as ratios, which the approximation preserves. What the
// model reads differs from what is sent only for the providers' own search:
// deferred definitions are sent but kept out of the model's context until
// a search loads them (Anthropic: entries with "defer_loading"; OpenAI
// Responses: a namespace shows its name and description, not its
// functions). For those, the tools a search loads are taken to be those
// conduit's ToolSet.Search finds for the same query (the provider's own
// ranking is not observable offline; Anthropic documents 3 to 5 a search),
// and their definitions are added to what the model reads.
package footprint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Queries are the three searches of a session, from the query set: a pull
// request, a pod's logs, a Slack message.
var Queries = []string{
	"open a pull request from my feature branch into main",
	"show logs of a crashing pod",
	"post a message to the #general Slack channel",
}

// The modes a row measures.
const (
	Full           = "every tool"
	ProviderSearch = "provider's search"
	ConduitSearch  = "conduit's search"
)

// Row is one provider and mode.
type Row struct {
	Provider adapters.Provider
	Mode     string
	// Bytes are the bytes of the request's "tools", at the first turn and
	// after the three searches.
	Bytes, BytesAfter int
	// Read are the bytes of tool definitions the model reads; Tokens and
	// TokensAfter their approximate tokens.
	Read, ReadAfter     int
	Tokens, TokensAfter int
	// Listed counts the definitions in the model's context after the
	// searches (the search tool included).
	Listed int
}

// Tokens approximates the tokens of n bytes of JSON.
func Tokens(n int) int { return (n + 3) / 4 }

// offline is a Source of a tool set alone: calls fail, and search_tools
// is answered by the Conversation.
type offline struct{ ts *conduit.ToolSet }

var errOffline = errors.New("footprint: no server behind the tool set")

func (o offline) ListTools(context.Context) (*conduit.ToolSet, error) { return o.ts, nil }
func (o offline) ListToolsFor(context.Context, *conduit.ListOptions) (*conduit.ToolSet, error) {
	return o.ts, nil
}
func (o offline) CallTool(context.Context, string, any, *conduit.CallOptions) (*mcp.CallToolResult, error) {
	return nil, errOffline
}

// Measure measures ts for every provider: every tool; search, the
// provider's own where it has one, and conduit's. The searches are
// queries.
func Measure(ts *conduit.ToolSet, queries []string) ([]Row, error) {
	var rows []Row
	for _, p := range adapters.Providers() {
		for _, so := range []adapters.SearchOptions{{Mode: adapters.SearchOff}, {Mode: adapters.SearchOn}} {
			r, err := measure(ts, p, so, queries)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
		if rows[len(rows)-1].Mode == ProviderSearch {
			r, err := measure(ts, p, adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: true}, queries)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func measure(ts *conduit.ToolSet, p adapters.Provider, so adapters.SearchOptions, queries []string) (Row, error) {
	ctx := context.Background()
	conv, err := adapters.NewConversation(ctx, offline{ts}, p, &adapters.ConversationOptions{
		ToolSet: ts,
		Listing: adapters.ListingOptions{CacheLast: true},
		Search:  so,
	})
	if err != nil {
		return Row{}, err
	}
	w := p.Wire()
	r := Row{Provider: p}
	l := conv.Listing()
	switch l.SearchTool {
	case "":
		r.Mode = Full
	case adapters.SearchToolName:
		r.Mode = ConduitSearch
	default:
		r.Mode = ProviderSearch
	}
	r.Bytes = toolBytes(w, conv.Tools())
	read := readBytes(conv.Tools())
	r.Read = read
	var revealed []*conduit.Tool
	seen := map[*conduit.Tool]bool{}
	for i, q := range queries {
		if r.Mode == ConduitSearch {
			resp := adaptertest.FakeOf(p).Response("", toolcall.Raw{ID: fmt.Sprintf("search_%d", i), Name: adapters.SearchToolName, Args: map[string]any{"query": q}})
			exec, err := conv.Execute(ctx, resp)
			if err != nil {
				return Row{}, err
			}
			if exec.Errors[0] != nil {
				return Row{}, exec.Errors[0]
			}
			continue
		}
		for _, t := range ts.Search(q, adapters.DefaultSearchLimit) {
			if !seen[t] {
				seen[t] = true
				revealed = append(revealed, t)
			}
		}
	}
	after := conv.Tools()
	r.BytesAfter = toolBytes(w, after)
	switch r.Mode {
	case ProviderSearch:
		// What the provider loads joins what the model reads: the
		// definitions as they would be listed.
		loaded, err := adapters.ListToolSet(conduit.ToolSetOf(revealed...), p, nil)
		if err != nil {
			return Row{}, err
		}
		r.ReadAfter = read + size(loaded.Tools)
		r.Listed = len(readable(after)) + len(revealed)
	default:
		r.ReadAfter = readBytes(after)
		r.Listed = len(after)
	}
	r.Tokens, r.TokensAfter = Tokens(r.Read), Tokens(r.ReadAfter)
	return r, nil
}

// toolBytes is what tools add to a request of w's provider: each puts
// them in a place of its own (Bedrock under toolConfig), so it is the
// request's size with them less its size without.
func toolBytes(w adapters.Wire, tools []map[string]any) int {
	return size(w.Request(toolcall.Request{Tools: tools})) - size(w.Request(toolcall.Request{}))
}

func size(v any) int {
	data, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(data)
}

// readable is what of a tool list the model reads before any search:
// deferred entries dropped, namespaces cut to their name and description.
func readable(tools []map[string]any) []map[string]any {
	var out []map[string]any
	for _, d := range tools {
		switch {
		case d["defer_loading"] == true:
		case d["type"] == "namespace":
			out = append(out, map[string]any{"type": "namespace", "name": d["name"], "description": d["description"]})
		default:
			out = append(out, d)
		}
	}
	return out
}

// readBytes is the size of what the model reads of a tool list.
func readBytes(tools []map[string]any) int {
	r := readable(tools)
	if len(r) == 0 {
		return 0
	}
	return size(r)
}
