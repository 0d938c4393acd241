package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/conduitmcp/conduit/audit"
)

type auditJSON struct {
	Servers  []pinServerJSON `json:"servers"`
	Findings []audit.Finding `json:"findings"`
	Counts   map[string]int  `json:"counts"`
}

func runAudit(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "audit", `
Read every configured server's tool definitions (and reach nothing else: no
tool is called) and report what they tell the model that a reviewer should
see, by rule: instructions aimed at the model, characters that show as
nothing, other servers' tools named, descriptions past the length conduit
sends, parameters that would carry the model's context or the user's
secrets out. Every tool a server lists is read, pinned or not.

Findings go to stdout, one block each (with --json, {"servers", "findings",
"counts"}); characters a terminal would not show are written as \uXXXX.
The exit status is 1 when a finding at or above --severity is present, or a
server could not be read.

Rules:
`+rulesHelp())
	var h hubFlags
	h.register(fs)
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	sev := fs.String("severity", "medium", "the lowest `severity` that fails: low, medium or high")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("audit", "unexpected argument %q", pos[0])
	}
	threshold, err := audit.ParseSeverity(*sev)
	if err != nil {
		return usageError("audit", "%v", err)
	}
	cfg, err := h.loadConfig()
	if err != nil {
		return err
	}
	hub, err := h.connect(ctx, env, cfg, hubOptions{noPins: true})
	if err != nil {
		return err
	}
	defer hub.Close()
	ts, err := hub.ListTools(ctx)
	if err != nil {
		return failure("listing tools: %v", err)
	}
	listings := ts.Listings()
	findings := audit.Check(listings)
	out := auditJSON{Servers: []pinServerJSON{}, Findings: nonNil(findings), Counts: audit.Counts(findings)}
	var down []string
	tools := 0
	for _, l := range listings {
		s := pinServerJSON{ID: l.Server, Tools: len(l.Tools)}
		tools += len(l.Tools)
		if l.Down != nil {
			s.Error = l.Down.Error()
			down = append(down, l.Server)
		}
		out.Servers = append(out.Servers, s)
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, out); err != nil {
			return err
		}
	} else {
		writeFindings(env.Stdout, findings)
	}
	for _, id := range down {
		fmt.Fprintf(env.Stderr, "conduit: server %s is down; its tools were not audited\n", id)
	}
	failing := 0
	bySeverity := map[audit.Severity]int{}
	for _, f := range findings {
		bySeverity[f.Severity]++
		if f.Severity >= threshold {
			failing++
		}
	}
	var parts []string
	for _, s := range []audit.Severity{audit.High, audit.Medium, audit.Low} {
		if n := bySeverity[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	summary := fmt.Sprintf("%d %s of %d %s: %d %s", tools, plural(tools, "tool", "tools"), len(listings), plural(len(listings), "server", "servers"),
		len(findings), plural(len(findings), "finding", "findings"))
	if len(parts) > 0 {
		summary += " (" + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintf(env.Stderr, "conduit: %s\n", summary)
	switch {
	case failing > 0:
		return failure("%d %s at or above %s; read each definition, and pin what you accept with 'conduit pin%s'",
			failing, plural(failing, "finding", "findings"), threshold, h.configArg())
	case len(down) > 0:
		return failure("%d of %d servers down", len(down), len(listings))
	}
	return nil
}

func writeFindings(w io.Writer, findings []audit.Finding) {
	for i, f := range findings {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%-6s %s  %s/%s  %s\n", f.Severity, f.Rule, f.Server, f.Tool, f.Field)
		fmt.Fprintf(w, "       %s\n", f.Message)
		if f.Excerpt != "" {
			fmt.Fprintf(w, "       > %s\n", f.Excerpt)
		}
	}
}

func rulesHelp() string {
	var b strings.Builder
	for _, r := range audit.Rules() {
		fmt.Fprintf(&b, "  %s (%s)\n", r.ID, r.Severity)
		line := "     "
		for _, w := range strings.Fields(r.Summary) {
			if len(line)+1+len(w) > 78 {
				b.WriteString(line + "\n")
				line = "     "
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
