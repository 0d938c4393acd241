package adapters

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/codemode"
	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/conduitmcp/conduit/internal/errtext"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/turn"
	"github.com/conduitmcp/conduit/store/once"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resuming a turn whose calls were deferred. The decisions come, and
// each decided call is claimed (StateOptions.Claims). The claim sends it
// at most once, whoever else resumes the same state. The turn's answers
// are completed in the model's order.

// Errors of the calls of a resumed turn. Each is the cause of a
// *conduit.Error, for errors.Is.
var (
	// ErrDecidedElsewhere: another Resume of the same state decided the
	// call first. It has recorded no outcome: it is running, or it died.
	// Whether the call was sent is unknown, and it is not sent again.
	ErrDecidedElsewhere = errors.New("adapters: the call was decided by another resumption of the conversation")
	// ErrToolChanged: the tool's definition changed after the call was
	// deferred. The decision was taken on the old one, so it is not applied.
	ErrToolChanged = errors.New("adapters: the tool's definition changed after the call was deferred")
	// ErrNoStore: ResumeConversation got a state with pending calls, but
	// no store for their claims. The store is StateOptions.Claims, or the
	// source's conduit.Options.Store.
	ErrNoStore = errors.New("adapters: no store was given for the claims of the calls a resumed state decides: " +
		"a copy of the state resumed by another process (or by this one after a restart) could send them again; " +
		"give conduit.Options.Store (store/sqlitestore for the processes of one machine, store/redisstore for several machines), " +
		"or store.NewMemory() to accept at most once within this process only")
	// ErrClaimsUnavailable: the store of claims could not be reached. The
	// call stays pending, unsent, and can be resumed again.
	ErrClaimsUnavailable = errors.New("adapters: the call could not be claimed")
)

// pausedTurn is a turn whose calls are not all answered.
type pausedTurn struct {
	n int
	// key is the turn's own, random. It names its calls' claims. Branches
	// resumed from one saved state thus never find each other's claims.
	// Such branches are a turn answered again, or an older state kept.
	key    string
	taint  []string // the taint its calls ran with
	halted bool
	calls  []turnCall // every call of the response, in order
}

// turnCall is one call of a paused turn: answered, or pending.
type turnCall struct {
	id, name, server, tool string
	answer                 map[string]any
	err                    error
	reached                bool
	// budget is what the result budget did to the answer. demand is what
	// the answer asks of the turn's budget when the turn goes on.
	budget  toolcall.Budgeted
	demand  int
	pending *pendingCall
	// nested, for an answered run_code call, are the servers its code
	// read. Their taint comes with the answer.
	nested []string
}

// pendingCall is a pending call, with what its claim and its check need.
type pendingCall struct {
	Pending
	digest string
	round  int
}

// newPausedTurn records turn n, whose calls ran with taint, from its
// Execution.
func newPausedTurn(n int, taint []string, exec *Execution) *pausedTurn {
	t := &pausedTurn{n: n, key: rand.Text(), taint: slices.Clone(taint), halted: exec.Halted, calls: make([]turnCall, len(exec.Results))}
	for _, c := range exec.Calls {
		t.calls[c.Index] = turnCall{id: c.ID, name: c.Name, server: c.Server, tool: c.Tool}
	}
	for i := range t.calls {
		tc := &t.calls[i]
		tc.answer, tc.err = exec.Results[i], exec.Errors[i]
		tc.reached = exec.Results[i] != nil && Reached(exec.Errors[i])
		if exec.Results[i] != nil && exec.Errors[i] == nil {
			tc.nested = exec.nested[i]
		}
		if i < len(exec.Budgets) {
			tc.budget, tc.demand = exec.Budgets[i], exec.demand(i)
		}
	}
	for _, c := range exec.Calls {
		if c.Def != nil && slices.Contains(exec.locals, c.Def) {
			t.calls[c.Index].reached = false
		}
	}
	for _, p := range exec.Pending {
		var dg string
		for _, c := range exec.Calls {
			if c.Index == p.index && !slices.Contains(exec.locals, c.Def) {
				dg = c.Def.Digest()
			}
		}
		t.calls[p.index].pending = &pendingCall{Pending: p, digest: dg}
	}
	return t
}

