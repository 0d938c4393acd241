// Package auditcorpus runs the audit over the real tool lists of the
// bench module's testdata and writes what SECURITY.md publishes of it:
// the rules, and per set of tool lists the findings of each rule, with
// examples.
// cmd/auditcounts prints it; a test checks that SECURITY.md is current.
package auditcorpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/audit"
	"github.com/conduitmcp/conduit/bench/internal/corpus"
	"github.com/conduitmcp/conduit/internal/textsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Set is one set of tool lists, audited together as one configuration.
type Set struct {
	Name    string // the id of its section in SECURITY.md
	Source  string // where its lists come from, in words
	Servers []conduit.ServerTools
}

// Tools counts the tools of the set.
func (s Set) Tools() int {
	n := 0
	for _, st := range s.Servers {
		n += len(st.Tools)
	}
	return n
}

// Load reads the sets found in testdata: "servers", the captured lists of
// testdata/servers (in the order of its index.json), when it is there,
// and "corpus", testdata/corpus.json.
func Load(testdata string) ([]Set, error) {
	var sets []Set
	dir := filepath.Join(testdata, "servers")
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err == nil {
		c, _, err := corpus.LoadServers(dir)
		if err != nil {
			return nil, err
		}
		servers, err := c.ServerTools()
		if err != nil {
			return nil, err
		}
		sets = append(sets, Set{Name: "servers", Source: "bench/testdata/servers: what published servers listed, captured from npm", Servers: servers})
	}
	data, err := os.ReadFile(filepath.Join(testdata, "corpus.json"))
	if err != nil {
		return nil, err
	}
	var c struct {
		Servers []struct {
			ID    string      `json:"id"`
			Tools []*mcp.Tool `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("corpus.json: %w", err)
	}
	corpus := Set{Name: "corpus", Source: "bench/testdata/corpus.json: server-everything's and server-filesystem's real lists, varied, and synthetic API-style servers"}
	for _, s := range c.Servers {
		corpus.Servers = append(corpus.Servers, conduit.ServerTools{Server: s.ID, Tools: s.Tools})
	}
	return append(sets, corpus), nil
}

// Begin and End mark a set's section in SECURITY.md.
func Begin(set string) string { return "<!-- audit:" + set + " -->" }

// End marks the end of a set's section.
func End(set string) string { return "<!-- /audit:" + set + " -->" }

// examples is how many findings of a rule a section shows.
const examples = 5

// Section is a set's section of SECURITY.md, markers included: the
// findings of each rule over the set (and how many tools and servers they
// are in), then up to five examples of each rule that fired.
func Section(s Set) string {
	findings := audit.Check(s.Servers)
	var b strings.Builder
	fmt.Fprintln(&b, Begin(s.Name))
	fmt.Fprintf(&b, "%d tools of %d servers (%s), audited as one configuration:\n\n", s.Tools(), len(s.Servers), s.Source)
	fmt.Fprintln(&b, "| rule | severity | findings | tools | servers |")
	fmt.Fprintln(&b, "| --- | --- | ---: | ---: | ---: |")
	byRule := map[string][]audit.Finding{}
	for _, f := range findings {
		byRule[f.Rule] = append(byRule[f.Rule], f)
	}
	for _, r := range audit.Rules() {
		tools, servers := map[string]bool{}, map[string]bool{}
		for _, f := range byRule[r.ID] {
			tools[f.Server+"/"+f.Tool] = true
			servers[f.Server] = true
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d | %d | %d |\n", r.ID, r.Severity, len(byRule[r.ID]), len(tools), len(servers))
	}
	fmt.Fprintf(&b, "| all | | %d | %d | %d |\n", len(findings), countTools(findings), countServers(findings))
	for _, r := range audit.Rules() {
		fs := byRule[r.ID]
		if len(fs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n`%s`", r.ID)
		if len(fs) > examples {
			fmt.Fprintf(&b, " (%d of %d)", examples, len(fs))
		}
		fmt.Fprintln(&b, ":")
		fmt.Fprintln(&b)
		for _, f := range fs[:min(len(fs), examples)] {
			fmt.Fprintf(&b, "- %s/%s, `%s`: %s", f.Server, f.Tool, f.Field, f.Message)
			if f.Excerpt != "" {
				fmt.Fprintf(&b, ": %s", quote(f.Excerpt))
			}
			fmt.Fprintln(&b)
		}
	}
	fmt.Fprintln(&b, End(s.Name))
	return b.String()
}

// RulesSection is the table of the rules in SECURITY.md, markers
// included: each rule's id, severity, what it reports and an example.
func RulesSection() string {
	var b strings.Builder
	fmt.Fprintln(&b, Begin("rules"))
	fmt.Fprintln(&b, "| rule | severity | reports | example (in "+"which text) |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- |")
	for _, r := range audit.Rules() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s (%s) |\n", r.ID, r.Severity, strings.NewReplacer("|", "\\|", "<", "\\<").Replace(r.Summary),
			quote(textsafe.EscapeLine(r.Example)), r.Where)
	}
	fmt.Fprintln(&b, End("rules"))
	return b.String()
}

func countTools(fs []audit.Finding) int {
	m := map[string]bool{}
	for _, f := range fs {
		m[f.Server+"/"+f.Tool] = true
	}
	return len(m)
}

func countServers(fs []audit.Finding) int {
	m := map[string]bool{}
	for _, f := range fs {
		m[f.Server] = true
	}
	return len(m)
}

// quote writes an excerpt as Markdown code, which shows it as it is.
func quote(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + " " + s + " " + fence
}

// Extract returns a set's section of a document, markers included, or ""
// when the document has none.
func Extract(doc, set string) string {
	start := strings.Index(doc, Begin(set))
	if start < 0 {
		return ""
	}
	end := strings.Index(doc[start:], End(set))
	if end < 0 {
		return ""
	}
	return doc[start:start+end+len(End(set))] + "\n"
}
