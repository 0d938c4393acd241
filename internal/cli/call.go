package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/internal/turn"
	"github.com/conduitmcp/conduit/oauth"
)

func runCall(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "call", `
Make one call through the governed pipeline (policy, approval, timeout) and
print the result, shaped for a model, as MCP's CallToolResult JSON. The tool
is named as the model sees it, SERVER__TOOL ('conduit tools' lists them);
the arguments are a JSON object, given as the second argument, or read from
stdin when it is "-" (default {}).

The result is cut to --max-result-tokens of what a model reads of its
content (25000 by default, 0 for none; a server's "maxResultTokens" in the
configuration takes its place for its tools): its beginning is kept and a
notice ends it. --raw prints it whole, as the server sent it.

Progress notifications of a long call are shown on stderr. A call the policy
denies, or that fails, is exit status 1 with the reason; a result with
isError is printed and is exit status 1 too.`)
	var h hubFlags
	var c callFlags
	var bf budgetFlags
	h.register(fs)
	c.register(fs)
	bf.register(fs, false)
	principal := fs.String("principal", "", "the `ID` of whom the call is for, as the policy's principal conditions see it")
	raw := fs.Bool("raw", false, "print the server's result as it came, not shaped for a model")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usageError("call", "name the tool: conduit call SERVER__TOOL [JSON]")
	case len(pos) > 2:
		return usageError("call", "too many arguments: the arguments are one JSON object (quote it)")
	}
	name, argText := pos[0], "{}"
	if len(pos) == 2 {
		argText = pos[1]
	}
	if argText == "-" {
		data, err := readInput(env, "-", "the arguments")
		if err != nil {
			return err
		}
		argText = string(data)
	}
	var callArgs map[string]any
	if err := json.Unmarshal([]byte(argText), &callArgs); err != nil || callArgs == nil {
		return inputError("the arguments must be a JSON object, such as '{\"query\": \"pasta\"}': %s", jsonProblem(err))
	}
	approver, release, err := c.approve.approver("call", env)
	if err != nil {
		return err
	}
	defer release()
	hub, cfg, taint, err := c.openHub(ctx, env, &h, "call", approver)
	if err != nil {
		return err
	}
	defer hub.Close()
	pr := newProgressLine(env)
	// No tool set: the name resolves against every tool the principal's
	// sessions offer, not the policy's listing. A server of "identity":
	// "principal" lists only for its principal. So a tool the policy denies
	// is answered as denied, not as unknown.
	opts := &conduit.CallOptions{Principal: *principal, Taint: taint, CallTimeout: c.timeout,
		Progress: func(_ *conduit.Call, p conduit.Progress) { pr.show(p) }}
	res, err := hub.CallTool(ctx, name, callArgs, opts)
	pr.done()
	if errors.Is(err, conduit.ErrUnknownTool) {
		ts, lerr := hub.ListToolsFor(ctx, &conduit.ListOptions{Principal: *principal, Taint: taint})
		if lerr != nil {
			return failure("listing tools: %v", lerr)
		}
		return inputError("%s", unknownTool(name, ts))
	}
	if err != nil {
		msg := describe(err)
		var ce *conduit.Error
		if errors.As(err, &ce) && *principal != "" && errors.Is(err, oauth.ErrNeedsLogin) && hasOAuth(cfg, ce.Server) {
			msg += "; run '" + principalLoginHint(h.config, ce.Server, *principal) + "'"
		}
		return failure("%s", msg)
	}
	if !*raw {
		res = adapters.ShapeForModel(res)
		// The tool's server may set a budget of its own. The listing is the
		// one the call resolved against, usually still cached.
		own := 0
		if ts, lerr := hub.ListToolsFor(ctx, &conduit.ListOptions{Principal: *principal, Taint: taint}); lerr == nil {
			if tool, ok := ts.Lookup(name); ok {
				own = tool.MaxResultTokens
			}
		}
		limit := turn.ResultBudget(own, bf.resultTokens())
		if limit > 0 {
			if cut, whole := adapters.CutForModel(res, limit); cut != res {
				res = cut
				fmt.Fprintf(env.Stderr, "conduit: the result was cut to its budget of %d tokens (about %d in all; --raw prints it whole)\n", limit, whole)
			}
		}
	}
	if err := writeJSON(env.Stdout, res); err != nil {
		return err
	}
	if res.IsError {
		return failure("%s answered with an error result (isError)", name)
	}
	return nil
}

func jsonProblem(err error) string {
	if err == nil {
		return "it is not an object"
	}
	return err.Error()
}

// unknownTool says a name is not offered, with the names that are close.
func unknownTool(name string, ts *conduit.ToolSet) string {
	var names, near []string
	server, _, _ := strings.Cut(name, "__")
	for t := range ts.All() {
		names = append(names, t.Exposed)
		if t.Server == server || strings.Contains(t.Exposed, name) {
			near = append(near, t.Exposed)
		}
	}
	msg := fmt.Sprintf("no tool %q is offered", name)
	for _, s := range ts.Skipped() {
		if s.Exposed == name {
			return fmt.Sprintf("%s: it was left out (%s: %s)", msg, s.Reason, s.Detail)
		}
	}
	switch {
	case len(near) > 0:
		return msg + "; did you mean one of: " + strings.Join(near, ", ")
	case len(names) > 0 && len(names) <= 12:
		return msg + "; the tools are: " + strings.Join(names, ", ")
	}
	return msg + "; 'conduit tools --provider anthropic' lists them"
}

// progressLine shows a call's progress notifications on stderr: redrawn in
// place on a terminal, one line each otherwise.
type progressLine struct {
	env   *Env
	mu    sync.Mutex
	drawn bool
	over  bool
}

func newProgressLine(env *Env) *progressLine { return &progressLine{env: env} }

func (p *progressLine) show(pr conduit.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Over some transports a notification can arrive after the result.
	if p.over {
		return
	}
	line := fmt.Sprintf("progress %g", pr.Progress)
	if pr.Total > 0 {
		line = fmt.Sprintf("progress %g/%g", pr.Progress, pr.Total)
	}
	if pr.Message != "" {
		line += ": " + pr.Message
	}
	if p.env.StderrTerminal {
		fmt.Fprintf(p.env.Stderr, "\r\033[Kconduit: %s", line)
		p.drawn = true
		return
	}
	fmt.Fprintf(p.env.Stderr, "conduit: %s\n", line)
}

func (p *progressLine) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.over = true
	if p.drawn {
		fmt.Fprintln(p.env.Stderr)
	}
}

// hasOAuth reports whether server id of cfg has an OAuth setting, which
// conduit login logs in to.
func hasOAuth(cfg *config.File, id string) bool {
	for _, s := range cfg.Servers {
		if s.ID == id {
			return s.OAuth != nil
		}
	}
	return false
}
