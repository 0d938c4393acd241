package conduit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/conduitmcp/conduit/internal/search"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func searchTool(name, desc string, props ...string) *mcp.Tool {
	p := map[string]any{}
	for _, n := range props {
		p[n] = map[string]any{"type": "string"}
	}
	return &mcp.Tool{Name: name, Description: desc, InputSchema: map[string]any{"type": "object", "properties": p}}
}

// searchSet is a hub's tool set of a few servers, as their tools are named
// and described in the wild.
func searchSet() *ToolSet {
	return NewToolSet(&ToolSetOptions{Namespace: true},
		ServerTools{Server: "github", Tools: []*mcp.Tool{
			searchTool("create_pull_request", "Create a new pull request in a GitHub repository", "owner", "repo", "title", "head", "base"),
			searchTool("list_issues", "List issues in a GitHub repository with filtering options", "owner", "repo", "state"),
			searchTool("get_file_contents", "Get the contents of a file or directory from a GitHub repository", "owner", "repo", "path"),
			searchTool("search_code", "Search for code across GitHub repositories", "q"),
		}},
		ServerTools{Server: "kubernetes", Tools: []*mcp.Tool{
			searchTool("kubectl_get", "Get or list Kubernetes resources by resource type, name, and optionally namespace", "resourceType", "name", "namespace"),
			searchTool("kubectl_logs", "Get logs from Kubernetes resources like pods", "resourceType", "name", "namespace"),
		}},
		ServerTools{Server: "browser", Tools: []*mcp.Tool{
			searchTool("browser_take_screenshot", "Take a screenshot of the current page", "filename", "fullPage"),
			searchTool("browserNavigate", "Navigate to a URL", "url"),
			{Name: "browser_fill_form", Description: "Fill multiple form fields", InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{"fields": map[string]any{
					"type": "array",
					"items": map[string]any{"type": "object", "properties": map[string]any{
						"selector": map[string]any{"type": "string"}, "checkbox_value": map[string]any{"type": "boolean"},
					}},
				}},
			}},
		}},
		ServerTools{Server: "postgres", Tools: []*mcp.Tool{
			{Name: "query", Title: "Run SQL", Description: "Run a read-only SQL query", InputSchema: map[string]any{"type": "object"}},
			searchTool("list_tables", "List the tables of the database", "schema_name"),
		}},
	)
}

func found(tools []*Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Exposed
	}
	return out
}

func TestSearchRanking(t *testing.T) {
	ts := searchSet()
	for _, tc := range []struct {
		query string
		first string
	}{
		// Names split on '_', camelCase and the rest.
		{"create pull request", "github__create_pull_request"},
		{"navigate", "browser__browserNavigate"},
		{"browserNavigate", "browser__browserNavigate"},
		// Abbreviations, both ways: PR in the query, repo in the tool.
		{"open a PR", "github__create_pull_request"},
		{"issues of a repository", "github__list_issues"},
		{"k8s pod logs", "kubernetes__kubectl_logs"},
		{"db tables", "postgres__list_tables"},
		// Stemming.
		{"listing the issue", "github__list_issues"},
		{"screenshots", "browser__browser_take_screenshot"},
		// The title.
		{"run sql", "postgres__query"},
		// A nested parameter name (fields[].checkbox_value).
		{"checkbox", "browser__browser_fill_form"},
	} {
		got := ts.Search(tc.query, 3)
		if len(got) == 0 || got[0].Exposed != tc.first {
			t.Errorf("Search(%q) = %v, want %s first", tc.query, found(got), tc.first)
		}
	}
	// The server id: "kubernetes" finds the server's tools before any other.
	got := found(ts.Search("kubernetes", 0))
	slices.Sort(got)
	if !slices.Equal(got, []string{"kubernetes__kubectl_get", "kubernetes__kubectl_logs"}) {
		t.Errorf("kubernetes: %v", got)
	}
}