// document is t as the state records it.
func (t *pausedTurn) document() *turnV1 {
	d := &turnV1{N: t.n, Key: t.key, Taint: slices.Clone(t.taint), Halted: t.halted, Calls: make([]callV1, len(t.calls))}
	for i, tc := range t.calls {
		c := callV1{ID: tc.id, Name: tc.name, Server: tc.server, Tool: tc.tool, Answer: tc.answer, Reached: tc.reached,
			Budget: budgetDocument(tc.budget, tc.demand), Nested: tc.nested}
		if p := tc.pending; p != nil {
			c.Answer, c.Budget = nil, nil
			c.Pending = &pendingV1{ID: p.ID, Arguments: p.Arguments, Digest: p.digest, Rule: p.Rule, Reason: p.Reason, Round: p.round,
				Nested: p.Nested, Replay: p.replay}
			if in := p.Input; in != nil {
				c.Pending.Input = &inputV1{Requests: in.Requests, Responses: in.Responses, RequestState: in.RequestState, Resend: in.Resend, Task: in.Task}
			}
		} else if ce := (*conduit.Error)(nil); errors.As(tc.err, &ce) {
			c.Err = &errV1{Kind: ce.Kind.String(), Message: ce.Message, Halt: ce.Halt}
		} else if tc.err != nil {
			c.Err = &errV1{Kind: conduit.ErrInternal.String(), Message: tc.err.Error()}
		}
		d.Calls[i] = c
	}
	return d
}

// pausedTurnOf is the turn a state records.
func pausedTurnOf(d *turnV1) *pausedTurn {
	t := &pausedTurn{n: d.N, key: d.Key, taint: slices.Clone(d.Taint), halted: d.Halted, calls: make([]turnCall, len(d.Calls))}
	for i, c := range d.Calls {
		tc := turnCall{id: c.ID, name: c.Name, server: c.Server, tool: c.Tool, answer: c.Answer, reached: c.Reached,
			budget: c.Budget.budgeted(), demand: c.Budget.demand(), nested: c.Nested}
		if e := c.Err; e != nil {
			k, _ := kindOf(e.Kind)
			tc.err = &conduit.Error{Kind: k, Server: c.Server, Tool: c.Tool, Message: e.Message, Halt: e.Halt}
		}
		if p := c.Pending; p != nil {
			pc := &pendingCall{Pending: Pending{ID: p.ID, Name: c.Name, Server: c.Server, Tool: c.Tool, Arguments: p.Arguments,
				Rule: p.Rule, Reason: p.Reason, Nested: p.Nested, index: i, replay: p.Replay}, digest: p.Digest, round: p.Round}
			if pc.Arguments == nil {
				pc.Arguments = map[string]any{}
			}
			if in := p.Input; in != nil {
				pc.Input = &conduit.Input{Requests: in.Requests, Responses: in.Responses, RequestState: in.RequestState, Resend: in.Resend, Task: in.Task}
			}
			tc.pending = pc
			tc.err = deferredError(pc)
		}
		t.calls[i] = tc
	}
	return t
}

// deferredError is the error that stands for pending call p in an
// Execution.
func deferredError(p *pendingCall) *conduit.Error {
	return &conduit.Error{Kind: conduit.ErrDeferred, Server: p.Server, Tool: p.Tool,
		Message: errtext.Deferred("The call to "+p.Name, p.Input != nil, p.Reason),
		Err:     &conduit.Deferral{Reason: p.Reason, Args: p.Arguments, Input: p.Input}}
}

