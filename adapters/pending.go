package adapters

import (
	"errors"
	"slices"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/codemode"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/turn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Deferred calls, as the adapters report them. A call the pipeline left
// undecided (conduit.ErrDeferred) is not an answer. It is a Pending item
// of the Execution. The application's Ruling on it completes the turn
// (Conversation.Resume).

// Pending is a call that waits for a decision. Either an approver
// deferred it (conduit.Defer), or a handler deferred what its server
// asked during it (conduit.DeferInput). A person is shown it to decide
// on. Conversation.Resume takes a Ruling for it, by ID.
type Pending struct {
	// ID names the call in decisions. It is the call's id in the model's
	// response. The model may give it none, or give the same one to
	// several calls. Then ID is that id, '#' and the call's position from
	// 1 ("#2").
	ID string `json:"id"`
	// Name is the exposed name the model called. Server is the server's
	// id. Tool is the tool's own name there.
	Name   string `json:"name"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Arguments are the call's arguments, as the approver saw them. For
	// a call deferred for input, they are as they were sent.
	Arguments map[string]any `json:"arguments"`
	// Rule is the policy rule that asked for approval. It is "" for a
	// call deferred for input. Reason is the approver's or the handler's.
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Input, for a call deferred while its server asked for input, is
	// what the server asked. The Ruling that allows the call answers it
	// (Ruling.Input). Nil for a deferred approval.
	Input *conduit.Input `json:"input,omitempty"`
	// Nested, for a run_code call, is the call its code made that waits
	// for the decision. Arguments are then run_code's own: the code.
	// Allowing the run_code call sends this call once. The calls made
	// before it are replayed from their records (see Ruling.ForRun).
	Nested *NestedCall `json:"nested,omitempty"`

	// index is the call's position in the response.
	index int
	// replay are the calls a run_code call's code made before Nested.
	replay []codemode.Record
}

// NestedCall is a call made by a run_code call's code.
type NestedCall struct {
	// Name is the tool's exposed name. Server is its server's id. Tool
	// is its own name there.
	Name   string `json:"name"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Arguments are the call's, as the approver saw them.
	Arguments map[string]any `json:"arguments"`
	// Before counts the calls the code made before it. They are replayed
	// on resumption without being sent again.
	Before int `json:"before"`
}

// Ruling is the application's decision on a pending call. It is given
// to Conversation.Resume by the call's Pending.ID. The zero value denies.
type Ruling struct {
	// Allow runs the call, as an approver's conduit.Approve would have.
	// The policy still decides first. Nothing asks the approver again.
	Allow bool
	// Reason, for a denial, is shown to the model.
	Reason string
	// Halt, with a denial, stops the agent loop. The turn's other pending
	// calls are not sent: those allowed in the same Resume, and those
	// left undecided. They are answered as halted, and the Execution is
	// Halted and complete.
	Halt bool
	// Input answers what the server asked (Pending.Input), by the keys of
	// its requests. With Allow, every request not answered yet needs an
	// answer (conduit.Input.Missing).
	Input mcp.InputResponseMap
	// ForRun, with Allow on a run_code call (Pending.Nested), allows
	// more. It also allows every later call of the nested call's tool in
	// the same run. So a loop of writes is one decision. Other tools still ask.
	ForRun bool
}

// pendingOf is the Pending item of call c when its outcome err is a
// deferral.
func pendingOf(c toolcall.Call, err error) (Pending, bool) {
	if err == nil {
		return Pending{}, false
	}
	var d *conduit.Deferral
	if !errors.Is(err, conduit.ErrDeferred) || !errors.As(err, &d) {
		return Pending{}, false
	}
	p := Pending{ID: c.ID, Name: c.Name, Server: c.Server, Tool: c.Tool, Arguments: d.Args, Reason: d.Reason, Input: d.Input, index: c.Index}
	if d.Input == nil {
		p.Rule = d.Rule.String()
	}
	if de := (*codemode.DeferredError)(nil); errors.As(err, &de) {
		p.Nested = &NestedCall{Name: de.Call.Exposed, Server: de.Call.Server, Tool: de.Call.Tool, Arguments: d.Args, Before: de.Made()}
		if p.Nested.Arguments == nil {
			p.Nested.Arguments = map[string]any{}
		}
		p.Arguments, p.replay = jsonv.CloneObject(c.Args), de.Records
	}
	if p.Arguments == nil {
		p.Arguments = map[string]any{}
	}
	return p, true
}

// pendingInOrder puts the runner's pending calls in the model's order.
// Each gets an ID unique in the response.
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

// CallKeys returns the id each of calls is named by while it waits for a
// decision. The result is by position in the model's order. These ids
// are Pending.ID, the keys of Resume's decisions. Each is the call's ID.
// It is ID#N instead when the ID is empty or not unique in the response.
// N is the call's position from 1. Gemini may send no ID.
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
