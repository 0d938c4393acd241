package main

import (
	"slices"
	"strings"
	"testing"
)

type searchOut struct {
	Query   string `json:"query"`
	Results []struct {
		Name        string  `json:"name"`
		Score       float64 `json:"score"`
		Description string  `json:"description"`
	} `json:"results"`
}

func (o searchOut) names() []string {
	var out []string
	for _, r := range o.Results {
		out = append(out, r.Name)
	}
	return out
}

func TestSearch(t *testing.T) {
	dir := demoDir(t)
	r := conduit(t, runOpts{dir: dir}, "search", "take a screenshot of the page")
	expect(t, r, 0)
	var out searchOut
	decode(t, r, &out)
	if out.Query != "take a screenshot of the page" || len(out.Results) == 0 || out.Results[0].Name != "web__screenshot" {
		t.Fatalf("screenshot: %s", r)
	}
	for i, res := range out.Results {
		if res.Score <= 0 || (i > 0 && res.Score > out.Results[i-1].Score) {
			t.Errorf("scores not positive and best first: %s", r.stdout)
		}
	}
	if !strings.HasPrefix(out.Results[0].Description, "Take a screenshot") {
		t.Errorf("description %q", out.Results[0].Description)
	}

	// Flags after the query, a limit; a query that matches nothing is an
	// empty list, not null.
	r = conduit(t, runOpts{dir: dir}, "search", "notes", "--limit", "1")
	expect(t, r, 0)
	out = searchOut{}
	decode(t, r, &out)
	if len(out.Results) != 1 || !strings.HasPrefix(out.Results[0].Name, "notes__") {
		t.Errorf("notes --limit 1: %s", r.stdout)
	}
	r = conduit(t, runOpts{dir: dir}, "search", "kubernetes")
	expect(t, r, 0)
	if !strings.Contains(r.stdout, `"results": []`) {
		t.Errorf("no match: %s", r.stdout)
	}
}

func TestSearchPrincipal(t *testing.T) {
	// What the policy denies a principal is never found for that principal.
	policy := []any{
		map[string]any{"deny": []string{"notes/delete_*"}, "principal": []string{"guest"}},
		map[string]any{"allow": []string{"*"}},
	}
	dir := writeConfig(t, policy, "notes", demoServer("notes"), "web", demoServer("web"))
	r := conduit(t, runOpts{dir: dir}, "search", "delete a note", "--limit", "0", "--principal", "guest")
	expect(t, r, 0)
	var out searchOut
	decode(t, r, &out)
	if slices.Contains(out.names(), "notes__delete_note") || len(out.Results) == 0 {
		t.Errorf("guest: %v", out.names())
	}
	r = conduit(t, runOpts{dir: dir}, "search", "delete a note", "--principal", "owner")
	out = searchOut{}
	decode(t, r, &out)
	if got := out.names(); len(got) == 0 || got[0] != "notes__delete_note" {
		t.Errorf("owner: %v", got)
	}
}

func TestSearchUsage(t *testing.T) {
	dir := demoDir(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"search"}, "no query"},
		{[]string{"search", "a", "b"}, "one query, quoted"},
		{[]string{"search", "  "}, "the query is empty"},
		{[]string{"search", "--limit", "-1", "notes"}, "--limit must be 0 or more"},
		{[]string{"search", "--limit", "x", "notes"}, "invalid value"},
	} {
		r := conduit(t, runOpts{dir: dir}, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("conduit %v: want exit 2 and %q, got %s", tc.args, tc.want, r)
		}
	}
	r := conduit(t, runOpts{}, "search", "-h")
	expect(t, r, 0)
	if !strings.HasPrefix(r.stdout, "Usage: conduit search") || !strings.Contains(r.stdout, "--principal") {
		t.Errorf("search -h:\n%s", r)
	}
}
