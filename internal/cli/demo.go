package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/demo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func runVersion(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "version", "Print conduit's version.")
	if _, err := fs.parse(args); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "conduit %s\n", conduit.Version)
	return nil
}

func runDemoServer(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "demo-server", `
Serve one of the demo's MCP servers (notes or web) over stdio, for an
mcp.json entry such as {"command": "conduit", "args": ["demo-server", "notes"]}.`)
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("demo-server", "name one server: %s", strings.Join(demo.ServerNames(), " or "))
	}
	s, err := demo.NewServer(pos[0])
	if err != nil {
		return usageError("demo-server", "%v", err)
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}}
	if err := s.Run(ctx, t); err != nil && ctx.Err() == nil {
		return failure("%v", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func runDemo(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "demo", `
Play conduit's built-in demo: two small MCP servers (notes and web) started
in this process, a policy with allow, ask, deny and taint rules, and one
recorded model turn per provider played through the real adapters
(adapters.Tools and adapters.ExecuteToolCalls). The policy's "ask" is
answered by a script. No network, no API key, no files.`)
	asJSON := fs.Bool("json", false, "print the whole run as JSON: listings, responses, decisions and answers")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("demo", "unexpected argument %q", pos[0])
	}
	var opts *demo.Options
	if env.Telemetry != nil {
		opts = &demo.Options{Trace: env.Telemetry.Trace, ListingTrace: env.Telemetry.ListingTrace}
	}
	rep, err := demo.PlayWith(ctx, opts)
	if err != nil {
		return failure("%v", err)
	}
	if *asJSON {
		return writeJSON(env.Stdout, rep)
	}
	renderDemo(env.Stdout, rep)
	return nil
}

// policyRule is one rule of the demo's configuration, as written.
type policyRule struct {
	Allow   []string `json:"allow"`
	Ask     []string `json:"ask"`
	Deny    []string `json:"deny"`
	Tainted []string `json:"tainted"`
}

func (r policyRule) decision() (string, []string) {
	switch {
	case r.Allow != nil:
		return "allow", r.Allow
	case r.Ask != nil:
		return "ask", r.Ask
	}
	return "deny", r.Deny
}

// names reports whether a conduit.Rule's text is this rule's. The text is
// the decision and patterns, then any conditions. It numbers the rule a
// decision came from.
func (r policyRule) names(text string) bool {
	d, pats := r.decision()
	base := d + " " + strings.Join(pats, ",")
	return text == base || strings.HasPrefix(text, base+" ")
}

func (r policyRule) human() string {
	d, pats := r.decision()
	s := fmt.Sprintf("%-5s %s", d, strings.Join(pats, ", "))
	if r.Tainted != nil {
		s += "  when the conversation holds output from " + strings.Join(r.Tainted, " or ")
	}
	return s
}

// shapes describes a turn's provider, by its name as the report gives it.
func shapes(provider string) adapters.Shapes {
	p, err := adapters.ParseProvider(provider)
	if err != nil {
		return adapters.Shapes{Tools: "?", Answers: "?"}
	}
	return p.Shapes()
}

