package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/audit"
	"github.com/conduitmcp/conduit/internal/jsonv"
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
The exit status is 1 when a finding at or above --severity that is not
accepted is present, or a server could not be read.

A finding read and judged harmless is accepted, in mcp.audit.json beside the
configuration, for the tool's current definition (its SHA-256, as conduit pin
writes it): when the definition changes, the acceptance lapses and the
finding is reported again. Accepted findings are listed after the others
("accepted": true with --json) and do not count for the exit status.

  conduit audit --accept [SERVER[/TOOL[:RULE]]...]
                    accept the current findings (of every server, or of
                    those named), replacing what was accepted within them

Rules:
`+rulesHelp())
	var h hubFlags
	h.register(fs)
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	sev := fs.String("severity", "medium", "the lowest `severity` that fails: low, medium or high")
	accept := fs.Bool("accept", false, "accept the current findings of every server, or of the SERVER[/TOOL[:RULE]] arguments")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 && !*accept {
		return usageError("audit", "findings are named only with --accept: unexpected argument %q", pos[0])
	}
	threshold, err := audit.ParseSeverity(*sev)
	if err != nil {
		return usageError("audit", "%v", err)
	}
	cfg, err := h.loadConfig()
	if err != nil {
		return err
	}
	var scopes []audit.Scope
	for _, p := range pos {
		sc, err := audit.ParseScope(p)
		if err != nil {
			return usageError("audit", "%v", err)
		}
		if !slices.ContainsFunc(cfg.Servers, func(s conduit.Server) bool { return s.ID == sc.Server }) {
			return usageError("audit", "no server %q in %s", sc.Server, h.config)
		}
		scopes = append(scopes, sc)
	}
	acceptPath := audit.AcceptPath(h.config)
	accepted, err := audit.LoadAccepted(acceptPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		accepted = nil
	case err != nil:
		return inputError("%v; fix it, or remove it and accept the findings again", err)
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
	var down []string
	tools := 0
	for _, l := range listings {
		tools += len(l.Tools)
		if l.Down != nil {
			down = append(down, l.Server)
		}
	}
	if *accept {
		if accepted, err = acceptFindings(env, accepted, acceptPath, scopes, findings, down); err != nil {
			return err
		}
	}
	findings = accepted.Mark(findings)
	open := audit.Open(findings)
	// Accepted findings after the others, in their own order.
	findings = append(slices.Clone(open), slices.DeleteFunc(slices.Clone(findings), func(f audit.Finding) bool { return !f.Accepted })...)
	out := auditJSON{Servers: []pinServerJSON{}, Findings: jsonv.NonNil(findings), Counts: audit.Counts(findings)}
	for _, l := range listings {
		s := pinServerJSON{ID: l.Server, Tools: len(l.Tools)}
		if l.Down != nil {
			s.Error = l.Down.Error()
		}
		out.Servers = append(out.Servers, s)
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, out); err != nil {
			return err
		}
	} else {
		writeFindings(env.Stdout, open)
		if n := len(findings) - len(open); n > 0 {
			if len(open) > 0 {
				fmt.Fprintln(env.Stdout)
			}
			fmt.Fprintf(env.Stdout, "Accepted (%s), not counted:\n\n", acceptPath)
			writeFindings(env.Stdout, findings[len(open):])
		}
	}
	for _, id := range down {
		fmt.Fprintf(env.Stderr, "conduit: server %s is down; its tools were not audited\n", id)
	}
	failing := 0
	bySeverity := map[audit.Severity]int{}
	for _, f := range open {
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
		len(open), plural(len(open), "finding", "findings"))
	if len(parts) > 0 {
		summary += " (" + strings.Join(parts, ", ") + ")"
	}
	if n := len(findings) - len(open); n > 0 {
		summary += fmt.Sprintf(", %d accepted", n)
	}
	fmt.Fprintf(env.Stderr, "conduit: %s\n", summary)
	switch {
	case failing > 0:
		return failure("%d %s at or above %s; read each definition, then accept what is harmless with 'conduit audit --accept%s SERVER/TOOL[:RULE]' and pin the definitions you read with 'conduit pin%s'",
			failing, plural(failing, "finding", "findings"), threshold, h.configArg(), h.configArg())
	case len(down) > 0:
		return failure("%d of %d servers down", len(down), len(listings))
	}
	return nil
}

// acceptFindings records the findings within scopes as accepted (all, when
// no scope is given). They replace what was accepted within those scopes.
// Then it writes the file. The acceptances of a server that is down are
// kept, since it was not read. It returns the set, made when there was none.
func acceptFindings(env *Env, accepted *audit.Accepted, path string, scopes []audit.Scope, findings []audit.Finding, down []string) (*audit.Accepted, error) {
	if accepted == nil {
		accepted = audit.NewAccepted()
	}
	if len(scopes) == 0 {
		scopes = []audit.Scope{{}}
	}
	n, unencodable := 0, 0
	for _, sc := range scopes {
		if sc.Server != "" && slices.Contains(down, sc.Server) {
			fmt.Fprintf(env.Stderr, "conduit: server %s is down; what was accepted of it is kept\n", sc.Server)
			continue
		}
		if sc.Server == "" {
			// Every server but those down (which were not read): a server
			// no longer configured loses its acceptances too.
			for _, a := range accepted.List() {
				if !slices.Contains(down, a.Server) {
					accepted.Forget(audit.Scope{Server: a.Server, Tool: a.Tool, Rule: a.Rule})
				}
			}
		} else {
			accepted.Forget(sc)
		}
		var in []audit.Finding
		for _, f := range findings {
			if sc.Matches(f) {
				in = append(in, f)
			}
		}
		if len(in) == 0 && sc.Server != "" {
			fmt.Fprintf(env.Stderr, "conduit: no finding in %s\n", sc)
		}
		k := accepted.Accept(in)
		n += k
		unencodable += len(in) - k
	}
	if err := accepted.Save(path); err != nil {
		return nil, failure("writing %s: %v", path, err)
	}
	if unencodable > 0 {
		fmt.Fprintf(env.Stderr, "conduit: %d %s could not be accepted: the tool's definition cannot be encoded\n", unencodable, plural(unencodable, "finding", "findings"))
	}
	fmt.Fprintf(env.Stderr, "conduit: accepted %d %s; wrote %s\n", n, plural(n, "finding", "findings"), path)
	return accepted, nil
}

func writeFindings(w io.Writer, findings []audit.Finding) {
	for i, f := range findings {
		if i > 0 {
			fmt.Fprintln(w)
		}
		mark := ""
		if f.Accepted {
			mark = "  (accepted)"
		}
		fmt.Fprintf(w, "%-6s %s  %s/%s  %s%s\n", f.Severity, f.Rule, f.Server, f.Tool, f.Field, mark)
		fmt.Fprintf(w, "       %s\n", f.Message)
		if f.Lapsed {
			fmt.Fprintf(w, "       accepted for an earlier definition of the tool, which changed since\n")
		}
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