// ResumeConversation restores a Conversation from its state, over src,
// for provider p. The state is as State returned it, in this process or
// another. The conversation goes on as if it had never left. Its pending
// calls, if any, wait for Resume.
//
// o gives what the state does not carry. That is timeouts, handlers, the
// result budget and the read tool. It also says how answers and tools
// are written. Give the options the conversation was made with. They are
// the application's, not the conversation's. Their Principal, Taint and
// Search.Revealed are the state's. Their State.Keys must hold the key
// that sealed the state. o is required: it holds the keys.
//
// A state that is not authentic is refused with an error matching
// ErrInvalidState. It may be altered, truncated, or sealed by no key of
// o's. It may be of a version this release does not read. A state whose
// TTL has passed is refused with ErrStateExpired. Nothing is listed or
// sent then.
//
// The tools offered are the state's, found again in src's listing for
// the principal (or in o.ToolSet). A tool may have changed since (its
// digest differs), or be no longer listed. Then it is left out of the
// offer, with a warning in Listing.Warnings. Its pending calls are not
// made on the decision taken on the old one (see Resume). The options
// must list the tools as the conversation's did. Strict mode's null
// paths are compared.
//
// A state with pending calls needs a store for their claims. Every
// process that may resume the state must share it: StateOptions.Claims,
// or src's conduit.Options.Store. Without one, the state is refused with
// ErrNoStore, before anything is listed or sent. The in-memory store a
// hub makes for itself would not do. Another process resuming a copy of
// the state would not see its claims.
//
// The Conversation's own tools are the options', not the state's. Given
// the same Search and Read, they are listed as before. Conduit's search
// tool and the read tool come after the state's tools. So Tools is
// byte-identical to the saved conversation's, and prompt caching holds.
//
// The results the read tool kept are not in the state (see
// ReadOptions). A read of one kept before the save is answered that it
// is no longer kept. The answer tells the model to ask again for less.
// This holds unless o.Read.Keeper is a Keeper the saving process shared.
// A pending call of read_result is answered by the restored
// Conversation, as conduit/read_result.
func ResumeConversation(ctx context.Context, src conduit.Source, p Provider, state []byte, o *ConversationOptions) (*Conversation, error) {
	if _, err := p.valid(); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, ErrNoStateKey
	}
	sc, err := o.State.config(src)
	if err != nil {
		return nil, err
	}
	st, err := openState(sc, state)
	if err != nil {
		return nil, err
	}
	if st.Provider != p.String() {
		return nil, fmt.Errorf("adapters: the state is of a conversation with %s, not %s", st.Provider, p)
	}
	if st.Turn != nil && !sc.given {
		return nil, ErrNoStore
	}
	if o.Principal != "" && o.Principal != st.Principal {
		return nil, fmt.Errorf("adapters: the state is of a conversation for another principal than %q", o.Principal)
	}
	ts := o.ToolSet
	if ts == nil {
		if ts, err = src.ListToolsFor(ctx, &conduit.ListOptions{Principal: st.Principal}); err != nil {
			return nil, err
		}
	}
	kept, warnings := findTools(ts, st.Tools)
	ro := *o
	ro.ToolSet, ro.Principal, ro.Taint = conduit.ToolSetOf(kept...), st.Principal, st.ListTaint
	ro.Search.Revealed = st.Revealed
	c, err := newConversation(ctx, src, p, ro.ToolSet, &ro, st.ID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(warnings) > 0 {
		l := *c.listing
		l.Warnings = append(slices.Clip(l.Warnings), warnings...)
		c.listing = &l
	}
	if !sameNullPaths(c.o.NullPaths, st.NullPaths, kept) {
		return nil, errors.New("adapters: the options list the tools otherwise than the saved conversation did (strict mode's null paths differ): give the ListingOptions it was made with")
	}
	c.taint, c.turns = slices.Clone(st.Taint), st.Turns
	if st.Turn != nil {
		c.turn = pausedTurnOf(st.Turn)
	}
	return c, nil
}

// findTools finds the tools refs name in ts, in refs' order. Each has
// the same exposed name and definition. The others are left out, each
// with a warning.
func findTools(ts *conduit.ToolSet, refs []toolRef) ([]*conduit.Tool, []toolcall.Warning) {
	kept := make([]*conduit.Tool, 0, len(refs))
	var warnings []toolcall.Warning
	for _, r := range refs {
		t, why := findTool(ts, r.Server, r.Tool, r.Exposed, r.Digest)
		if t == nil {
			warnings = append(warnings, toolcall.Warning{Tool: r.Exposed, Message: "offered when the conversation was saved, but left out: " + why})
			continue
		}
		kept = append(kept, t)
	}
	return kept, warnings
}