func renderDemo(w io.Writer, rep *demo.Report) {
	var cfg struct {
		Policy []policyRule `json:"policy"`
	}
	_ = json.Unmarshal(rep.Config, &cfg)
	rules := cfg.Policy

	fmt.Fprintln(w, "conduit demo: two MCP servers in this process, one policy, and one recorded model")
	fmt.Fprintln(w, "turn per provider, played through conduit's real adapters. No network, no API key.")
	fmt.Fprintln(w)
	fmt.Fprint(w, "Servers   ")
	for i, s := range rep.Servers {
		if i > 0 {
			fmt.Fprint(w, ", ")
		}
		fmt.Fprintf(w, "%s (%s, %d tools)", s.ID, s.State, s.Tools)
	}
	fmt.Fprintln(w, "   built with the Go MCP SDK")
	fmt.Fprintln(w, "Policy    first matching rule decides; no match denies")
	for i, r := range cfg.Policy {
		fmt.Fprintf(w, "  %d. %s\n", i+1, r.human())
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Tools offered to the model, in the same order for every provider:\n")
	for _, t := range rep.Tools {
		fmt.Fprintf(w, "  %-20s %s\n", t.Name, t.Description)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "The user asks: %q\n", rep.Prompt)

	for i, t := range rep.Turns {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "── Turn %d · %s · %s\n", i+1, t.Provider, t.Title)
		fmt.Fprintf(w, "   listing  %d tools as %s\n", len(t.Tools), shapes(t.Provider).Tools)
		if len(t.NullPaths) > 0 {
			var np []string
			for _, tool := range rep.Tools {
				for _, p := range t.NullPaths[tool.Name] {
					np = append(np, tool.Name+"."+strings.Join(p, "."))
				}
			}
			fmt.Fprintf(w, "            strict mode; optional properties made nullable: %s\n", strings.Join(np, ", "))
		}
		for _, f := range t.Fallbacks {
			fmt.Fprintf(w, "            %s sent with \"strict\": false: %s\n", f.Tool, f.Reason)
		}
		fmt.Fprintf(w, "   taint    %s\n", listOrNone(t.Taint))
		fmt.Fprintln(w, "   calls")
		for j, c := range t.Calls {
			fmt.Fprintf(w, "     %d. %s %s\n", j+1, c.Name, compact(c.Args, 70))
			if c.Sent != nil {
				fmt.Fprintf(w, "          strict-mode nulls removed before sending: %s\n", compact(c.Sent, 70))
			}
			fmt.Fprintf(w, "          %s\n", verdict(c, rules))
		}
		fmt.Fprintf(w, "   answers  %s\n", shapes(t.Provider).Answers)
		for _, r := range t.Results {
			fmt.Fprintf(w, "     %s\n", compact(r, 140))
		}
		if i == 0 {
			fmt.Fprintf(w, "   The page the model read is now in its context, hidden instruction included:\n     %q\n", demo.Injection)
		}
		if t.Halted {
			fmt.Fprintln(w, "   halted   the approver asked to stop: every call is answered, and the loop ends here.")
		} else {
			fmt.Fprintf(w, "   taint    next turn: %s\n", listOrNone(t.After))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Next: put your servers in mcp.json (see docs/getting-started.md) and run")
	fmt.Fprintln(w, "  conduit servers            conduit tools --provider openai-chat")
	fmt.Fprintln(w, "  conduit agent --provider anthropic --model MODEL \"your prompt\"")
	fmt.Fprintln(w, "or 'conduit demo --json' for everything above as JSON.")
}

func verdict(c demo.CallReport, rules []policyRule) string {
	rule := ""
	for i, r := range rules {
		if !r.names(c.Rule) {
			continue
		}
		rule = fmt.Sprintf(" (rule %d)", i+1)
		if r.Tainted != nil {
			rule = fmt.Sprintf(" (rule %d: the conversation holds output from %s)", i+1, strings.Join(r.Tainted, " or "))
		}
		break
	}
	var b strings.Builder
	switch {
	case c.Decision == "":
		b.WriteString("not offered to the model: refused, nothing sent")
		return b.String()
	case c.Decision == "ask":
		fmt.Fprintf(&b, "ask%s → scripted approver: %s", rule, c.Approval)
	default:
		fmt.Fprintf(&b, "%s%s", c.Decision, rule)
	}
	switch c.Outcome {
	case "ok":
		b.WriteString(" → sent, ok")
	case "denied":
		b.WriteString(" → denied, nothing sent")
	default:
		fmt.Fprintf(&b, " → %s: %s", c.Outcome, c.Message)
	}
	return b.String()
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// compact is v as one line of JSON with long strings shortened, for reading.
func compact(v any, maxString int) string {
	data, _ := json.Marshal(shorten(v, maxString))
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(data))
}

func shorten(v any, n int) any {
	switch x := v.(type) {
	case string:
		if utf8.RuneCountInString(x) > n {
			r := []rune(x)
			return string(r[:n]) + "…"
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = shorten(e, n)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = shorten(e, n)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = shorten(e, n)
		}
		return out
	}
	return v
}
