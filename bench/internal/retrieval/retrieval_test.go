package retrieval

import (
	"math"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestEvaluate(t *testing.T) {
	qs := []Query{
		{Query: "a", Kind: Natural, Split: Tuning, Want: []string{"x"}},      // first
		{Query: "b", Kind: Natural, Split: Tuning, Want: []string{"q", "y"}}, // third
		{Query: "c", Kind: Keywords, Split: HeldOut, Want: []string{"z"}},    // seventh
		{Query: "d", Kind: Keywords, Split: HeldOut, Want: []string{"none"}},
	}
	ranked := map[string][]string{
		"a": {"x", "p"},
		"b": {"p", "r", "y", "q"},
		"c": {"1", "2", "3", "4", "5", "6", "z"},
		"d": {"x"},
	}
	rank := func(q string, k int) []string { return ranked[q][:min(k, len(ranked[q]))] }
	r := Evaluate(qs, rank, nil)
	want := map[int]float64{1: 0.25, 3: 0.5, 5: 0.5, 10: 0.75}
	for k, v := range want {
		if r.Recall[k] != v {
			t.Errorf("recall@%d = %v, want %v", k, r.Recall[k], v)
		}
	}
	if mrr := (1 + 1.0/3 + 1.0/7) / 4; math.Abs(r.MRR-mrr) > 1e-12 {
		t.Errorf("MRR %v, want %v", r.MRR, mrr)
	}
	if len(r.Misses) != 2 || r.Misses[0].Query.Query != "c" || r.Misses[1].Query.Query != "d" || len(r.Misses[0].Got) != MissK {
		t.Errorf("misses %+v", r.Misses)
	}
	held := Evaluate(qs, rank, func(q Query) bool { return q.Split == HeldOut })
	if held.Queries != 2 || held.Recall[10] != 0.5 {
		t.Errorf("held out: %+v", held)
	}
}

func TestCheckAndBaseline(t *testing.T) {
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, conduit.ServerTools{Server: "s", Tools: []*mcp.Tool{
		{Name: "create_issue", Description: "Create an issue"},
		{Name: "list_issues", Description: "List the issues of a repository"},
		{Name: "createIssueComment", Description: "Comment on an issue"},
	}})
	err := Check([]Query{
		{Query: "x", Kind: Natural, Split: Tuning, Want: []string{"s__create_issue"}},
		{Query: "x", Kind: Natural, Split: Tuning, Want: []string{"s__nope"}},
		{Query: "y", Kind: "other", Split: Tuning, Want: []string{"s__list_issues"}},
	}, ts)
	for _, want := range []string{"a duplicate", "no tool s__nope", `query 2 "y": needs`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v, want %q", err, want)
		}
	}
	b := NewBaseline(ts)
	// Plain words: snake_case splits, camelCase does not, no stemming.
	if got := b.Search("list issues", 3); len(got) == 0 || got[0] != "s__list_issues" {
		t.Errorf("list issues: %v", got)
	}
	if got := b.Search("comment", 3); len(got) != 1 || got[0] != "s__createIssueComment" {
		t.Errorf("comment: %v", got)
	}
	if got := b.Search("createissuecomment", 3); len(got) != 1 {
		t.Errorf("the camelCase name is one word: %v", got)
	}
	if got := b.Search("listing", 3); len(got) != 0 {
		t.Errorf("no stemming: %v", got)
	}
}
