// Package retrieval measures tool search: a query set written for the
// real tool lists of testdata/servers, each query with the tools that would
// do, scored as recall@k for conduit's ToolSet.Search and for a plain BM25
// over name and description, the baseline.
package retrieval

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"unicode"

	"github.com/conduitmcp/conduit"
)

// Query is one query of the set and the exposed names (server__tool) of
// the tools that answer it. Kind is "natural" (a request in words) or
// "keywords". Split is "tuning" for the queries the ranking's parameters
// were chosen on, "held-out" for those written afterwards and measured
// without changing the ranking.
type Query struct {
	Query string   `json:"query"`
	Kind  string   `json:"kind"`
	Split string   `json:"split"`
	Want  []string `json:"want"`
}

// The kinds and splits of queries.
const (
	Natural  = "natural"
	Keywords = "keywords"
	Tuning   = "tuning"
	HeldOut  = "held-out"
)

// LoadQueries reads a query set.
func LoadQueries(path string) ([]Query, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var qs []Query
	if err := json.Unmarshal(data, &qs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return qs, nil
}

// Check reports queries that name a tool the set does not hold, or that
// are malformed.
func Check(qs []Query, ts *conduit.ToolSet) error {
	var bad []string
	seen := map[string]bool{}
	for i, q := range qs {
		if strings.TrimSpace(q.Query) == "" || len(q.Want) == 0 || (q.Kind != Natural && q.Kind != Keywords) || (q.Split != Tuning && q.Split != HeldOut) {
			bad = append(bad, fmt.Sprintf("query %d %q: needs a query, a kind (natural or keywords), a split (tuning or held-out) and wanted tools", i, q.Query))
		}
		if seen[q.Query] {
			bad = append(bad, fmt.Sprintf("query %d %q: a duplicate", i, q.Query))
		}
		seen[q.Query] = true
		for _, w := range q.Want {
			if _, ok := ts.Lookup(w); !ok {
				bad = append(bad, fmt.Sprintf("query %d %q: no tool %s", i, q.Query, w))
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d problems in the query set:\n%s", len(bad), strings.Join(bad, "\n"))
	}
	return nil
}

// Ranker returns the exposed names of the best k tools for a query.
type Ranker func(query string, k int) []string

// Search is conduit's ToolSet.Search as a Ranker.
func Search(ts *conduit.ToolSet) Ranker {
	return func(q string, k int) []string {
		var out []string
		for _, t := range ts.Search(q, k) {
			out = append(out, t.Exposed)
		}
		return out
	}
}

// Result is a ranker's figures over a query set. Recall[k] is the share of
// queries with at least one wanted tool among the first k results (each
// query's wanted tools are alternatives: any one of them does the job);
// MRR is the mean reciprocal rank of the first wanted tool (0 past 10).
type Result struct {
	Queries int
	Recall  map[int]float64
	MRR     float64
	// Misses are the queries with no wanted tool in the first MissK.
	Misses []Miss
}

// Miss is a query the ranker missed and what it returned instead.
type Miss struct {
	Query Query
	Got   []string
}

// MissK is the cut-off of a miss.
const MissK = 5

// Ks are the cut-offs reported.
var Ks = []int{1, 3, 5, 10}

// Evaluate runs every query for which keep returns true (every query when
// keep is nil) through rank.
func Evaluate(qs []Query, rank Ranker, keep func(Query) bool) Result {
	r := Result{Recall: map[int]float64{}}
	for _, q := range qs {
		if keep != nil && !keep(q) {
			continue
		}
		r.Queries++
		got := rank(q.Query, 10)
		first := slices.IndexFunc(got, func(name string) bool { return slices.Contains(q.Want, name) })
		for _, k := range Ks {
			if first >= 0 && first < k {
				r.Recall[k]++
			}
		}
		if first >= 0 {
			r.MRR += 1 / float64(first+1)
		}
		if first < 0 || first >= MissK {
			r.Misses = append(r.Misses, Miss{q, got[:min(len(got), MissK)]})
		}
	}
	if r.Queries > 0 {
		for k := range r.Recall {
			r.Recall[k] /= float64(r.Queries)
		}
		r.MRR /= float64(r.Queries)
	}
	return r
}

// Baseline is a plain BM25 (k1 1.2, b 0.75) over each tool's name and
// description as one text: words are lower-cased runs of letters and digits
// (so snake_case splits, camelCase does not), with no stemming, no stop
// words, no abbreviations, no other field.
type Baseline struct {
	tools    []*conduit.Tool
	postings map[string][]bposting
	lens     []float64
	avg      float64
}

type bposting struct {
	doc int
	tf  float64
}

// NewBaseline indexes a tool set.
func NewBaseline(ts *conduit.ToolSet) *Baseline {
	b := &Baseline{postings: map[string][]bposting{}}
	for t := range ts.All() {
		doc := len(b.tools)
		b.tools = append(b.tools, t)
		tf := map[string]float64{}
		n := 0
		for _, w := range plainWords(t.Name + " " + t.Description) {
			tf[w]++
			n++
		}
		terms := make([]string, 0, len(tf))
		for w := range tf {
			terms = append(terms, w)
		}
		slices.Sort(terms)
		for _, w := range terms {
			b.postings[w] = append(b.postings[w], bposting{doc, tf[w]})
		}
		b.lens = append(b.lens, float64(n))
		b.avg += float64(n)
	}
	if len(b.tools) > 0 {
		b.avg /= float64(len(b.tools))
	}
	return b
}

func plainWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// Search ranks the tools for q, best first, ties in the set's order.
func (b *Baseline) Search(q string, k int) []string {
	const k1, bb = 1.2, 0.75
	score := make([]float64, len(b.tools))
	n := float64(len(b.tools))
	seen := map[string]bool{}
	for _, w := range plainWords(q) {
		if seen[w] {
			continue
		}
		seen[w] = true
		ps := b.postings[w]
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			score[p.doc] += idf * p.tf * (k1 + 1) / (p.tf + k1*(1-bb+bb*b.lens[p.doc]/b.avg))
		}
	}
	var docs []int
	for d, s := range score {
		if s > 0 {
			docs = append(docs, d)
		}
	}
	slices.SortStableFunc(docs, func(x, y int) int {
		switch {
		case score[x] > score[y]:
			return -1
		case score[x] < score[y]:
			return 1
		}
		return 0
	})
	var out []string
	for _, d := range docs[:min(k, len(docs))] {
		out = append(out, b.tools[d].Exposed)
	}
	return out
}

// QueriesFile is the query set, relative to the bench module's root.
const QueriesFile = "testdata/search-queries.json"