// findTool finds server's tool in ts, exposed as exposed, with the
// definition of digest dg. Else it says why not.
func findTool(ts *conduit.ToolSet, server, tool, exposed, dg string) (*conduit.Tool, string) {
	name, ok := ts.ExposedName(server, tool)
	if !ok {
		for _, s := range ts.Skipped() {
			if s.Server == server && s.Reason == conduit.SkipServerDown {
				return nil, "its server is down"
			}
		}
		return nil, "it is no longer offered"
	}
	t, _ := ts.Lookup(name)
	if name != exposed || dg == "" || t.Digest() != dg {
		return nil, "its definition changed"
	}
	return t, ""
}

// sameNullPaths reports whether a listing's null paths are those a
// state recorded. It compares only the tools kept.
func sameNullPaths(got, saved map[string][]driver.NullPath, kept []*conduit.Tool) bool {
	for _, t := range kept {
		a, b := got[t.Exposed], saved[t.Exposed]
		if !slices.EqualFunc(a, b, func(x, y driver.NullPath) bool { return slices.Equal(x, y) }) {
			return false
		}
	}
	return true
}

// Resume decides pending calls of the last turn (Execution.Pending),
// each by its Pending.ID. It returns the turn's Execution. When no call
// is left pending, Results answer every call of the response in the
// model's order. Those answered before the deferral are included, and
// they are never run again.
//
// A pending call without a decision stays pending. So does one whose
// claim could not be made because the store is unavailable. Its Errors
// entry matches ErrClaimsUnavailable, and it can be decided again later.
//
// A call allowed is sent as an approver's conduit.Approve would have
// sent it. It runs with the taint the turn's calls ran with. The policy
// still decides first, and the approver is not asked. Hooks, validation
// and timeouts apply. A call deferred for input goes on with
// Ruling.Input. A call denied is answered with its Reason and sent
// nothing.
//
// A halt is a denial with Halt, or a halt of the turn before. It answers
// the calls allowed with it as halted, unsent. So it does the calls left
// without a decision. It makes the Execution Halted and complete.
//
// A call whose tool changed since it was deferred is not made on the
// decision. Its answer says why:
//
//   - the definition's digest differs: ErrToolChanged;
//   - the tool is no longer offered: ErrUnknownTool;
//   - its server is down: ErrUnavailable.
//
// Every decided call is sent at most once, however many times the same
// state is resumed (see StateOptions.Claims). Another resumption may have
// decided a call first. Then the call gets that one's answer. While that
// one has recorded none, the answer is an error matching
// ErrDecidedElsewhere.
//
// The answers of the calls sent are written within the turn's budget.
// What the answers written before them kept is taken off it. The calls
// still pending hold their places (see BudgetOptions). Budgets has every
// answer's figures, those written before included.
//
// The Execution's Calls are the turn's calls that resolved. Only those
// this Resume sent carry their arguments.
//
// Resume fails, deciding nothing and sending nothing, when:
//
//   - no call is pending (ErrNothingPending);
//   - a decision names no pending call;
//   - a decision allows a call deferred for input, but does not answer
//     all it asked.
func (c *Conversation) Resume(ctx context.Context, decisions map[string]Ruling) (*Execution, error) {
	c.resumeMu.Lock()
	defer c.resumeMu.Unlock()
	c.mu.Lock()
	t, o := c.turn, c.o
	c.mu.Unlock()
	if t == nil {
		return nil, ErrNothingPending
	}
	d, err := c.p.valid()
	if err != nil {
		return nil, err
	}
	o.Taint = slices.Clone(t.taint)
	ds := turnDecisions(decisions)
	if err := t.machine(0, nil).Check(ds); err != nil {
		return nil, decisionError(err)
	}
	fresh, err := c.src.ListToolsFor(ctx, &conduit.ListOptions{Principal: o.Principal})
	if err != nil {
		return nil, err
	}
	offered := c.Listing().ToolSet
	byIndex := map[int]toolcall.Call{}
	m := t.machine(o.turnBudget(), func(i int) int {
		byIndex[i] = c.callOf(i, &t.calls[i], fresh, offered)
		return o.withinTurn(byIndex[i], o.turnBudget())
	})
	jobs, err := m.Decide(ds)
	if err != nil {
		return nil, decisionError(err)
	}

	exec := &Execution{Results: make([]map[string]any, len(t.calls)), Errors: make([]error, len(t.calls)),
		Budgets: make([]toolcall.Budgeted, len(t.calls)), demands: make([]int, len(t.calls)), locals: c.localTools()}
	r := &runner{src: c.src, d: d, o: &o, ts: fresh, exec: exec, halt: make(chan struct{}), resumed: map[int]resumedCall{},
		results: make([]*mcp.CallToolResult, len(t.calls))}
	res := &resumed{settled: map[int]bool{}, reached: map[int]bool{}, again: map[int]Pending{}, nested: map[int][]string{}}
	tickets := map[int]*once.Ticket{}
	var send []toolcall.Call
	allow := conduit.Approve()
	// written settles a call answered here, alone, without being sent.
	written := func(i int) {
		res.settled[i] = true
		_ = m.Wrote(i, turn.Written{Demand: exec.demand(i), Kept: exec.Budgets[i].Kept})
	}
	for _, j := range jobs {
		i := j.Index
		tc := &t.calls[i]
		p := tc.pending
		call := byIndex[i]
		key := c.claimKey(t, i)
		ticket, found, err := once.Claim(ctx, c.state.claims, key, c.state.ttl)
		if err != nil {
			exec.Errors[i] = &conduit.Error{Kind: conduit.ErrUnavailable, Server: p.Server, Tool: p.Tool,
				Message: "The call to " + p.Name + " was not decided: " + err.Error() + ".", Err: errors.Join(ErrClaimsUnavailable, err)}
			// It stays pending, and can be decided again.
			_ = m.Settle(i, turn.Outcome{Waiting: true, Input: p.Input})
			continue
		}
		switch found.State {
		case once.Recorded:
			if rec, ok := readOutcome(found); ok {
				exec.Results[i], exec.Errors[i], exec.Budgets[i] = rec.Answer, rec.error(p), rec.Budget.budgeted()
				exec.demands[i] = rec.Budget.demand()
				res.reached[i] = rec.Reached
				written(i)
				continue
			}
			fallthrough
		case once.Unknown:
			err := &conduit.Error{Kind: conduit.ErrUnavailable, Server: p.Server, Tool: p.Tool, Err: ErrDecidedElsewhere,
				Message: "The call to " + p.Name + " was decided by another resumption of this conversation, which has not recorded its outcome: whether it was made is unknown, and it was not made again."}
			exec.Results[i], exec.Budgets[i] = write(d, call, nil, err, &o.Answers)
			exec.Errors[i] = err
			written(i)
			continue
		}
		var dec Ruling
		if j.Decision != nil {
			dec = decisions[p.ID]
		}
		err = c.refusal(call, p, dec, j.Halted, fresh)
		if err == nil {
			send = append(send, call)
			tickets[i] = ticket
			r.resumed[i] = resumedCall{approval: &allow, input: j.Input}
			if n := p.Nested; n != nil {
				cr := &codemode.Resume{Replay: p.replay, Approval: &allow}
				if dec.ForRun {
					cr.AllowTool = n.Name
				}
				r.resumed[i] = resumedCall{approval: &allow, code: cr}
			}
			continue
		}
		exec.Results[i], exec.Budgets[i] = write(d, call, nil, err, &o.Answers)
		exec.Errors[i] = err
		written(i)
		c.record(ctx, ticket, exec, i, false)
	}
	if len(send) > 0 {
		var rv *reveals
		rctx := ctx
		if c.search != nil {
			rv = &reveals{}
			rctx = withReveals(ctx, rv)
		}
		exec.Calls = send
		r.runAll(rctx, send)
		if rv != nil {
			exec.Revealed = c.reveal(ctx, rv.inOrder(exec.Errors))
		}
		for _, p := range exec.Pending {
			// Its server asked again, and it was deferred again. That is
			// a new round, with another claim. This round's stays unrecorded.
			res.again[p.index] = p
		}
		for _, call := range send {
			i := call.Index
			var o turn.Outcome
			if p, again := res.again[i]; again {
				o.Waiting, o.Input = true, p.Input
			}
			if ce := (*conduit.Error)(nil); errors.As(exec.Errors[i], &ce) && ce.Halt {
				o.Halt = true
			}
			_ = m.Settle(i, o)
		}
		r.answer(rctx, m, byIndex)
		for _, call := range send {
			i := call.Index
			if _, again := res.again[i]; again {
				continue
			}
			res.settled[i] = true
			res.reached[i] = Reached(exec.Errors[i]) && !slices.Contains(exec.locals, call.Def)
			if exec.Errors[i] == nil {
				res.nested[i] = exec.nested[i]
			}
			c.record(ctx, tickets[i], exec, i, res.reached[i])
		}
	}
	return c.settle(t, exec, res, m.Halted()), nil
}

