package conduit

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompt is one prompt of a [PromptSet]: the server's own definition and
// the name it is offered under. It must not be modified.
type Prompt struct {
	*mcp.Prompt
	// Exposed is the name the prompt is offered under, as for tools. It is
	// server__prompt in a hub. In a client, it is the prompt's own
	// sanitized name after the prefix.
	Exposed string
	// Server is the id of the server that lists the prompt.
	Server string
}

// PromptSet is an ordered set of prompts, named as tools are. Servers are
// in configuration order, and prompts by name within a server. Two
// prompts that would share an exposed name are both left out and
// reported.
type PromptSet struct {
	prompts []*Prompt
	byName  map[string]*Prompt
	skipped []Skipped
}

// Len returns the number of prompts. It is kept beside All for the same
// reason as ToolSet.Len. A PromptSet reads as a ToolSet does, and a count
// needs no walk.
func (ps *PromptSet) Len() int {
	if ps == nil {
		return 0
	}
	return len(ps.prompts)
}

// All yields the prompts in order.
func (ps *PromptSet) All() iter.Seq[*Prompt] {
	return func(yield func(*Prompt) bool) {
		if ps == nil {
			return
		}
		for _, p := range ps.prompts {
			if !yield(p) {
				return
			}
		}
	}
}

// Lookup resolves an exposed name.
func (ps *PromptSet) Lookup(exposed string) (*Prompt, bool) {
	if ps == nil {
		return nil, false
	}
	p, ok := ps.byName[exposed]
	return p, ok
}

// Skipped reports what was left out and why, in server order; Tool holds
// the prompt's own name.
func (ps *PromptSet) Skipped() []Skipped {
	if ps == nil {
		return nil
	}
	return slices.Clone(ps.skipped)
}

// serverPrompts is one server's prompt list, an input of newPromptSet.
type serverPrompts struct {
	Server  string        // the server's id
	Prompts []*mcp.Prompt // as the server listed them, in any order
	// Down, when set, says why the server is unavailable.
	Down error
}

// newPromptSet builds a prompt set from servers' prompt lists. It names
// them as [NewToolSet] names tools. The Options' Filter and Pins are
// about tools, and do not apply. opts may be nil for the defaults.
func newPromptSet(opts *ToolSetOptions, servers ...serverPrompts) *PromptSet {
	namespace, prefix, _, _ := opts.naming()
	ps := &PromptSet{byName: map[string]*Prompt{}}
	var candidates []*Prompt
	for _, sp := range servers {
		if sp.Down != nil {
			ps.skipped = append(ps.skipped, downSkipped(sp.Server, sp.Down))
			continue
		}
		sorted := slices.DeleteFunc(slices.Clone(sp.Prompts), func(p *mcp.Prompt) bool { return p == nil })
		slices.SortStableFunc(sorted, func(a, b *mcp.Prompt) int { return strings.Compare(a.Name, b.Name) })
		listed := map[string]int{}
		for _, p := range sorted {
			listed[p.Name]++
		}
		for _, p := range sorted {
			exposed := exposedName(namespace, sp.Server, prefix, p.Name)
			switch {
			case p.Name == "" || !utf8.ValidString(p.Name):
				ps.skipped = append(ps.skipped, Skipped{Server: sp.Server, Tool: p.Name, Reason: SkipInvalidName,
					Detail: "the server listed a prompt name that is empty or not valid UTF-8"})
				continue
			case listed[p.Name] > 1:
				ps.skipped = append(ps.skipped, Skipped{Server: sp.Server, Tool: p.Name, Exposed: exposed, Reason: SkipCollision,
					Detail: fmt.Sprintf("the server listed this prompt %d times; none of them is offered", listed[p.Name])})
				continue
			}
			candidates = append(candidates, &Prompt{Prompt: p, Exposed: exposed, Server: sp.Server})
		}
	}
	count := map[string]int{}
	for _, p := range candidates {
		count[p.Exposed]++
	}
	for _, p := range candidates {
		if count[p.Exposed] > 1 {
			ps.skipped = append(ps.skipped, Skipped{Server: p.Server, Tool: p.Name, Exposed: p.Exposed, Reason: SkipCollision,
				Detail: fmt.Sprintf("%d prompts would be exposed as %q; all of them are left out", count[p.Exposed], p.Exposed)})
			continue
		}
		ps.prompts = append(ps.prompts, p)
		ps.byName[p.Exposed] = p
	}
	return ps
}

