package cli

import (
	"context"
	"math"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// searchMatch is one line of conduit search's answer.
type searchMatch struct {
	Name        string  `json:"name"`
	Score       float64 `json:"score"`
	Description string  `json:"description,omitempty"`
}

func runSearch(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "search", `
Search the servers' tools as conduit's tool search does (ToolSet.Search: the
tools' names, titles, server ids, descriptions and parameter names, with
stemming and common abbreviations) and print the best matches, best first:

  {"query": "open a PR", "results": [{"name": "github__create_pull_request",
   "score": 9.82, "description": "Create a new pull request ..."}, ...]}

"name" is the exposed name a model calls; "score" says how far apart two
matches are, not how good one is. With --principal, tools the policy denies
outright for that principal are never found. No match is an empty list.`)
	var h hubFlags
	h.register(fs)
	principal := fs.String("principal", "", "the `ID` of whom the search is for, as the policy's principal conditions see it")
	limit := fs.Int("limit", 10, "at most this many `results`; 0 for every match")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usageError("search", "no query: conduit search \"QUERY\"")
	case len(pos) > 1:
		return usageError("search", "one query, quoted: got %d arguments", len(pos))
	case strings.TrimSpace(pos[0]) == "":
		return usageError("search", "the query is empty")
	case *limit < 0:
		return usageError("search", "--limit must be 0 or more")
	}
	hub, _, err := h.openHub(ctx, env, nil, hubOptions{})
	if err != nil {
		return err
	}
	defer hub.Close()
	ts, err := hub.ListToolsFor(ctx, &conduit.ListOptions{Principal: *principal})
	if err != nil {
		return failure("listing tools: %v", err)
	}
	reportSkipped(env, ts)
	out := []searchMatch{}
	for _, r := range ts.SearchScored(pos[0], *limit) {
		out = append(out, searchMatch{
			Name:        r.Tool.Exposed,
			Score:       math.Round(r.Score*1000) / 1000,
			Description: firstLine(r.Tool.Description),
		})
	}
	return writeJSON(env.Stdout, map[string]any{"query": pos[0], "results": out})
}

// firstLine is a description's first line, cut at 160 characters. It is
// cleaned as the listings clean descriptions (toolcall.Description). So a
// server's invisible characters do not reach the terminal.
func firstLine(s string) string {
	s = strings.TrimSpace(toolcall.Description(s))
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if r := []rune(s); len(r) > 160 {
		s = string(r[:159]) + "…"
	}
	return s
}