// resumed is what a Resume settled. settled are the positions of the
// calls answered. reached says whether their servers' output reached the
// model. again are the calls deferred again.
type resumed struct {
	settled, reached map[int]bool
	again            map[int]Pending
	// nested are the servers a run_code call's code read.
	nested map[int][]string
}

// machine is the turn machine of t, paused, with the turn's budget
// (0 for none). Its calls are those that resolved: answered, or waiting
// for a decision. own gives the own budget within the turn of the call
// at a position. It is asked of the calls waiting only. A nil own gives
// none.
func (t *pausedTurn) machine(budget int, own func(i int) int) *turn.Machine {
	var calls []turn.Call
	for i, tc := range t.calls {
		switch {
		case tc.pending != nil:
			b := 0
			if own != nil {
				b = own(i)
			}
			calls = append(calls, turn.Call{Index: i, Key: tc.pending.ID, Budget: b})
		case tc.server != "":
			calls = append(calls, turn.Call{Index: i, Key: tc.id})
		}
	}
	m := turn.NewMachine(budget, calls)
	if t.halted {
		m.Halt()
	}
	for _, c := range calls {
		tc := &t.calls[c.Index]
		if p := tc.pending; p != nil {
			_ = m.Settle(c.Index, turn.Outcome{Waiting: true, Input: p.Input})
			continue
		}
		_ = m.Wrote(c.Index, turn.Written{Demand: tc.demand, Kept: tc.budget.Kept})
	}
	return m
}

