package corpus

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

// Size is the number of tools Generate makes.
const Size = 1000

// Sources are the real tool lists the corpus starts from, as written by
// tools/list: server-everything's and server-filesystem's (copied from
// internal/testenv/testdata into the bench module's testdata).
type Sources struct {
	Everything []map[string]any
	Filesystem []map[string]any
}

// LoadSources reads everything-tools.json and filesystem-tools.json from dir.
func LoadSources(dir string) (*Sources, error) {
	var s Sources
	for name, dst := range map[string]*[]map[string]any{"everything": &s.Everything, "filesystem": &s.Filesystem} {
		data, err := os.ReadFile(filepath.Join(dir, name+"-tools.json"))
		if err != nil {
			return nil, err
		}
		var list struct {
			Tools []map[string]any `json:"tools"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, fmt.Errorf("%s-tools.json: %w", name, err)
		}
		if len(list.Tools) == 0 {
			return nil, fmt.Errorf("%s-tools.json lists no tools", name)
		}
		*dst = list.Tools
	}
	return &s, nil
}

var suffixes = []string{"", "_work", "_oss", "_staging", "_prod", "_eu", "_us", "_lab", "_ci", "_legacy", "_sandbox", "_archive", "_team", "_infra", "_data", "_ops"}

// Sentences appended to descriptions, as servers of one kind differ in
// wording; some use typographic punctuation, as many real descriptions do.
var sentences = []string{
	"Only works within allowed directories.",
	"Requires the caller to be authenticated with sufficient scopes.",
	"Results are paginated; pass the returned cursor to get the next page.",
	"Use this when the user asks about recent activity — not for historical audits.",
	"The operation is idempotent: repeating it with the same arguments has no further effect.",
	"Rate limited to 30 requests per minute per token.",
	"Returns an error if the target doesn’t exist.",
	"Prefer the more specific tools when you know the exact identifier…",
	"Output is truncated at 100 KB; ask for a narrower range if you need more.",
	"Timestamps are UTC, in RFC 3339 format.",
	"Note: this tool is read-only and never modifies data.",
	"Set “dry_run” to preview the change without applying it.",
}

// Optional properties some servers add to every tool of theirs.
var extras = []prop{
	opt("timeout_ms", integer("Abort the operation after this many milliseconds", 1, 600000)),
	opt("dry_run", boolean("Validate and describe the change without applying it")),
	opt("trace_id", str("Correlation id to attach to logs")),
	opt("fields", arr(str(""), "Only return these fields")),
	opt("pagination", obj("Pagination", "Pagination controls", opt("cursor", str("Opaque cursor from the previous page")), opt("limit", withDefault(integer("Page size", 1, 500), 50)))),
	opt("labels", mapOf(str(""), "Free-form key/value labels")),
}

// Generate builds the corpus from the sources: servers of every kind in
// rounds, each instance varying its kind's tools (some left out, sentences
// added to descriptions, extra optional properties, its own schema
// dialect), until there are Size tools. The same sources give the same
// corpus.
func Generate(src *Sources) (*Corpus, error) {
	rng := rand.New(rand.NewPCG(20260801, 1))
	kinds := []string{"filesystem", "github", "jira", "slack", "postgres", "kubernetes", "browser", "search", "everything"}
	byName := map[string]family{}
	for _, f := range families {
		byName[f.name] = f
	}
	c := &Corpus{}
	total := 0
	for round := 0; total < Size; round++ {
		if round >= len(suffixes) {
			return nil, fmt.Errorf("corpus: ran out of server names at %d tools", total)
		}
		for _, kind := range kinds {
			if total >= Size {
				break
			}
			id := kind + suffixes[round]
			var tools []map[string]any
			var err error
			switch kind {
			case "filesystem":
				tools, err = vary(rng, src.Filesystem)
			case "everything":
				if round%2 == 1 { // fewer of the test server than of real ones
					continue
				}
				tools, err = vary(rng, src.Everything)
			default:
				tools = instance(rng, byName[kind])
			}
			if err != nil {
				return nil, err
			}
			if n := Size - total; len(tools) > n {
				tools = tools[:n]
			}
			total += len(tools)
			c.Servers = append(c.Servers, Server{ID: id, Tools: tools})
		}
	}
	return c, nil
}

// vary copies a real server's tools, leaving some out and rewording some
// descriptions.
func vary(rng *rand.Rand, real []map[string]any) ([]map[string]any, error) {
	var out []map[string]any
	for _, t := range real {
		if rng.Float64() < 0.1 {
			continue
		}
		cp, err := deepCopy(t)
		if err != nil {
			return nil, err
		}
		if d, ok := cp["description"].(string); ok && rng.Float64() < 0.5 {
			cp["description"] = d + " " + sentences[rng.IntN(len(sentences))]
		}
		out = append(out, cp)
	}
	return out, nil
}

// instance makes one server of a synthetic kind.
func instance(rng *rand.Rand, f family) []map[string]any {
	st := f.style
	if rng.Float64() < 0.25 { // a reimplementation in another language
		st = style(rng.IntN(3))
	}
	var extra []prop
	for _, p := range extras {
		if rng.Float64() < 0.15 {
			extra = append(extra, p)
		}
	}
	var out []map[string]any
	for _, t := range f.tools {
		if rng.Float64() < 0.1 {
			continue
		}
		args := *t.args
		args.props = slices.Clone(args.props)
		for _, p := range extra {
			if !slices.ContainsFunc(args.props, func(q prop) bool { return q.name == p.name }) {
				args.props = append(args.props, p)
			}
		}
		desc := t.desc
		for range rng.IntN(3) {
			desc += " " + sentences[rng.IntN(len(sentences))]
		}
		tool := map[string]any{
			"name":        t.name,
			"title":       title(t.name),
			"description": desc,
			"inputSchema": st.inputSchema(t.name, &args),
			"annotations": map[string]any{
				"readOnlyHint":    t.readOnly,
				"destructiveHint": t.destroy,
				"openWorldHint":   true,
			},
		}
		out = append(out, tool)
	}
	return out
}

func deepCopy(m map[string]any) (map[string]any, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	err = json.Unmarshal(data, &out)
	return out, err
}