func TestSearchResults(t *testing.T) {
	ts := searchSet()
	for _, q := range []string{"", "   ", "the of and", "zzzz unknown", "!!!"} {
		if got := ts.Search(q, 5); got != nil {
			t.Errorf("Search(%q) = %v, want nil", q, found(got))
		}
	}
	var nilSet *ToolSet
	if got := nilSet.Search("issues", 5); got != nil {
		t.Errorf("nil set: %v", got)
	}
	if got := NewToolSet(nil).Search("issues", 5); got != nil {
		t.Errorf("empty set: %v", got)
	}

	// Every match, best first, when limit <= 0; the first limit of them
	// otherwise.
	all := ts.SearchScored("github repository", 0)
	if len(all) != 4 {
		t.Fatalf("github repository: %d matches, want the 4 github tools: %v", len(all), all)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Score > all[i-1].Score || all[i].Score <= 0 {
			t.Errorf("scores out of order: %v", all)
		}
	}
	for limit := 1; limit <= 5; limit++ {
		got := ts.SearchScored("github repository", limit)
		if want := all[:min(limit, len(all))]; !slices.Equal(got, want) {
			t.Errorf("limit %d: %v, want %v", limit, got, want)
		}
	}
	if got := found(ts.Search("github repository", 2)); !slices.Equal(got, found(ts.Search("github repository", 0)[:2])) {
		t.Errorf("Search and SearchScored differ: %v", got)
	}

	// Ties keep the set's order: two tools with the same text.
	twins := NewToolSet(&ToolSetOptions{Namespace: true},
		ServerTools{Server: "a", Tools: []*mcp.Tool{searchTool("fetch", "Fetch a URL"), searchTool("zfetch", "Fetch a URL")}},
		ServerTools{Server: "b", Tools: []*mcp.Tool{searchTool("fetch", "Fetch a URL")}})
	if got := found(twins.Search("url", 0)); !slices.Equal(got, []string{"a__fetch", "a__zfetch", "b__fetch"}) {
		t.Errorf("ties: %v", got)
	}
}

func TestSearchDeterministic(t *testing.T) {
	// Two sets built alike rank alike, whatever the map order of their
	// schemas.
	a, b := searchSet(), searchSet()
	for _, q := range []string{"repository", "name namespace", "page", "list", "get"} {
		ra, rb := a.SearchScored(q, 0), b.SearchScored(q, 0)
		if len(ra) != len(rb) {
			t.Fatalf("%q: %d and %d results", q, len(ra), len(rb))
		}
		for i := range ra {
			if ra[i].Tool.Exposed != rb[i].Tool.Exposed || ra[i].Score != rb[i].Score {
				t.Errorf("%q: %v and %v", q, ra[i], rb[i])
			}
		}
	}
}

func TestSearchTypedSchema(t *testing.T) {
	// A server-side schema (*jsonschema.Schema, as in-process tools have)
	// is read like a decoded one.
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"customer_email": {Type: "string"}}}
	ts := NewToolSet(nil, ServerTools{Server: "crm", Tools: []*mcp.Tool{
		{Name: "lookup", Description: "Look a record up", InputSchema: s},
		{Name: "other", Description: "Something else", InputSchema: json.RawMessage(`{"type":"object","properties":{"email":{}}}`)},
	}})
	if got := found(ts.Search("customer email", 2)); len(got) == 0 || got[0] != "lookup" {
		t.Errorf("customer email: %v", got)
	}
}

func TestSearchFilteredSet(t *testing.T) {
	// A filtered set shares its tools (and their analysis) with its parent
	// but ranks over its own tools only.
	ts := searchSet()
	_ = ts.Search("repository", 1)
	sub := ts.Filter(SkipPolicy, func(tl *Tool) bool { return tl.Server != "github" })
	if got := sub.Search("github repository pull request", 0); len(got) != 0 {
		t.Errorf("filtered out, yet found: %v", found(got))
	}
	if got := found(sub.Search("screenshot", 1)); !slices.Equal(got, []string{"browser__browser_take_screenshot"}) {
		t.Errorf("screenshot: %v", got)
	}
}