// turnDecisions are rulings as the turn machine takes them.
func turnDecisions(decisions map[string]Ruling) map[string]turn.Decision {
	ds := make(map[string]turn.Decision, len(decisions))
	for id, d := range decisions {
		ds[id] = turn.Decision{Allow: d.Allow, Halt: d.Halt, Input: d.Input}
	}
	return ds
}

// decisionError is Resume's error for decisions the machine refused.
func decisionError(err error) error {
	var unknown *turn.UnknownError
	if errors.As(err, &unknown) {
		return fmt.Errorf("adapters: no pending call has the id %q (pending: %s)", unknown.Key, strings.Join(unknown.Waiting, ", "))
	}
	return fmt.Errorf("adapters: %w", err)
}

// callOf is the call at position i of the turn, as its answer names it.
// Its tool is as fresh offers it now, or else as offered did.
func (c *Conversation) callOf(i int, tc *turnCall, fresh, offered *conduit.ToolSet) toolcall.Call {
	call := toolcall.Call{Index: i, ID: tc.id, Name: tc.name, Server: tc.server, Tool: tc.tool}
	if p := tc.pending; p != nil {
		call.Args = jsonv.CloneObject(p.Arguments)
	}
	if l := c.localTool(tc.server, tc.name); l != nil {
		call.Def = l
	} else if t, ok := fresh.Lookup(tc.name); ok && t.Server == tc.server && t.Name == tc.tool {
		call.Def = t
	} else if t, ok := offered.Lookup(tc.name); ok {
		call.Def = t
	} else {
		call.Def = &conduit.Tool{Tool: &mcp.Tool{Name: tc.tool}, Exposed: tc.name, Server: tc.server}
	}
	return call
}

