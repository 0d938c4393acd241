package bench

import (
	"path/filepath"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/bench/internal/corpus"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/conduitmcp/conduit/bench/internal/retrieval"
)

// Floors under the published figures of BENCHMARKS.md ("Tool search":
// recall@5 0.986 over all 356 queries, 0.988 over the 86 held out): the
// retrieval test fails when Search falls below them, or to the baseline.
const (
	searchRecall5Floor        = 0.98
	searchRecall5HeldOutFloor = 0.97
)

// realToolSet is a hub's tool set of the real servers' tool lists.
func realToolSet(tb testing.TB) (*conduit.ToolSet, []corpus.IndexEntry) {
	tb.Helper()
	c, index, err := corpus.LoadServers(filepath.Join(fixture.Dir(), corpus.ServersDir))
	if err != nil {
		tb.Fatal(err)
	}
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, mcpTools(tb, c)...)
	if ts.Len() != c.Len() {
		tb.Fatalf("the tool set holds %d of the %d real tools; skipped: %v", ts.Len(), c.Len(), ts.Skipped())
	}
	return ts, index
}

func loadQueries(tb testing.TB, ts *conduit.ToolSet) []retrieval.Query {
	tb.Helper()
	qs, err := retrieval.LoadQueries(filepath.Join(fixture.Dir(), retrieval.QueriesFile))
	if err != nil {
		tb.Fatal(err)
	}
	if err := retrieval.Check(qs, ts); err != nil {
		tb.Fatal(err)
	}
	return qs
}

func TestRealServers(t *testing.T) {
	ts, index := realToolSet(t)
	if ts.Len() < 500 || len(index) < 20 {
		t.Errorf("the real corpus has %d tools of %d servers; it should have at least 500 of many", ts.Len(), len(index))
	}
	for _, e := range index {
		if e.Package == "" || e.Version == "" || e.Captured == "" {
			t.Errorf("%s: index.json must say where the list came from: %+v", e.ID, e)
		}
	}
}

func TestRetrieval(t *testing.T) {
	ts, _ := realToolSet(t)
	qs := loadQueries(t, ts)
	if len(qs) < 100 {
		t.Errorf("%d queries; the set should have at least 100", len(qs))
	}
	search := retrieval.Evaluate(qs, retrieval.Search(ts), nil)
	base := retrieval.Evaluate(qs, retrieval.NewBaseline(ts).Search, nil)
	t.Logf("recall@5: Search %.3f, baseline %.3f over %d queries", search.Recall[5], base.Recall[5], search.Queries)
	if search.Recall[5] < searchRecall5Floor {
		for _, m := range search.Misses {
			t.Logf("missed %q (want %v): %v", m.Query.Query, m.Query.Want, m.Got)
		}
		t.Errorf("Search's recall@5 is %.3f, below the published %.3f", search.Recall[5], searchRecall5Floor)
	}
	if search.Recall[5] <= base.Recall[5] {
		t.Errorf("Search's recall@5 (%.3f) is not above the baseline's (%.3f)", search.Recall[5], base.Recall[5])
	}
	heldOut := retrieval.Evaluate(qs, retrieval.Search(ts), func(q retrieval.Query) bool { return q.Split == retrieval.HeldOut })
	if heldOut.Queries < 50 || heldOut.Recall[5] < searchRecall5HeldOutFloor {
		t.Errorf("held out: recall@5 %.3f over %d queries; want at least %.3f over 50 or more", heldOut.Recall[5], heldOut.Queries, searchRecall5HeldOutFloor)
	}
}

// searchQueries are the queries the benchmarks cycle through: the query
// set's, natural and keywords alike.
func searchQueries(tb testing.TB) []string {
	ts, _ := realToolSet(tb)
	var out []string
	for _, q := range loadQueries(tb, ts) {
		out = append(out, q.Query)
	}
	return out
}

// BenchmarkSearch is one query (of the query set, in turn) over the
// 1,000-tool corpus and over the real tools, the index already built.
func BenchmarkSearch(b *testing.B) {
	queries := searchQueries(b)
	real, _ := realToolSet(b)
	for _, set := range []struct {
		name string
		ts   *conduit.ToolSet
	}{
		{"tools=1000", conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, mcpTools(b, loadCorpus(b))...)},
		{"tools=real", real},
	} {
		b.Run(set.name, func(b *testing.B) {
			set.ts.Search("warm up", 5)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				set.ts.Search(queries[i%len(queries)], 5)
				i++
			}
		})
	}
}

// BenchmarkSearchIndex is the first search of a 1,000-tool set: "new", a
// new set (its tools analyzed, its index built, one query); "filtered", a
// Filter of a searched set, as each principal's ListToolsFor is (the tools'
// analyses shared, the index built, one query).
func BenchmarkSearchIndex(b *testing.B) {
	servers := mcpTools(b, loadCorpus(b))
	b.Run("set=new", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, servers...)
			ts.Search("list open pull requests", 5)
		}
	})
	b.Run("set=filtered", func(b *testing.B) {
		ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, servers...)
		ts.Search("list open pull requests", 5)
		b.ReportAllocs()
		for b.Loop() {
			sub := ts.Filter(conduit.SkipPolicy, func(t *conduit.Tool) bool { return t.Server != "files" })
			sub.Search("list open pull requests", 5)
		}
	})
}