func TestSearchConcurrent(t *testing.T) {
	// The index is built once, by whichever search comes first; searches
	// share it (run with -race).
	ts := searchSet()
	want := make(map[string][]string)
	queries := []string{"pull request", "pod logs", "take a screenshot", "sql", "file contents"}
	for _, q := range queries {
		want[q] = found(searchSet().Search(q, 3))
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				q := queries[(g+i)%len(queries)]
				if got := found(ts.Search(q, 3)); !slices.Equal(got, want[q]) {
					errs <- fmt.Sprintf("%q: %v, want %v", q, got, want[q])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestSearchPrincipal(t *testing.T) {
	// Search finds only what the listing holds: a tool the filter hides is
	// never found, and one the policy denies a principal is not found in
	// that principal's listing.
	ctx := context.Background()
	gh := newTestServer(t, "github").echoTools("create_pull_request", "delete_repository", "list_issues")
	ops := newTestServer(t, "ops").echoTools("drop_database", "list_databases")
	hub := newHub(t, []Server{gh.server("github"), ops.server("ops")}, &Options{Policy: NewPolicy(
		Deny("*/delete_*", "ops/drop_*").When(Principal("guest")),
		Allow("*"),
	),
		Filter: func(server string, tool *mcp.Tool) bool { return tool.Name != "list_databases" }})
	guest, err := hub.ListToolsFor(ctx, &ListOptions{Principal: "guest"})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := hub.ListToolsFor(ctx, &ListOptions{Principal: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	queries := []string{"delete repository", "drop database", "database", "list databases", "repo", "delete drop database repository list"}
	for _, q := range queries {
		for _, tl := range guest.Search(q, 0) {
			if strings.Contains(tl.Name, "delete") || strings.Contains(tl.Name, "drop") || tl.Name == "list_databases" {
				t.Errorf("guest found %s for %q", tl.Exposed, q)
			}
		}
		for _, tl := range owner.Search(q, 0) {
			if tl.Name == "list_databases" {
				t.Errorf("owner found the hidden %s for %q", tl.Exposed, q)
			}
		}
	}
	// The owner's listing finds what the guest's leaves out, so the
	// queries above do match those tools.
	if got := found(owner.Search("delete repository", 1)); !slices.Equal(got, []string{"github__delete_repository"}) {
		t.Errorf("owner, delete repository: %v", got)
	}
	if got := found(owner.Search("drop database", 1)); !slices.Equal(got, []string{"ops__drop_database"}) {
		t.Errorf("owner, drop database: %v", got)
	}
	if got := found(guest.Search("list issues", 1)); !slices.Equal(got, []string{"github__list_issues"}) {
		t.Errorf("guest, list issues: %v", got)
	}
}

func FuzzSearch(f *testing.F) {
	for _, q := range []string{"open a PR", "k8s", "ÉtéBon", "", "\xff\xfe", "a_b-c.d", "HTTPServer", strings.Repeat("x", 300)} {
		f.Add(q, 5)
	}
	ts := searchSet()
	f.Fuzz(func(t *testing.T, query string, limit int) {
		res := ts.SearchScored(query, limit)
		if limit > 0 && len(res) > limit {
			t.Fatalf("%d results over a limit of %d", len(res), limit)
		}
		seen := map[string]bool{}
		for i, r := range res {
			if r.Score <= 0 || (i > 0 && r.Score > res[i-1].Score) {
				t.Fatalf("scores: %v", res)
			}
			if seen[r.Tool.Exposed] {
				t.Fatalf("%s twice", r.Tool.Exposed)
			}
			seen[r.Tool.Exposed] = true
			if _, ok := ts.Lookup(r.Tool.Exposed); !ok {
				t.Fatalf("%s is not in the set", r.Tool.Exposed)
			}
		}
	})
}

func TestSearchLearnsBounded(t *testing.T) {
	// Queries are outside input: the stems an index learns from them are
	// bounded, and learning changes no result.
	ts := searchSet()
	want := found(ts.Search("listing issues", 3))
	for i := range search.MaxLearned + 100 {
		ts.Search(fmt.Sprintf("word%dx listings", i), 1)
	}
	if n := ts.searchIndex().Learned(); n > search.MaxLearned {
		t.Errorf("%d stems learned, over %d", n, search.MaxLearned)
	}
	if got := found(ts.Search("listing issues", 3)); !slices.Equal(got, want) {
		t.Errorf("after learning: %v, want %v", got, want)
	}
}