// refusal is the error that answers the decided pending call p instead
// of sending it. It is nil to send p.
func (c *Conversation) refusal(call toolcall.Call, p *pendingCall, dec Ruling, halted bool, fresh *conduit.ToolSet) error {
	switch {
	case halted:
		return haltedError(call.Def)
	case !dec.Allow:
		return &conduit.Error{Kind: conduit.ErrDenied, Server: call.Def.Server, Tool: call.Def.Name,
			Message: errtext.Denied("The call to "+call.Def.Exposed, dec.Reason), Halt: dec.Halt}
	case slices.Contains(c.localTools(), call.Def):
		return nil // a tool of the Conversation's own, whose definition is its own
	}
	t, why := findTool(fresh, p.Server, p.Tool, p.Name, p.digest)
	if t != nil {
		return nil
	}
	msg := "The call to " + p.Name + " was not made: "
	switch why {
	case "its server is down":
		return &conduit.Error{Kind: conduit.ErrUnavailable, Server: p.Server, Tool: p.Tool,
			Message: msg + "its server is unavailable now; try again later."}
	case "it is no longer offered":
		return &conduit.Error{Kind: conduit.ErrUnknownTool, Server: p.Server, Tool: p.Tool,
			Message: msg + "the tool is no longer offered."}
	}
	return &conduit.Error{Kind: conduit.ErrDenied, Server: p.Server, Tool: p.Tool, Err: ErrToolChanged,
		Message: msg + "the tool's definition changed after it was asked for, and the approval given does not cover the new one. Call it again if it is still wanted."}
}

// localTools are the Conversation's own tools (conduit's search, the read
// tool), fixed when it is listed.
func (c *Conversation) localTools() []*conduit.Tool {
	out := make([]*conduit.Tool, len(c.o.locals))
	for i, l := range c.o.locals {
		out[i] = l.Tool
	}
	return out
}

// localTool is the Conversation's own tool that a call names by its
// server and exposed name. It is nil if there is none.
func (c *Conversation) localTool(server, name string) *conduit.Tool {
	for _, l := range c.o.locals {
		if l.Tool.Server == server && l.Tool.Exposed == name {
			return l.Tool
		}
	}
	return nil
}

// claimKey is the key of the claim of the pending call at position i of
// t. It joins:
//
//   - the conversation;
//   - the turn: its number, and its key where the state has one;
//   - the position;
//   - the times the call was deferred;
//   - a digest of its name and arguments.
//
// So a claim is only ever found by the same call of the same turn.
func (c *Conversation) claimKey(t *pausedTurn, i int) string {
	p := t.calls[i].pending
	key := "conduit/conversation/" + c.id + "/" + strconv.Itoa(t.n)
	if t.key != "" {
		key += "." + t.key
	}
	key += "/" + strconv.Itoa(i)
	if p.round > 0 {
		key += "/" + strconv.Itoa(p.round)
	}
	args, _ := json.Marshal(p.Arguments) // a decoded object: it encodes
	return key + "/" + digest.Call(p.Name, args)
}

// outcome is what a claim records of a decided call: its answer, as the
// model reads it. Reached says whether its server's output reached the
// model.
type outcome struct {
	Answer  map[string]any `json:"answer"`
	Err     *errV1         `json:"err,omitempty"`
	Reached bool           `json:"reached,omitempty"`
	Budget  *budgetV1      `json:"budget,omitempty"`
}

// error is the error a recorded outcome stands for.
func (o *outcome) error(p *pendingCall) error {
	if o.Err == nil {
		return nil
	}
	k, _ := kindOf(o.Err.Kind)
	return &conduit.Error{Kind: k, Server: p.Server, Tool: p.Tool, Message: o.Err.Message, Halt: o.Err.Halt}
}

