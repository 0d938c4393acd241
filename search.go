package conduit

// Tool search over a tool set: the ranking itself is internal; a set
// indexes its tools once, on first use.

import (
	"strings"
	"sync"

	"github.com/conduitmcp/conduit/internal/search"
)

// SearchResult is one match of [ToolSet.SearchScored]: a tool and its
// score. Scores are positive and comparable only within one query's
// results: they say how far apart two matches are, not how good a match is.
type SearchResult struct {
	Tool  *Tool
	Score float64
}

// Search returns at most limit tools of the set that match query, best
// first; limit <= 0 means every tool that matches. A tool matches when it
// shares a term (or a synonym of one) with the query; ties keep the set's
// order. It is SearchScored without the scores.
func (ts *ToolSet) Search(query string, limit int) []*Tool {
	res := ts.SearchScored(query, limit)
	if len(res) == 0 {
		return nil
	}
	out := make([]*Tool, len(res))
	for i, r := range res {
		out[i] = r.Tool
	}
	return out
}

// SearchScored ranks the set's tools against query and returns at most
// limit of them, best first, with their scores; limit <= 0 means every tool
// that matches.
//
// The ranking is a field-weighted BM25 (BM25F) over each tool's name (split
// on '_', '-', '.' and camelCase), title, server id, description and
// parameter names (nested ones too), with English stemming (Snowball) and
// common abbreviations read as their expansions (PR, repo, k8s, db, env,
// ...); synonyms of the verbs tools are named with count a little, and a
// query that covers a tool's whole name lifts it. It only ever finds tools
// of the set: a set listed for a principal
// ([Hub.ListToolsFor]) holds nothing that the policy denies that principal,
// and nothing the tool filter hid. The index is built on first use, once
// per set; searching is safe for concurrent use, allocates little and takes
// microseconds over a thousand tools.
func (ts *ToolSet) SearchScored(query string, limit int) []SearchResult {
	if ts == nil || len(ts.tools) == 0 {
		return nil
	}
	return search.Rank(ts.searchIndex(), query, limit, func(doc int, score float64) SearchResult {
		return SearchResult{Tool: ts.tools[doc], Score: score}
	})
}

// searchState is a tool set's search index, built on first use.
type searchState struct {
	once sync.Once
	idx  *search.Index
}

func (ts *ToolSet) searchIndex() *search.Index {
	ts.search.once.Do(func() {
		ts.search.idx = search.NewIndex(len(ts.tools), func(i int, stems search.Stems) *search.Analysis {
			return ts.tools[i].searchDoc(stems)
		})
	})
	return ts.search.idx
}

type searchDocKey struct{}

// searchDoc returns the tool's analysis, made with stems the first time.
// Tool sets that share a tool (a set and its Filter, each principal's
// listing) share its analysis.
func (t *Tool) searchDoc(stems search.Stems) *search.Analysis {
	return t.Memo(searchDocKey{}, func() any {
		title := t.Title
		if t.Annotations != nil && t.Annotations.Title != "" && t.Annotations.Title != title {
			title = strings.TrimSpace(title + " " + t.Annotations.Title)
		}
		return search.Analyze(search.Doc{Name: t.Name, Title: title, Server: t.Server, Description: t.Description, InputSchema: t.InputSchema}, stems)
	}).(*search.Analysis)
}
