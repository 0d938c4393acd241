// Command searcheval prints the retrieval table of BENCHMARKS.md ("Tool
// search"): recall@1, 3, 5 and 10 and MRR of conduit's ToolSet.Search and
// of the plain BM25 baseline over the real tool lists of testdata/servers,
// for the whole query set and by kind of query. With -misses it lists the
// queries each one missed at 5. Run it from the bench module's root:
//
//	go run ./cmd/searcheval [-misses]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/bench/internal/corpus"
	"github.com/conduitmcp/conduit/bench/internal/retrieval"
)

func main() {
	misses := flag.Bool("misses", false, "list the queries missed at 5")
	flag.Parse()
	c, index, err := corpus.LoadServers(corpus.ServersDir)
	if err != nil {
		log.Fatal(err)
	}
	servers, err := c.ServerTools()
	if err != nil {
		log.Fatal(err)
	}
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, servers...)
	qs, err := retrieval.LoadQueries(retrieval.QueriesFile)
	if err != nil {
		log.Fatal(err)
	}
	if err := retrieval.Check(qs, ts); err != nil {
		log.Fatal(err)
	}
	rankers := []struct {
		name string
		rank retrieval.Ranker
	}{
		{"ToolSet.Search", retrieval.Search(ts)},
		{"baseline BM25 (name + description)", retrieval.NewBaseline(ts).Search},
	}
	fmt.Printf("%d queries over %d tools of %d servers\n\n", len(qs), ts.Len(), len(index))
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(w, "ranker\tsubset\tqueries\trecall@1\trecall@3\trecall@5\trecall@10\tMRR\t")
	subsets := []struct {
		label string
		keep  func(retrieval.Query) bool
	}{
		{"all", nil},
		{"natural", func(q retrieval.Query) bool { return q.Kind == retrieval.Natural }},
		{"keywords", func(q retrieval.Query) bool { return q.Kind == retrieval.Keywords }},
		{"tuning", func(q retrieval.Query) bool { return q.Split == retrieval.Tuning }},
		{"held-out", func(q retrieval.Query) bool { return q.Split == retrieval.HeldOut }},
	}
	for _, r := range rankers {
		for _, sub := range subsets {
			res := retrieval.Evaluate(qs, r.rank, sub.keep)
			label := sub.label
			fmt.Fprintf(w, "%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", r.name, label, res.Queries,
				res.Recall[1], res.Recall[3], res.Recall[5], res.Recall[10], res.MRR)
		}
	}
	w.Flush()
	if *misses {
		for _, r := range rankers {
			res := retrieval.Evaluate(qs, r.rank, nil)
			fmt.Printf("\n%s missed %d at 5:\n", r.name, len(res.Misses))
			for _, m := range res.Misses {
				fmt.Printf("  %q\n    want %s\n    got  %s\n", m.Query.Query, strings.Join(m.Query.Want, " "), strings.Join(m.Got, " "))
			}
		}
	}
}