// filter returns the prompts for which keep returns true, the others
// reported with reason.
func (ps *PromptSet) filter(reason SkipReason, keep func(*Prompt) bool) *PromptSet {
	out := &PromptSet{byName: map[string]*Prompt{}, skipped: slices.Clone(ps.skipped)}
	for _, p := range ps.prompts {
		if keep(p) {
			out.prompts = append(out.prompts, p)
			out.byName[p.Exposed] = p
		} else {
			out.skipped = append(out.skipped, Skipped{Server: p.Server, Tool: p.Name, Exposed: p.Exposed, Reason: reason})
		}
	}
	return out
}

// ListPromptsFor returns the prompts of every server that is up. It leaves
// out what the policy denies outright for opts' principal and taint.
// Prompts are governed by the same server/name patterns as tools. A
// condition sees [Call.Method] "prompts/get". opts may be nil. A server's
// prompts are asked for once per session. They are asked for again after
// it says they changed.
func (g *governed) ListPromptsFor(ctx context.Context, opts *ListOptions) (*PromptSet, error) {
	return g.c.listPromptsFor(ctx, opts)
}

// GetPrompt gets a prompt by its exposed name (prompts/get) with args.
// The policy decides, and an "ask" goes to the approver. Then the request
// is made as a tool call's is. The call's time limit and request timeout
// bound it. What the server sends meanwhile is routed to opts.Handlers.
// opts.Meta is sent as the request's _meta. opts' ToolSet, Progress and
// Halt are not used. Hooks and validation are for tool calls. The error,
// if any, is an *Error.
func (g *governed) GetPrompt(ctx context.Context, name string, args map[string]string, opts *CallOptions) (*mcp.GetPromptResult, error) {
	return g.c.getPrompt(ctx, name, args, opts)
}

// listPromptsAs lists the prompts for lf, under their cache hints.
func (c *core) listPromptsAs(ctx context.Context, lf listFor) (*PromptSet, error) {
	lists := make([]serverPrompts, len(c.slots))
	err := c.eachServer(ctx, lf.principal, func(ctx context.Context, i int, id string, cn *conn, err error) {
		if err != nil {
			lists[i] = serverPrompts{Server: id, Down: err}
			return
		}
		prompts, err := listFeature(ctx, c, cn, &cn.feats.prompts, lf, methodListPrompts,
			func(caps *mcp.ServerCapabilities) bool { return caps.Prompts != nil },
			func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) ([]*mcp.Prompt, error) {
				var params *mcp.ListPromptsParams
				if len(meta) > 0 {
					params = &mcp.ListPromptsParams{Meta: meta}
				}
				return collect(ctx, sess.Prompts(ctx, params))
			})
		lists[i] = serverPrompts{Server: cn.srv.ID, Prompts: prompts, Down: err}
	})
	if err != nil {
		return nil, err
	}
	return newPromptSet(&ToolSetOptions{Namespace: c.namespace, Options: &c.Options}, lists...), nil
}

func (c *core) listPromptsFor(ctx context.Context, opts *ListOptions) (*PromptSet, error) {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	ps, err := c.listPromptsAs(ctx, listFor{principal: o.Principal})
	if err != nil || c.Policy == nil {
		return ps, err
	}
	return ps.filter(SkipPolicy, func(p *Prompt) bool {
		return !c.policyDenies(&Call{Method: methodGetPrompt, Server: p.Server, Tool: p.Name, Exposed: p.Exposed, Principal: o.Principal, Taint: o.Taint})
	}), nil
}

func unknownPromptError(name string) *Error {
	return newError(ErrUnknownTool, "", "", fmt.Sprintf("Unknown prompt %q: it is not among the prompts offered.", name), nil)
}

func (c *core) getPrompt(ctx context.Context, name string, args map[string]string, opts *CallOptions) (*mcp.GetPromptResult, error) {
	o := callOptions(opts)
	r := newRequest(methodGetPrompt, o, methodGetPrompt, name)
	var res *mcp.GetPromptResult
	r.resolve = func(ctx context.Context) error {
		ps, err := c.listPromptsAs(ctx, listFor{principal: o.Principal, resolve: true})
		if err != nil {
			return listingError(ctx, err)
		}
		p, ok := ps.Lookup(name)
		if !ok {
			return unknownPromptError(name)
		}
		callArgs := make(map[string]any, len(args))
		for k, v := range args {
			callArgs[k] = v
		}
		call := r.call
		call.Server, call.Tool, call.Exposed, call.Args = p.Server, p.Name, p.Exposed, callArgs
		return nil
	}
	r.do = func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) error {
		var err error
		res, err = sess.GetPrompt(ctx, &mcp.GetPromptParams{Meta: meta, Name: r.call.Tool, Arguments: maps.Clone(args)})
		if err == nil && res == nil {
			err = fmt.Errorf("the server sent an empty result")
		}
		return err
	}
	if _, err := c.run(ctx, r); err != nil {
		return nil, err
	}
	return res, nil
}
