// conduit's activities. They list the tools and read a response's calls.
// That read is the plan of a turn, which sends nothing. They send one call
// at most once.

package temporalconduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/conduitmcp/conduit/internal/errtext"
	"github.com/conduitmcp/conduit/internal/turn"
	"github.com/conduitmcp/conduit/store/once"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// errOutcomeUnknown is the cause of the error that answers a lost call. Its
// worker was lost after it claimed the call and before it recorded the
// outcome. The call may have been sent, and it was not sent again.
var errOutcomeUnknown = errors.New("temporalconduit: the call's outcome is unknown; it was not made again")

// How a call is kept from being sent twice (plannedCall.Mode).
const (
	// modeClaim: claimed before the pipeline runs, the answer recorded
	// after. A claim found pending is never sent again.
	modeClaim = "claim"
	// modeReadOnly: a trusted server's read-only tool, sent on every
	// attempt without a claim.
	modeReadOnly = "readOnly"
	// modeIdempotent: a trusted server's idempotent tool. It is claimed and
	// recorded like modeClaim, but sent again when its claim is pending.
	modeIdempotent = "idempotent"
)

// nonRetryable is the error type of the activities' failures that no retry
// can mend. Input that cannot be read is one.
const nonRetryable = "conduit.InvalidInput"

func invalid(err error) error {
	return temporal.NewNonRetryableApplicationError(err.Error(), nonRetryable, err)
}

// The activities' inputs and outputs below are recorded in histories. Their
// outputs are recorded in claims too. A worker of a later release decodes
// those that an earlier one wrote. As with State, a field is added only
// where its absence means what it meant before. None changes its meaning.

// listInput is the input of conduit.ListTools.
type listInput struct {
	Provider  string   `json:"provider"`
	Principal string   `json:"principal,omitempty"`
	Taint     []string `json:"taint,omitempty"`
}

// listOutput is what conduit.ListTools found.
type listOutput struct {
	Offer    Offer              `json:"offer"`
	Warnings []toolcall.Warning `json:"warnings,omitempty"`
}

// listTools lists the source's tools for a provider, principal and taint,
// as an offer.
func (a *Activities) listTools(ctx context.Context, in listInput) (listOutput, error) {
	p, err := adapters.ParseProvider(in.Provider)
	if err != nil {
		return listOutput{}, invalid(err)
	}
	l, err := adapters.Tools(ctx, a.src, p, &adapters.ToolsOptions{Principal: in.Principal, Taint: in.Taint, Listing: a.o.Listing})
	if err != nil {
		return listOutput{}, err
	}
	return listOutput{Offer: offerOf(p, in.Principal, in.Taint, l.ToolSet), Warnings: l.Warnings}, nil
}

// planInput is the input of conduit.Plan.
type planInput struct {
	Offer    Offer           `json:"offer"`
	Response json.RawMessage `json:"response"`
}

// plan is a turn's plan. It holds the answers of the calls not to be sent,
// and the calls to send.
type plan struct {
	// Answers are by the calls' positions in the response. An answer is nil
	// where a call is to be sent.
	Answers []map[string]any `json:"answers"`
	Calls   []plannedCall    `json:"calls,omitempty"`
	// Options and MaxAnswerBytes are the worker's. The workflow writes the
	// answers of the calls sent with them (see writeStep).
	Options        *toolcall.AnswerOptions `json:"options,omitempty"`
	MaxAnswerBytes int                     `json:"maxAnswerBytes,omitempty"`
}