// readOutcome reads the outcome a claim recorded. One it cannot read is
// unknown.
func readOutcome(found once.Outcome) (*outcome, bool) {
	var o outcome
	if found.Err != nil || json.Unmarshal(found.Result, &o) != nil || o.Answer == nil || (o.Err != nil && !knownKind(o.Err.Kind)) || o.Budget.check() != nil {
		return nil, false
	}
	return &o, true
}

// record records the outcome in exec of the call at position i, whose
// claim is ticket's. A record that fails leaves the outcome unknown.
// Later resumers are told so, and still send nothing.
func (c *Conversation) record(ctx context.Context, ticket *once.Ticket, exec *Execution, i int, reachedIt bool) {
	rec := outcome{Answer: exec.Results[i], Reached: reachedIt, Budget: budgetDocument(exec.Budgets[i], exec.demand(i))}
	var ce *conduit.Error
	if errors.As(exec.Errors[i], &ce) {
		rec.Err = &errV1{Kind: ce.Kind.String(), Message: ce.Message, Halt: ce.Halt}
	} else if err := exec.Errors[i]; err != nil {
		rec.Err = &errV1{Kind: conduit.ErrInternal.String(), Message: err.Error()}
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return
	}
	_ = ticket.Record(ctx, data, nil)
}

// settle puts what a Resume settled into the turn. It returns the turn's
// Execution. A turn with no call left pending is over, and its taint
// joins the conversation's.
func (c *Conversation) settle(t *pausedTurn, exec *Execution, res *resumed, halt bool) *Execution {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range t.calls {
		tc := &t.calls[i]
		if res.settled[i] {
			tc.answer, tc.err, tc.reached, tc.pending = exec.Results[i], exec.Errors[i], res.reached[i], nil
			tc.nested = res.nested[i]
			tc.budget, tc.demand = exec.Budgets[i], exec.demand(i)
		} else if p, again := res.again[i]; again {
			p.ID = tc.pending.ID
			tc.pending = &pendingCall{Pending: p, digest: tc.pending.digest, round: tc.pending.round + 1}
			tc.err = exec.Errors[i]
		}
	}
	t.halted = t.halted || halt
	out := &Execution{Results: make([]map[string]any, len(t.calls)), Errors: make([]error, len(t.calls)), Halted: t.halted,
		Budgets: make([]toolcall.Budgeted, len(t.calls)), Revealed: exec.Revealed, locals: exec.locals}
	offered := c.listing.ToolSet
	for i := range t.calls {
		tc := &t.calls[i]
		if tc.pending != nil {
			out.Pending = append(out.Pending, tc.pending.Pending)
			out.Errors[i] = tc.err
			if errors.Is(exec.Errors[i], ErrClaimsUnavailable) {
				out.Errors[i] = exec.Errors[i]
			}
			continue
		}
		out.Results[i], out.Errors[i], out.Budgets[i] = tc.answer, tc.err, tc.budget
		if tc.server == "" {
			continue // a call that did not resolve
		}
		if p := slices.IndexFunc(exec.Calls, func(x toolcall.Call) bool { return x.Index == i }); p >= 0 {
			out.Calls = append(out.Calls, exec.Calls[p])
		} else {
			out.Calls = append(out.Calls, c.callOf(i, tc, offered, offered))
		}
	}
	if len(out.Pending) == 0 {
		c.turn = nil
		for _, tc := range t.calls {
			if tc.reached {
				c.addTaint([]string{tc.server})
			}
			c.addTaint(tc.nested)
		}
	}
	return out
}

// runAll runs calls, at most o.MaxConcurrency at a time.
func (r *runner) runAll(ctx context.Context, calls []toolcall.Call) {
	workers := r.o.MaxConcurrency
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(calls))
	if workers <= 1 {
		for _, c := range calls {
			r.run(ctx, c)
		}
		return
	}
	next := make(chan toolcall.Call)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c := range next {
				r.run(ctx, c)
			}
		})
	}
	for _, c := range calls {
		next <- c
	}
	close(next)
	wg.Wait()
}
