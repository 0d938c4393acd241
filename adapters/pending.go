package adapters

import (
	"errors"
	"slices"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/turn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Deferred calls, as the adapters report them: a call the pipeline left
// undecided (conduit.KindDeferred) is a Pending item of the Execution, not
// an answer, and the application's Ruling on it completes the turn
// (Conversation.Resume,).

// Pending is a call that waits for a decision: an approver deferred it
// (conduit.Defer), or a handler deferred what its server asked during it
// (conduit.DeferInput). It is what a person is shown to decide on, and
// what Conversation.Resume takes a Ruling for, by ID.
type Pending struct {
	// ID names the call in decisions: its id in the model's response, or,
	// when the model gave it none or gave the same one to several calls,
	// that id followed by '#' and the call's position from 1 ("#2").
	ID string `json:"id"`
	// Name is the exposed name the model called; Server and Tool the
	// server's id and the tool's own name there.
	Name   string `json:"name"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Arguments are the call's arguments, as the approver saw them (or,
	// deferred for input, as they were sent).
	Arguments map[string]any `json:"arguments"`
	// Rule is the policy rule that asked for approval ("" for a call
	// deferred for input); Reason the approver's or the handler's.
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Input, for a call deferred while its server asked for input, is
	// what the server asked; the Ruling that allows the call answers it
	// (Ruling.Input). Nil for a deferred approval.
	Input *conduit.Input `json:"input,omitempty"`

	// index is the call's position in the response.
	index int
}

// Ruling is the application's decision on a pending call, given to
// Conversation.Resume by the call's Pending.ID. The zero value denies.
type Ruling struct {
	// Allow runs the call, as an approver's conduit.Approve would have:
	// the policy still decides first, and nothing asks the approver again.
	Allow bool
	// Reason, for a denial, is shown to the model.
	Reason string
	// Halt, with a denial, stops the agent loop: the turn's other pending
	// calls allowed in the same Resume are not sent (they are answered
	// as halted), and the Execution is Halted.
	Halt bool
	// Input answers what the server asked (Pending.Input), by the keys of
	// its requests; with Allow, every request not answered yet needs an
	// answer (conduit.Input.Missing).
	Input mcp.InputResponseMap
}

// pendingOf is the Pending item of call c, whose outcome was err, when
// err is a deferral.
func pendingOf(c toolcall.Call, err error) (Pending, bool) {
	if err == nil {
		return Pending{}, false
	}
	var d *conduit.Deferral
	if k, _ := conduit.KindOf(err); k != conduit.KindDeferred || !errors.As(err, &d) {
		return Pending{}, false
	}
	p := Pending{ID: c.ID, Name: c.Name, Server: c.Server, Tool: c.Tool, Arguments: d.Args, Reason: d.Reason, Input: d.Input, index: c.Index}
	if d.Input == nil {
		p.Rule = d.Rule.String()
	}
	if p.Arguments == nil {
		p.Arguments = map[string]any{}
	}
	return p, true
}

// pendingInOrder puts the runner's pending calls in the model's order,
// each with an ID unique in the response.
func (r *runner) pendingInOrder() {
	ps := r.exec.Pending
	if len(ps) == 0 {
		return
	}
	slices.SortFunc(ps, func(a, b Pending) int { return a.index - b.index })
	keys := CallKeys(r.exec.Calls)
	for i := range ps {
		ps[i].ID = keys[ps[i].index]
	}
}

// CallKeys returns, by position in the model's order, the id each of
// calls is named by while it waits for a decision (Pending.ID, the keys
// of Resume's decisions): its ID, or ID#N (N its position from 1) when
// its ID is empty (Gemini may send none) or not unique in the response.
func CallKeys(calls []toolcall.Call) map[int]string {
	ids, pos := make([]string, len(calls)), make([]int, len(calls))
	for k, c := range calls {
		ids[k], pos[k] = c.ID, c.Index
	}
	keys := make(map[int]string, len(calls))
	for k, key := range turn.Keys(ids, pos) {
		keys[pos[k]] = key
	}
	return keys
}
