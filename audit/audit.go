// Package audit reports what MCP servers' tool definitions tell a model
// that a reviewer should see:
//
//   - instructions aimed at the model;
//   - characters a reviewer cannot see;
//   - references to other servers' tools;
//   - descriptions past the length conduit sends;
//   - parameters that would carry the model's context or the user's
//     secrets out.
//
// It reads definitions only, calls nothing, and decides nothing. `conduit
// audit` is a thin command over [Check]. [pins.Pins] is what keeps a
// reviewed definition from changing.
//
// Every rule is a pattern over text, tuned on the tool lists of real,
// published servers. SECURITY.md publishes what each rule reports over
// them. A rule that fires is a reason to read the definition, not a
// verdict. [Rules] lists them, each with an example of what it reports.
//
// A reviewer may read a finding and judge it harmless. It is then
// accepted ([Accepted], kept in [AcceptFile] beside the configuration)
// for the tool's definition as it is. The acceptance names the
// definition's digest, so it lapses when the definition changes.
package audit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/pins"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Severity orders findings: how likely the text is to work against the
// user if a model follows it.
type Severity int

// The severities, from the least.
const (
	// Low: worth knowing, rarely hostile (a description cut short).
	Low Severity = iota + 1
	// Medium: a pattern hostile definitions use and honest ones sometimes
	// do too (an <IMPORTANT> block, a password parameter).
	Medium
	// High: text that works against the user when a model follows it.
	High
)

var severityNames = map[Severity]string{Low: "low", Medium: "medium", High: "high"}

// String returns "low", "medium" or "high".
func (s Severity) String() string {
	if n, ok := severityNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// ParseSeverity parses "low", "medium" or "high" (in any case).
func ParseSeverity(s string) (Severity, error) {
	for sev, n := range severityNames {
		if strings.EqualFold(s, n) {
			return sev, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q: use low, medium or high", s)
}

// MarshalText writes the severity's name, as JSON does for a finding.
func (s Severity) MarshalText() ([]byte, error) {
	if _, ok := severityNames[s]; !ok {
		return nil, fmt.Errorf("invalid severity %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Rule is one check: what it reports, and an example of text it reports.
type Rule struct {
	ID       string   // such as "conceal-from-user"
	Severity Severity // of every finding of the rule
	Summary  string   // what the rule reports, in one sentence
	// Example is a definition text that the rule reports; Where says
	// which text it is (a tool's description, a parameter's).
	Example, Where string
}

// Finding is one rule's report on one text of one tool.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Server   string   `json:"server"`
	Tool     string   `json:"tool"`
	// Field is where the text is: "description", "title", "name",
	// "annotations.title", or a path into a schema such as
	// "inputSchema.properties.q.description".
	Field string `json:"field"`
	// Message says what was found, in words.
	Message string `json:"message"`
	// Excerpt is the text around what was found, on one line, with the
	// characters a terminal would not show written as \uXXXX.
	Excerpt string `json:"excerpt,omitempty"`
	// Digest is the tool's [pins.ToolDigest], which an [Acceptance]
	// names; "" when the definition cannot be encoded (then the finding
	// cannot be accepted).
	Digest string `json:"digest,omitempty"`
	// Accepted is set by [Accepted.Mark] on a finding accepted for the
	// tool's current definition; Lapsed on one accepted for another
	// definition, which is reported again.
	Accepted bool `json:"accepted,omitempty"`
	Lapsed   bool `json:"lapsed,omitempty"`
}

// Rules returns the rules, in the order Check applies them.
func Rules() []Rule { return slices.Clone(rules) }

// Check audits the servers' tool lists (a server that is down has none)
// and returns the findings: by server in the order given, then by tool
// name, field and rule. Cross-server rules compare each server with the
// others given, so audit the servers of one configuration together.
func Check(servers []conduit.ServerTools) []Finding {
	a := newAuditor(servers)
	var out []Finding
	for _, st := range servers {
		tools := slices.Clone(st.Tools)
		tools = slices.DeleteFunc(tools, func(t *mcp.Tool) bool { return t == nil })
		slices.SortStableFunc(tools, func(x, y *mcp.Tool) int { return strings.Compare(x.Name, y.Name) })
		for _, t := range tools {
			fs := a.tool(st.Server, t)
			if len(fs) > 0 {
				// An error leaves the digest empty: such a finding
				// cannot be accepted, and is always reported.
				d, _ := pins.ToolDigest(t)
				for i := range fs {
					fs[i].Digest = d
				}
			}
			out = append(out, fs...)
		}
	}
	return out
}

// Max returns the highest severity among the findings that are not
// accepted, or 0 when there are none.
func Max(findings []Finding) Severity {
	var m Severity
	for _, f := range findings {
		if !f.Accepted {
			m = max(m, f.Severity)
		}
	}
	return m
}

// Counts returns how many findings each rule has, for every rule (zero
// included).
func Counts(findings []Finding) map[string]int {
	out := make(map[string]int, len(rules))
	for _, r := range rules {
		out[r.ID] = 0
	}
	for _, f := range findings {
		out[f.Rule]++
	}
	return out
}

func sortFindings(fs []Finding) {
	order := map[string]int{}
	for i, r := range rules {
		order[r.ID] = i
	}
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(fieldOrder(a.Field)-fieldOrder(b.Field), strings.Compare(a.Field, b.Field), order[a.Rule]-order[b.Rule])
	})
}

// fieldOrder puts a tool's own texts before its schemas'.
func fieldOrder(f string) int {
	switch {
	case f == "name":
		return 0
	case f == "title":
		return 1
	case f == "description":
		return 2
	case strings.HasPrefix(f, "annotations"):
		return 3
	case strings.HasPrefix(f, "inputSchema"):
		return 4
	}
	return 5
}