// plannedCall is one call to send, as the history keeps it.
type plannedCall struct {
	Index int    `json:"index"`
	ID    string `json:"id,omitempty"`
	// Key names the call in decisions (adapters.Pending.ID). It is its ID.
	// When it has none or shares it, Key is the ID followed by '#' and its
	// position from 1.
	Key    string `json:"key"`
	Name   string `json:"name"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Args are the arguments as JSON text. So they reach the call as the
	// model wrote them, numbers included.
	Args json.RawMessage `json:"args"`
	// Digest is the digest of the tool's definition when it was read.
	Digest string `json:"digest"`
	// Budget is the result's own budget: its server's, else the worker's,
	// else the default. It is read as toolcall.Budget.Tokens says: 0 the
	// default, negative none.
	Budget int `json:"budget,omitempty"`
	// Mode is how the call is kept from being sent twice. Attempts is how
	// many times its activity may run (0: no limit).
	Mode     string `json:"mode"`
	Attempts int32  `json:"attempts,omitempty"`
}

// plan reads the tool calls of a response against the offer, as
// adapters.ExecuteToolCalls would. It sends nothing. Some calls are not to
// be sent: not offered, arguments that are not an object, past the limits.
// Those are answered. The others are planned, each with how it is kept from
// being sent twice.
func (a *Activities) plan(ctx context.Context, in planInput) (plan, error) {
	l, _, err := a.listing(ctx, in.Offer)
	if err != nil {
		return plan{}, err
	}
	p, _ := in.Offer.provider()
	exec, err := adapters.ReadToolCalls(ctx, a.src, p, in.Response, &adapters.ExecOptions{ToolSet: l.ToolSet,
		NullPaths: l.NullPaths, TurnOptions: adapters.TurnOptions{Answers: a.o.Answers, Limits: a.o.Limits}})
	if err != nil {
		return plan{}, invalid(fmt.Errorf("the model's response: %w", err))
	}
	answers := a.o.Answers
	out := plan{Answers: exec.Results, Options: &answers, MaxAnswerBytes: a.o.MaxAnswerBytes}
	keys := adapters.CallKeys(exec.Calls)
	for _, c := range exec.Calls {
		args, err := json.Marshal(c.Args)
		if err != nil {
			return plan{}, invalid(err)
		}
		pc := plannedCall{Index: c.Index, ID: c.ID, Key: keys[c.Index], Name: c.Name, Server: c.Server, Tool: c.Tool, Args: args,
			Digest: c.Def.Digest()}
		pc.Mode, pc.Attempts = a.mode(c.Def)
		if pc.Budget = turn.ResultBudget(0, c.Def.MaxResultTokens, a.o.Answers.MaxResultTokens); pc.Budget == 0 {
			pc.Budget = -1
		}
		out.Calls = append(out.Calls, pc)
	}
	return out, nil
}

// mode is how a call of t is kept from being sent twice. It also returns how
// many attempts its activity gets.
func (a *Activities) mode(t *conduit.Tool) (string, int32) {
	if ann := t.Annotations; ann != nil && a.trusted[t.Server] {
		if ann.ReadOnlyHint {
			return modeReadOnly, 0
		}
		if ann.IdempotentHint {
			return modeIdempotent, 0
		}
	}
	if a.shared {
		return modeClaim, 0
	}
	// Another worker's retry would not see this worker's claim.
	return modeClaim, 1
}

// callInput is the input of conduit.CallTool.
type callInput struct {
	// Conversation, Turn and Round name the call's claim, with its position
	// and arguments. Round counts the times it was taken up again after a
	// deferral.
	Conversation string      `json:"conversation"`
	Turn         int         `json:"turn"`
	Round        int         `json:"round,omitempty"`
	Offer        Offer       `json:"offer"`
	Taint        []string    `json:"taint,omitempty"`
	Call         plannedCall `json:"call"`
	Options      callOptions `json:"options"`
	// Decision is a deferred call's decision. Input is what its server
	// asked, with the answers given (the decision's merged in).
	Decision *adapters.Ruling `json:"decision,omitempty"`
	Input    *conduit.Input   `json:"input,omitempty"`
	// Halted answers the call as halted. Lost answers it as a call whose
	// worker was lost. Neither sends it.
	Halted bool `json:"halted,omitempty"`
	Lost   bool `json:"lost,omitempty"`
}

// callOptions are a conversation's options of every call.
type callOptions struct {
	Assigns        map[string]any `json:"assigns,omitempty"`
	CallTimeout    time.Duration  `json:"callTimeout,omitempty"`
	RequestTimeout time.Duration  `json:"requestTimeout,omitempty"`
	// TurnTokens is the turn's budget (0: none). A result too large for the
	// history is answered by the activity itself, within it.
	TurnTokens int `json:"turnTokens,omitempty"`
}

// callOutput is a call's outcome. It holds one of three:
//
//   - its result or error, which the workflow answers within the turn's
//     budget;
//   - its answer, written here;
//   - the deferral it waits on.
//
// It is also what a claim records.
type callOutput struct {
	// Result, or Err, is the call's outcome. The workflow answers it once
	// the turn's budget is shared (writeStep).
	Result *mcp.CallToolResult `json:"result,omitempty"`
	Err    *callError          `json:"err,omitempty"`
	// Answer is an answer written here. It is written for a result too large
	// for the history, cut to its own budget within the turn's. An earlier
	// release may have written it too. Demand and Kept are its figures in
	// the turn's budget.
	Answer map[string]any `json:"answer,omitempty"`
	Demand int            `json:"demand,omitempty"`
	Kept   int            `json:"kept,omitempty"`
	// Reached reports that the server's output is in the answer (taint).
	// Halt reports that the answer halts the loop.
	Reached bool      `json:"reached,omitempty"`
	Halt    bool      `json:"halt,omitempty"`
	Pending *deferred `json:"pending,omitempty"`
	// Task is the task its server runs the call as, not over yet: the
	// workflow waits on a timer and asks about it again (pollTask).
	Task *conduit.Input `json:"task,omitempty"`
	// Unknown reports that the answer says the call's outcome is unknown.
	Unknown bool `json:"unknown,omitempty"`
}

// callError is a call's error as the history keeps it.
type callError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Halt    bool   `json:"halt,omitempty"`
}

// error is the error e stands for, of call c.
func (e *callError) error(c toolcall.Call) error {
	if e == nil {
		return nil
	}
	k, _ := turn.Kind(e.Kind)
	return &conduit.Error{Kind: k, Server: c.Server, Tool: c.Tool, Message: e.Message, Halt: e.Halt}
}

// written reports whether out carries an answer already written.
func (out *callOutput) written() bool { return out.Answer != nil }

// deferred is what a deferred call waits for (conduit.Deferral).
type deferred struct {
	Rule      string         `json:"rule,omitempty"`
	Reason    string         `json:"reason,omitempty"`
	Arguments map[string]any `json:"arguments"`
	Input     *conduit.Input `json:"input,omitempty"`
}

// callTool sends one call through the source's pipeline. It sends it at most
// once, whatever the attempts (see the package doc). It heartbeats while it
// runs, with the server's progress as the heartbeats' details. A
// cancellation of the activity cancels the MCP request. A call its server
// runs as a task returns the task at once (callOutput.Task).
func (a *Activities) callTool(ctx context.Context, in callInput) (callOutput, error) {
	p, c, ts, early, err := a.resolve(ctx, in)
	if early != nil || err != nil {
		return *early, err
	}

	var ticket *once.Ticket
	if in.Call.Mode != modeReadOnly {
		var found once.Outcome
		ticket, found, err = once.Claim(ctx, a.claims, claimKey(in), a.o.ClaimTTL)
		if err != nil {
			// Nothing was sent: the activity is retried.
			return callOutput{}, fmt.Errorf("temporalconduit: the call could not be claimed: %w", err)
		}
		switch found.State {
		case once.Recorded:
			if out, ok := readRecord(found.Result); ok && found.Err == nil {
				return out, nil
			}
			return unknown(c), nil
		case once.Unknown:
			if in.Call.Mode != modeIdempotent {
				return unknown(c), nil
			}
			// Sent again, harmlessly, and not recorded: the claim is
			// another's.
		}
	}
	if in.Lost && in.Call.Mode == modeClaim {
		// The claim was this worker's to win. The worker that ran the call
		// before kept its claim in a store of its own.
		out := unknown(c)
		record(ctx, ticket, out)
		return out, nil
	}
	out, err := a.send(ctx, in, p, c, ts)
	record(ctx, ticket, out)
	return out, err
}

// resolve reads in's call and resolves it against the offer. early, when
// set, is the call's answer without sending it.
func (a *Activities) resolve(ctx context.Context, in callInput) (adapters.Provider, toolcall.Call, *conduit.ToolSet, *callOutput, error) {
	var c toolcall.Call
	p, err := in.Offer.provider()
	if err != nil {
		return p, c, nil, &callOutput{}, invalid(err)
	}
	c = toolcall.Call{Index: in.Call.Index, ID: in.Call.ID, Name: in.Call.Name, Server: in.Call.Server, Tool: in.Call.Tool}
	if err := json.Unmarshal(in.Call.Args, &c.Args); err != nil || c.Args == nil {
		return p, c, nil, &callOutput{}, invalid(fmt.Errorf("the call's arguments: %v", err))
	}
	c.Def = &conduit.Tool{Tool: &mcp.Tool{Name: c.Tool}, Exposed: c.Name, Server: c.Server}
	switch d := in.Decision; {
	case in.Halted:
		out := failed(&conduit.Error{Kind: conduit.ErrHalted, Server: c.Server, Tool: c.Tool, Message: errtext.Halted(c.Name)})
		return p, c, nil, &out, nil
	case d != nil && !d.Allow:
		out := failed(&conduit.Error{Kind: conduit.ErrDenied, Server: c.Server, Tool: c.Tool,
			Message: errtext.Denied("The call to "+c.Name, d.Reason), Halt: d.Halt})
		return p, c, nil, &out, nil
	}
	ts, all, err := a.offered(ctx, in.Offer)
	if err != nil {
		return p, c, nil, &callOutput{}, err
	}
	if t, ok := ts.Lookup(c.Name); ok && t.Server == c.Server && t.Name == c.Tool {
		c.Def = t
	} else if name, ok := all.ExposedName(c.Server, c.Tool); ok {
		if t, _ := all.Lookup(name); t.Digest() != in.Call.Digest {
			out := failed(&conduit.Error{Kind: conduit.ErrDenied, Server: c.Server, Tool: c.Tool, Err: adapters.ErrToolChanged,
				Message: "The call to " + c.Name + " was not made: the tool's definition changed after it was offered. Call it again if it is still wanted."})
			return p, c, nil, &out, nil
		}
	}
	return p, c, ts, nil, nil
}

// send runs c through the source's pipeline, heartbeating, and returns its
// outcome. A call its server runs as a task is detached: the workflow
// waits for the task on timers, not this activity.
func (a *Activities) send(ctx context.Context, in callInput, p adapters.Provider, c toolcall.Call, ts *conduit.ToolSet) (callOutput, error) {
	if hb := activity.GetInfo(ctx).HeartbeatTimeout; hb > 0 {
		stop := heartbeat(ctx, hb/3)
		defer stop()
	}
	copts := &conduit.CallOptions{ToolSet: ts, ID: c.ID, Principal: in.Offer.Principal, Assigns: in.Options.Assigns,
		Taint: in.Taint, CallTimeout: in.Options.CallTimeout, RequestTimeout: in.Options.RequestTimeout, Input: in.Input,
		DetachTask: true, Progress: func(_ *conduit.Call, pr conduit.Progress) { activity.RecordHeartbeat(ctx, pr) }}
	if d := in.Decision; (d != nil && d.Allow) || (in.Input != nil && in.Input.Task != nil) {
		// A task's call passed its approval when it was sent. Its polls
		// send nothing new, so the approver is not asked again. The
		// policy still decides first.
		copts.Approval = &conduit.Approval{Allow: true}
	}
	res, err := a.src.CallTool(ctx, c.Name, c.Args, copts)
	out := a.outcome(p, c, res, err, in.Call.Budget, in.Options.TurnTokens)
	if err := ctx.Err(); err != nil {
		// Canceled: the activity ends as such; a retry reads the record.
		return out, err
	}
	return out, nil
}

// pollTask asks once about the task its server runs a call as
// (in.Input.Task), through the same pipeline: the policy, hooks and
// approval hold as for the call. With Task.Cancel it cancels the task
// instead. It claims nothing: a poll sends no tools/call, and the call
// was claimed when it was sent.
func (a *Activities) pollTask(ctx context.Context, in callInput) (callOutput, error) {
	if in.Input == nil || in.Input.Task == nil || in.Input.Task.ID == "" {
		return callOutput{}, invalid(errors.New("temporalconduit: a task poll names no task"))
	}
	p, c, ts, early, err := a.resolve(ctx, in)
	if early != nil || err != nil {
		return *early, err
	}
	out, err := a.send(ctx, in, p, c, ts)
	if err == nil && out.Err != nil && out.Err.Kind == conduit.ErrUnavailable.String() {
		// The server could not be asked, and the task may go on there:
		// the poll is retried (pollCtx), not the call answered.
		return callOutput{}, errors.New(out.Err.Message)
	}
	return out, err
}

// claimKey is the key of the claim of a call. It holds the call's
// conversation, turn, position, round, and a digest of its name and
// arguments. A workflow reset that makes the model write another call there
// makes another key.
func claimKey(in callInput) string {
	return "conduit/temporal/" + in.Conversation + "/" + strconv.Itoa(in.Turn) + "/" + strconv.Itoa(in.Call.Index) + "/" +
		strconv.Itoa(in.Round) + "/" + digest.Call(in.Call.Name, in.Call.Args)
}

// record records out as the outcome of the claim ticket holds, if any. A
// record that fails leaves the outcome unknown. A retry then answers so, and
// still sends nothing.
func record(ctx context.Context, ticket *once.Ticket, out callOutput) {
	if ticket == nil {
		return
	}
	data, err := json.Marshal(out)
	if err != nil {
		return
	}
	_ = ticket.Record(ctx, data, nil)
}

// readRecord reads what a claim recorded: an answer, or a deferral.
func readRecord(data []byte) (callOutput, bool) {
	var out callOutput
	if json.Unmarshal(data, &out) != nil || out.kinds() != 1 || (out.Err != nil && !knownKind(out.Err.Kind)) {
		return callOutput{}, false
	}
	return out, true
}

// kinds counts what out holds of an answer, a result, an error and a
// deferral. An outcome that can be read holds one.
func (out *callOutput) kinds() int {
	n := 0
	for _, set := range []bool{out.Answer != nil, out.Result != nil, out.Err != nil, out.Pending != nil, out.Task != nil} {
		if set {
			n++
		}
	}
	return n
}

func knownKind(name string) bool {
	_, ok := turn.Kind(name)
	return ok
}

// outcome is the outcome of call c: a deferral, its error, or its result.
// The workflow answers the result within the turn's budget. A result too
// large for the history is answered here instead. It stays within its own
// budget (own, as toolcall.Budget.Tokens says it). It stays within the
// turn's too (turnTokens, 0: none).
func (a *Activities) outcome(p adapters.Provider, c toolcall.Call, res *mcp.CallToolResult, err error, own, turnTokens int) callOutput {
	var d *conduit.Deferral
	if errors.Is(err, conduit.ErrDeferred) && errors.As(err, &d) {
		if in := d.Input; in != nil && in.Task != nil && len(in.Requests) == 0 {
			return callOutput{Task: in} // the task goes on, and asks nothing
		}
		out := callOutput{Pending: &deferred{Reason: d.Reason, Arguments: d.Args, Input: d.Input}}
		if d.Input == nil {
			out.Pending.Rule = d.Rule.String()
		}
		if out.Pending.Arguments == nil {
			out.Pending.Arguments = map[string]any{}
		}
		return out
	}
	if err == nil && res == nil {
		err = &conduit.Error{Kind: conduit.ErrInternal, Server: c.Server, Tool: c.Tool, Message: "The call to " + c.Name + " returned no result."}
	}
	if err != nil {
		return failed(err)
	}
	out := callOutput{Result: res, Reached: true}
	if data, jerr := json.Marshal(res); jerr == nil && len(data) <= a.o.MaxAnswerBytes {
		return out
	}
	// Too large for the history: answered here, and counted as written.
	// A step of its own: it is cut to its budget, and shares nothing.
	pend := p.Prepare(c, res, nil, &a.o.Answers)
	step := turn.Step{Turn: turnTokens, Done: []driver.Pending{pend}, Budgets: []int{turn.Within(toolcall.Budget{Tokens: own}.Resolved(), turnTokens)}}
	cut := step.Share()[0]
	answer, budgeted := pend.Write(toolcall.Budget{Tokens: cut.Budget})
	out.Result, out.Demand, out.Kept = nil, cut.Demand, budgeted.Kept
	out.Answer = keepable(p, c, answer, &a.o.Answers, a.o.MaxAnswerBytes)
	return out
}

// failed is the outcome of a call that ended with err.
func failed(err error) callOutput {
	out := callOutput{Err: &callError{Kind: conduit.ErrInternal.String(), Message: err.Error()}}
	if ce := (*conduit.Error)(nil); errors.As(err, &ce) {
		out.Err = &callError{Kind: ce.Kind.String(), Message: ce.Message, Halt: ce.Halt}
		out.Halt = ce.Halt
	}
	// The adapters' rule of which answers carry the server's output.
	out.Reached = adapters.Reached(err)
	return out
}

// keepable is answer, unless its JSON is over maxBytes. Then it is the error
// answer that says the result was too large to be kept.
func keepable(p adapters.Provider, c toolcall.Call, answer map[string]any, o *toolcall.AnswerOptions, maxBytes int) map[string]any {
	data, err := json.Marshal(answer)
	if err == nil && len(data) <= maxBytes {
		return answer
	}
	lerr := &conduit.Error{Kind: conduit.ErrLimit, Server: c.Server, Tool: c.Tool,
		Message: fmt.Sprintf("The result of %s was made, but it is too large to be kept (%d bytes of answer, over the limit of %d). Ask for less at a time.", c.Name, len(data), maxBytes)}
	return p.Answer(c, nil, lerr, o)
}

// unknown is the outcome of a call whose outcome is unknown.
func unknown(c toolcall.Call) callOutput {
	out := failed(&conduit.Error{Kind: conduit.ErrUnavailable, Server: c.Server, Tool: c.Tool, Err: errOutcomeUnknown,
		Message: "The call to " + c.Name + " may have been made: the worker that ran it was lost before it recorded the outcome. It was not made again, so that it is made at most once; check its effect before calling it again."})
	out.Unknown = true
	return out
}

// heartbeat records a heartbeat every d until stop is called. So a worker
// that dies is noticed within the heartbeat timeout. A cancellation reaches
// ctx, and from it the MCP request.
func heartbeat(ctx context.Context, d time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}
