// Code mode in the adapters: run_code offered, answered, and its taint kept.
package adapters

import (
	"context"
	"fmt"
	"slices"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/codemode"
)

// CodeModeOptions say whether the model is offered run_code. With it,
// the model writes code that calls the tools (see package codemode).
// Each call the code makes is governed as the model's own. It has the
// same principal, taint, policy, approval, hooks and limits. The zero
// value is off.
type CodeModeOptions struct {
	// On offers run_code. The policy governs it as conduit/run_code. So
	// the policy must allow it, by a rule for "conduit/run_code" or "*".
	On bool
	// Direct offers the tools themselves beside run_code. Off by
	// default. run_code alone keeps the listing small. It makes one round
	// trip the rule. A model offered both falls back to calling one by one.
	Direct bool
	// Options bound each run (codemode.Limits). Nil is the defaults.
	Options *codemode.Options
}

// isRunCode reports whether t is a run_code definition of code mode's.
func isRunCode(t *conduit.Tool) bool {
	return t != nil && t.Server == codemode.ToolServer && t.Exposed == codemode.ToolName
}

// codeModeToolSet is what a code-mode listing offers over ts. It offers
// run_code, whose declarations are ts's tools. With Direct, run_code
// comes after them. Otherwise it is alone.
func codeModeToolSet(ts *conduit.ToolSet, o CodeModeOptions) (*conduit.ToolSet, error) {
	if _, taken := ts.Lookup(codemode.ToolName); taken {
		return nil, fmt.Errorf("adapters: code mode: a tool of the servers is exposed as %s", codemode.ToolName)
	}
	def := codemode.Definition(ts, o.Options)
	if o.Direct {
		return ts.With(def), nil
	}
	return conduit.ToolSetOf(def), nil
}

// checkCodeMode refuses code mode when the policy denies run_code itself.
func checkCodeMode(src conduit.Source, principal string, taint []string) error {
	ls, ok := src.(localSource)
	if ok && !ls.OffersLocal(codemode.Definition(nil, nil), &conduit.ListOptions{Principal: principal, Taint: taint}) {
		return fmt.Errorf("adapters: code mode: the policy denies %s/%s (allow it to offer code mode)", codemode.ToolServer, codemode.ToolName)
	}
	return nil
}

// runCodeTool is the local tool that answers a call of def, run_code.
// Its nested calls are made on src against ts. A nil ts is listed when
// it runs.
func runCodeTool(src conduit.Source, def *conduit.Tool, ts *conduit.ToolSet, o CodeModeOptions) *conduit.LocalTool {
	lt := codemode.LocalTool(src, ts, o.Options)
	lt.Tool = def
	return lt
}

// withNestedTaint records, by position, the servers whose output reached
// the code of each run_code call. That is the taint its answer carries.
func (r *runner) withNestedTaint(ctx context.Context, index int) context.Context {
	return codemode.WithReached(ctx, func(servers []string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.exec.nested == nil {
			r.exec.nested = map[int][]string{}
		}
		r.exec.nested[index] = slices.Clone(servers)
	})
}

// listCode lists run_code for a Conversation. With Direct, it is beside
// ts's tools. The Conversation answers it against ts.
func (c *Conversation) listCode(ctx context.Context, ts *conduit.ToolSet, o *ConversationOptions) error {
	if err := checkCodeMode(c.src, o.Principal, o.Taint); err != nil {
		return err
	}
	offered, err := codeModeToolSet(ts, o.Listing.CodeMode)
	if err != nil {
		return err
	}
	def, _ := offered.Lookup(codemode.ToolName)
	c.o.locals = append(c.o.locals, runCodeTool(c.src, def, ts, o.Listing.CodeMode))
	lo := o.Listing
	lo.CodeMode = CodeModeOptions{}
	listing, err := listToolSet(ctx, offered, c.p, &lo, o.Trace, o.Logger)
	if err != nil {
		return err
	}
	c.setListing(listing)
	return nil
}
