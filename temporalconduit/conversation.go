// The workflow's side: a Conversation. It runs each turn's calls as
// activities, waits for decisions on an Update, and shows what waits by a
// query. Everything here is deterministic workflow code. It schedules, waits
// and keeps state. Conduit's pipeline runs in the activities.

package temporalconduit

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/bounded"
	"github.com/conduitmcp/conduit/internal/turn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The query and the update of a workflow with a Conversation. Histories
// record them and clients name them, so they are stable across releases.
const (
	// QueryPending answers the calls of the current turn that wait for a
	// decision. It gives them as []adapters.Pending in the model's order
	// (none between turns).
	QueryPending = "conduit.pending"
	// UpdateDecide decides pending calls. Its argument is a
	// map[string]adapters.Ruling by Pending.ID. Its validator rejects a
	// decision that names no call waiting for one. It also rejects one that
	// allows a call deferred for input without answering all its server
	// asked. A rejected decision records nothing.
	UpdateDecide = "conduit.decide"
)

// DefaultHeartbeatTimeout is ConversationOptions.HeartbeatTimeout's
// default: a worker that dies while it runs a call is noticed within it.
const DefaultHeartbeatTimeout = 30 * time.Second

// ConversationOptions configure a [Conversation]. A nil
// *ConversationOptions, and the zero value of each field, mean the defaults.
// Provider is required.
type ConversationOptions struct {
	// Provider is the model's API.
	Provider adapters.Provider
	// Principal is who the conversation is for. Its listing leaves out what
	// the policy denies them. Every call is made for them.
	Principal string
	// Taint is the taint the conversation starts with.
	Taint []string
	// Assigns are every call's (conduit.CallOptions.Assigns), for approvers
	// and hooks. They pass through the history as JSON.
	Assigns map[string]any
	// CallTimeout bounds each call in all, approval and hooks included
	// (default 5 minutes, as a hub's). Its activity is given a minute
	// more. RequestTimeout bounds each request to a server.
	CallTimeout    time.Duration
	RequestTimeout time.Duration
	// HeartbeatTimeout is how long a call's activity may go without a
	// heartbeat. After it, Temporal takes its worker for lost (default
	// DefaultHeartbeatTimeout). Activities heartbeat three times in it, with
	// the server's progress as details. A cancellation reaches a running
	// call with the answer to a heartbeat. The SDK sends one at most every
	// 0.8 HeartbeatTimeout. That is how late a cancellation may be.
	HeartbeatTimeout time.Duration
	// MaxConcurrency is how many calls of a turn run at once. The default is
	// 1: one after another, in the model's order. Then a halt stops every
	// call after it.
	MaxConcurrency int
	// MaxTurnTokens bounds what the model reads of a turn's results
	// together, in tokens. It is shared max-min fairly, as
	// adapters.ExecuteToolCalls shares it (see adapters.BudgetOptions). The
	// activities return the results. The workflow answers them once each
	// step of the turn is done, within the same shares. 0 means
	// adapters.DefaultMaxTurnTokens (50,000). Negative means no turn budget.
	MaxTurnTokens int
	// DecisionTimeout is how long a turn waits for its deferred calls to be
	// decided, from when it starts waiting. The calls still undecided then
	// are denied. Zero: as long as it takes.
	DecisionTimeout time.Duration
	// TaskQueue is where conduit's activities run: the workers that Register
	// them. The default is the workflow's.
	TaskQueue string
}

// Conversation is one conversation with a model, in a workflow. It holds the
// tools it is offered, its taint, and the turn under way. Use it from
// workflow code only, one per workflow run. It handles QueryPending and
// UpdateDecide. It is not safe for use by several workflow goroutines at
// once.
//
// Each turn, the application's own activity sends the model a request with
// the tools. Activities.Tools on the worker turns the Offer into
// definitions. Then Execute runs the calls of the model's response.
type Conversation struct {
	o    ConversationOptions
	st   State
	turn *liveTurn
}

// Turn is a turn's outcome.
type Turn struct {
	// Results answer every call of the response, in the model's order, in
	// the provider's shape (see adapters.Execution.Results). Wire's Answers
	// puts them in the conversation.
	Results []map[string]any
	// Halted reports that a call was denied with a halt: end the loop.
	Halted bool
	// Unknown are the calls whose outcome is unknown, by their ids as
	// Pending.ID names them. A worker was lost after it claimed one and
	// before it recorded what the server answered. Each was sent at most
	// once, and its answer tells the model so. Someone should check its
	// effect.
	Unknown []string
}

// NewConversation lists the tools for o's provider, principal and taint (an
// activity). It returns the conversation that offers them, ready for its
// first turn. It registers the handlers of QueryPending and UpdateDecide.
func NewConversation(ctx workflow.Context, o *ConversationOptions) (*Conversation, error) {
	c, err := newConversation(ctx, o)
	if err != nil {
		return nil, err
	}
	// From the start, so that a query before the listing is answered.
	if err := c.handle(ctx); err != nil {
		return nil, err
	}
	// A random name for the claims, recorded in the history. It is the same
	// in every replay, in every run continued as new, and after a reset.
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return rand.Text() }).Get(&c.st.ID); err != nil {
		return nil, err
	}
	var out listOutput
	in := listInput{Provider: c.o.Provider.String(), Principal: c.o.Principal, Taint: c.o.Taint}
	if err := workflow.ExecuteActivity(c.quickCtx(ctx), activityListTools, in).Get(ctx, &out); err != nil {
		return nil, err
	}
	for _, w := range out.Warnings {
		workflow.GetLogger(ctx).Warn("conduit: "+w.Message, "tool", w.Tool)
	}
	c.st.Offer = out.Offer
	c.st.Taint = slices.Clone(c.o.Taint)
	return c, nil
}

// ResumeConversation carries on a conversation from its State, in a new run
// of the workflow (continue-as-new). It keeps the same offer, taint, and
// claims' name. o gives what the state does not carry (timeouts,
// concurrency). Its Provider and Principal, when set, must be the state's.
// It registers the handlers of QueryPending and UpdateDecide.
func ResumeConversation(ctx workflow.Context, st State, o *ConversationOptions) (*Conversation, error) {
	if err := st.check(); err != nil {
		return nil, err
	}
	p, _ := st.Offer.provider()
	ro := ConversationOptions{Provider: p, Principal: st.Offer.Principal}
	if o != nil {
		if o.Provider != (adapters.Provider{}) && o.Provider != p {
			return nil, fmt.Errorf("temporalconduit: the state is of a conversation with %s, not %s", p, o.Provider)
		}
		if o.Principal != "" && o.Principal != st.Offer.Principal {
			return nil, fmt.Errorf("temporalconduit: the state is of a conversation for another principal than %q", o.Principal)
		}
		ro = *o
		ro.Provider, ro.Principal, ro.Taint = p, st.Offer.Principal, st.Offer.Taint
	}
	c, err := newConversation(ctx, &ro)
	if err != nil {
		return nil, err
	}
	c.st = st.clone()
	return c, c.handle(ctx)
}

// newConversation is a conversation with options o checked and
// defaulted, and no state yet.
func newConversation(_ workflow.Context, o *ConversationOptions) (*Conversation, error) {
	if o == nil {
		o = &ConversationOptions{}
	}
	c := &Conversation{o: *o}
	if _, err := adapters.ParseProvider(c.o.Provider.String()); err != nil {
		return nil, fmt.Errorf("temporalconduit: ConversationOptions.Provider: %w", err)
	}
	if c.o.CallTimeout < 0 || c.o.HeartbeatTimeout < 0 || c.o.DecisionTimeout < 0 {
		return nil, errors.New("temporalconduit: a negative timeout in ConversationOptions")
	}
	if c.o.CallTimeout == 0 {
		c.o.CallTimeout = bounded.DefaultCallTimeout
	}
	if c.o.HeartbeatTimeout == 0 {
		c.o.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	c.o.MaxConcurrency = max(c.o.MaxConcurrency, 1)
	c.o.Taint = slices.Clone(c.o.Taint)
	c.st.V = stateVersion
	return c, nil
}

// Offer returns what the model is offered, for the application's model
// activity. Activities.Tools turns it into the tool definitions of the
// request.
func (c *Conversation) Offer() Offer { return c.st.clone().Offer }

// State returns the conversation's state, to carry it on in a new run
// (ResumeConversation). It is complete between turns, when Execute has
// returned.
func (c *Conversation) State() State { return c.st.clone() }

// Execute runs the tool calls of a response of the conversation's provider,
// as adapters.Conversation.Execute does. It returns when every call is
// answered. A plan activity reads the calls, sending nothing. Then each call
// to send is an activity of its own, at most MaxConcurrency at once. That
// activity claims the call before the pipeline runs and records its answer
// after. So the call is sent at most once (see the package doc).
//
// The approver may defer a call (conduit.Defer). The call then waits for a
// decision by UpdateDecide, for as long as it takes (or DecisionTimeout).
// QueryPending shows it meanwhile. Once decided, another activity sends it
// (or answers it denied). A denial with a halt answers the calls not yet
// sent, and those still waiting, as halted. The Turn is then Halted, and the
// loop should end.
//
// The response is what the model activity returned. It may be JSON text (a
// json.RawMessage, []byte or string), or a decoded map. It may be any value
// that encodes to the provider's JSON. The servers whose output reached the
// model join the taint of the next turns. The error is for a response that
// is not JSON or cannot be read. It is also for an activity's error that no
// retry mended, or the workflow's cancellation.
func (c *Conversation) Execute(ctx workflow.Context, response any) (*Turn, error) {
	if c.turn != nil {
		return nil, errors.New("temporalconduit: a turn of the conversation is under way")
	}
	raw, err := responseJSON(response)
	if err != nil {
		return nil, err
	}
	c.st.Turns++
	var pl plan
	if err := workflow.ExecuteActivity(c.quickCtx(ctx), activityPlan, planInput{Offer: c.st.Offer, Response: raw}).Get(ctx, &pl); err != nil {
		return nil, err
	}
	t := &liveTurn{n: c.st.Turns, taint: slices.Clone(c.st.Taint), results: pl.Answers, maxBytes: pl.MaxAnswerBytes}
	if pl.Options != nil {
		t.answers = *pl.Options
	}
	if t.maxBytes <= 0 {
		t.maxBytes = DefaultMaxAnswerBytes
	}
	budget := turn.Budget(c.o.MaxTurnTokens)
	calls := make([]turn.Call, len(pl.Calls))
	for k, pc := range pl.Calls {
		t.calls = append(t.calls, &callState{plannedCall: pc})
		calls[k] = turn.Call{Index: pc.Index, Key: pc.Key, Budget: turn.Within(toolcall.Budget{Tokens: pc.Budget}.Resolved(), budget)}
	}
	t.m = turn.NewMachine(budget, calls)
	c.turn = t
	defer func() { c.turn = nil }()
	// The machine says what comes next. The workflow runs its jobs as
	// activities, writes its steps in a local activity, and waits for
	// the decisions it asks for.
	jobs := t.m.Start()
	var waitStart time.Time
	for {
		if err := c.run(ctx, t, jobs); err != nil {
			return nil, err
		}
		if err := c.writeStep(ctx, t); err != nil {
			return nil, err
		}
		if jobs = t.m.Halting(); len(jobs) > 0 {
			continue
		}
		if len(t.m.Waiting()) == 0 && len(t.queue) == 0 {
			// A decision that came while other calls ran is queued:
			// its call is no longer waiting, and is still to run.
			break
		}
		if waitStart.IsZero() {
			waitStart = workflow.Now(ctx)
		}
		if err := c.await(ctx, t, waitStart); err != nil {
			return nil, err
		}
		jobs, t.queue = t.queue, nil
	}
	out := &Turn{Results: t.results, Halted: t.m.Halted()}
	for _, cs := range t.calls {
		if cs.reached && !slices.Contains(c.st.Taint, cs.Server) {
			c.st.Taint = append(c.st.Taint, cs.Server)
		}
		if cs.unknown {
			out.Unknown = append(out.Unknown, cs.Key)
		}
	}
	return out, nil
}

// responseJSON is a model's response as JSON text. Text is kept as it is.
// Anything else is encoded, deterministically, since encoding/json sorts
// maps' keys.
func responseJSON(response any) (json.RawMessage, error) {
	var data []byte
	switch r := response.(type) {
	case json.RawMessage:
		data = r
	case []byte:
		data = r
	case string:
		data = []byte(r)
	default:
		var err error
		if data, err = json.Marshal(response); err != nil {
			return nil, fmt.Errorf("temporalconduit: the model's response: %w", err)
		}
	}
	if !json.Valid(data) {
		return nil, errors.New("temporalconduit: the model's response is not JSON")
	}
	return data, nil
}

// liveTurn is the turn under way.
type liveTurn struct {
	n     int
	taint []string // the taint its calls run with
	// answers and maxBytes are the worker's, from the plan. They say how the
	// answers are written, and the largest the history keeps.
	answers  toolcall.AnswerOptions
	maxBytes int
	// m is the turn's state: what runs, waits and is written.
	m       *turn.Machine
	calls   []*callState
	results []map[string]any
	// queue are the jobs that decisions made and that have not run yet,
	// in the order the decisions came.
	queue []turn.Job
}

// callState is what the workflow keeps of one call to send, beside the
// machine's state.
type callState struct {
	plannedCall
	// round counts the times the call was taken up again after a deferral.
	// pending is what it waits on, shown to a person. ruling is its
	// decision, until its job runs.
	round   int
	pending *adapters.Pending
	ruling  *adapters.Ruling
	reached bool
	unknown bool
	// done is its outcome until the machine's next step writes it.
	done *callOutput
}

// call is the call of t at position index.
func (t *liveTurn) call(index int) *callState {
	for _, cs := range t.calls {
		if cs.Index == index {
			return cs
		}
	}
	return nil
}

// job is one activity of a call.
type job struct {
	cs *callState
	tj turn.Job
	in callInput
	// poll marks a call its server runs as a task, asked about by
	// pollTask (see awaitTask).
	poll bool
}

// job is the activity that runs the machine's job tj.
func (c *Conversation) job(t *liveTurn, tj turn.Job) job {
	cs := t.call(tj.Index)
	in := callInput{Conversation: c.st.ID, Turn: t.n, Round: cs.round, Offer: c.st.Offer, Taint: t.taint, Call: cs.plannedCall,
		Options: callOptions{Assigns: c.o.Assigns, CallTimeout: c.o.CallTimeout, RequestTimeout: c.o.RequestTimeout, TurnTokens: t.m.Budget()},
		Halted:  tj.Halted}
	if tj.Decision != nil {
		in.Round++
		in.Decision = cs.ruling
		if tj.Decision.Allow {
			in.Input = tj.Input
		}
	}
	return job{cs: cs, tj: tj, in: in}
}

// run runs jobs, at most MaxConcurrency at once, in order. A job may fail:
// its worker lost, its attempts spent. Then a job follows that answers it
// from its claim, sending nothing. Once the turn is halted, the calls not
// yet sent are answered as halted.
func (c *Conversation) run(ctx workflow.Context, t *liveTurn, tjobs []turn.Job) error {
	jobs := make([]job, len(tjobs))
	for k, tj := range tjobs {
		jobs[k] = c.job(t, tj)
	}
	sel := workflow.NewSelector(ctx)
	running := 0
	var failed error
	polling := map[int]job{} // task jobs still running, by call index
	var done func(j job, out callOutput, err error)
	done = func(j job, out callOutput, err error) {
		if err == nil && out.Task != nil {
			polling[j.cs.Index] = j
			c.awaitTask(ctx, sel, j, out.Task, done) // still running
			return
		}
		delete(polling, j.cs.Index)
		running--
		switch {
		case err == nil:
			if err := t.settle(j, out); err != nil {
				failed = err
			}
		case j.poll && (temporal.IsCanceledError(err) || ctx.Err() != nil):
			c.cancelTask(ctx, j)
			failed = err
		case j.in.Lost || j.in.Halted || temporal.IsCanceledError(err) || ctx.Err() != nil:
			failed = err
		case j.poll:
			if err := t.settle(j, pollFailed(j, err)); err != nil {
				failed = err
			}
		default:
			workflow.GetLogger(ctx).Warn("conduit: a call's activity failed; its outcome is asked for without sending it",
				"call", j.cs.Key, "error", err)
			j.in.Lost = true
			jobs = append(jobs, j)
		}
	}
	for (len(jobs) > 0 || running > 0) && failed == nil {
		for running < c.o.MaxConcurrency && len(jobs) > 0 {
			j := jobs[0]
			jobs = jobs[1:]
			if t.m.Launch(j.tj).Halted {
				j.in.Halted = true
			}
			running++
			sel.AddFuture(workflow.ExecuteActivity(c.callCtx(ctx, j), activityCallTool, j.in), func(f workflow.Future) {
				var out callOutput
				err := f.Get(ctx, &out)
				done(j, out, err)
			})
		}
		sel.Select(ctx)
	}
	if failed != nil {
		// The turn ends here: the tasks still running end with it.
		for _, k := range slices.Sorted(maps.Keys(polling)) {
			c.cancelTask(ctx, polling[k])
		}
	}
	return failed
}

// settle puts a call's outcome in the turn.
func (t *liveTurn) settle(j job, out callOutput) error {
	cs := j.cs
	cs.ruling = nil
	if d := out.Pending; d != nil {
		cs.round = j.in.Round
		cs.pending = &adapters.Pending{ID: cs.Key, Name: cs.Name, Server: cs.Server, Tool: cs.Tool, Arguments: d.Arguments,
			Rule: d.Rule, Reason: d.Reason, Input: d.Input}
		return t.m.Settle(cs.Index, turn.Outcome{Waiting: true, Input: d.Input})
	}
	cs.pending = nil
	cs.reached, cs.unknown = out.Reached, out.Unknown
	o := turn.Outcome{Halt: out.Halt}
	if out.written() {
		t.results[cs.Index] = out.Answer
		o.Written = &turn.Written{Demand: out.Demand, Kept: out.Kept}
	} else {
		cs.done = &out
	}
	return t.m.Settle(cs.Index, o)
}

// writeStep writes the answers of the machine's next step. It shares
// the turn's budget as adapters.ExecuteToolCalls and Conversation.Resume
// do (see package internal/turn). Measuring and cutting a large result
// takes longer than workflow code may run without yielding. So a local
// activity writes the answers. The history records them, not its input.
// A step with nothing to write runs nothing.
func (c *Conversation) writeStep(ctx workflow.Context, t *liveTurn) error {
	plan, ok := t.m.Plan()
	if !ok {
		return nil
	}
	in := stepInput{Provider: c.o.Provider.String(), Turn: plan.Step.Turn, Answers: t.answers, MaxBytes: t.maxBytes,
		Before: plan.Step.Before, Waiting: plan.Step.Waiting}
	done := make([]*callState, len(plan.Indexes))
	for k, i := range plan.Indexes {
		cs := t.call(i)
		done[k] = cs
		in.Done = append(in.Done, stepCall{Call: cs.plannedCall, Result: cs.done.Result, Err: cs.done.Err, Budget: plan.Step.Budgets[k]})
	}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 2 * time.Minute})
	var out stepOutput
	if err := workflow.ExecuteLocalActivity(lctx, writeAnswers, in).Get(ctx, &out); err != nil {
		return err
	}
	if len(out.Answers) != len(done) || len(out.Written) != len(done) {
		return fmt.Errorf("temporalconduit: %d answers written for %d calls", len(out.Answers), len(done))
	}
	for k, cs := range done {
		t.results[cs.Index] = out.Answers[k]
		if err := t.m.Wrote(cs.Index, out.Written[k]); err != nil {
			return err
		}
		cs.done = nil
		cs.reached = cs.reached && adapters.Reached(in.Done[k].Err.error(cs.call()))
	}
	return nil
}

// stepInput is what writeAnswers writes: one step of a turn.
type stepInput struct {
	Provider string                 `json:"provider"`
	Turn     int                    `json:"turn,omitempty"`
	Answers  toolcall.AnswerOptions `json:"answers"`
	MaxBytes int                    `json:"maxBytes"`
	Done     []stepCall             `json:"done"`
	Before   []turn.Written         `json:"before,omitempty"`
	Waiting  []int                  `json:"waiting,omitempty"`
}

// stepCall is one call to answer in a step. It has its own budget within the
// turn's (0: none).
type stepCall struct {
	Call   plannedCall         `json:"call"`
	Result *mcp.CallToolResult `json:"result,omitempty"`
	Err    *callError          `json:"err,omitempty"`
	Budget int                 `json:"budget,omitempty"`
}

// stepOutput are a step's answers, in the order of its calls. It holds what
// each took of the turn's budget.
type stepOutput struct {
	Answers []map[string]any `json:"answers"`
	Written []turn.Written   `json:"written"`
}

// writeAnswers writes the answers of a step, by internal/turn's rule.
// It is a local activity: pure, and its output is what the history keeps.
func writeAnswers(_ context.Context, in stepInput) (stepOutput, error) {
	p, err := adapters.ParseProvider(in.Provider)
	if err != nil {
		return stepOutput{}, invalid(err)
	}
	step := turn.Step{Turn: in.Turn, Before: in.Before, Waiting: in.Waiting}
	calls := make([]toolcall.Call, len(in.Done))
	for k, d := range in.Done {
		cs := callState{plannedCall: d.Call}
		calls[k] = cs.call()
		step.Done = append(step.Done, p.Prepare(calls[k], d.Result, d.Err.error(calls[k]), &in.Answers))
		step.Budgets = append(step.Budgets, d.Budget)
	}
	out := stepOutput{Answers: make([]map[string]any, len(in.Done)), Written: make([]turn.Written, len(in.Done))}
	for k, cut := range step.Share() {
		answer, b := step.Done[k].Write(toolcall.Budget{Tokens: cut.Budget})
		out.Answers[k] = keepable(p, calls[k], answer, &in.Answers, in.MaxBytes)
		out.Written[k] = turn.Written{Demand: cut.Demand, Kept: b.Kept}
	}
	return out, nil
}

// call is the call cs answers.
func (cs *callState) call() toolcall.Call {
	return toolcall.Call{Index: cs.Index, ID: cs.ID, Name: cs.Name, Server: cs.Server, Tool: cs.Tool,
		Def: &conduit.Tool{Tool: &mcp.Tool{Name: cs.Tool}, Exposed: cs.Name, Server: cs.Server}}
}

// await waits until calls of t are decided, or, past DecisionTimeout
// from start, denies those still undecided.
func (c *Conversation) await(ctx workflow.Context, t *liveTurn, start time.Time) error {
	decided := func() bool { return len(t.queue) > 0 }
	if c.o.DecisionTimeout == 0 {
		return workflow.Await(ctx, decided)
	}
	ok, err := workflow.AwaitWithTimeout(ctx, max(start.Add(c.o.DecisionTimeout).Sub(workflow.Now(ctx)), 0), decided)
	if err != nil || ok {
		return err
	}
	reason := fmt.Sprintf("no decision was made within %v", c.o.DecisionTimeout)
	rulings := map[string]adapters.Ruling{}
	for _, i := range t.m.Waiting() {
		rulings[t.call(i).Key] = adapters.Ruling{Reason: reason}
	}
	return t.decide(rulings)
}

// decide gives decisions to the machine, and queues the jobs they make.
func (t *liveTurn) decide(rulings map[string]adapters.Ruling) error {
	jobs, err := t.m.Decide(decisions(rulings))
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Decision != nil {
			cs := t.call(j.Index)
			r := rulings[cs.Key]
			cs.ruling = &r
		}
	}
	t.queue = append(t.queue, jobs...)
	return nil
}

// decisions are rulings as the turn machine takes them.
func decisions(rulings map[string]adapters.Ruling) map[string]turn.Decision {
	ds := make(map[string]turn.Decision, len(rulings))
	for id, d := range rulings {
		ds[id] = turn.Decision{Allow: d.Allow, Halt: d.Halt, Input: d.Input}
	}
	return ds
}

// handle registers the handlers of QueryPending and UpdateDecide.
func (c *Conversation) handle(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryPending, func() ([]adapters.Pending, error) {
		return c.pending(), nil
	}); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, UpdateDecide,
		func(_ workflow.Context, rulings map[string]adapters.Ruling) error {
			return c.turn.decide(rulings)
		},
		workflow.UpdateHandlerOptions{Validator: func(_ workflow.Context, rulings map[string]adapters.Ruling) error {
			return c.validate(rulings)
		}})
}

// pending is the calls that wait for a decision, in the model's order.
func (c *Conversation) pending() []adapters.Pending {
	out := []adapters.Pending{}
	if c.turn == nil {
		return out
	}
	for _, i := range c.turn.m.Waiting() {
		out = append(out, *c.turn.call(i).pending)
	}
	return out
}

// validate rejects decisions that UpdateDecide cannot take, by the
// turn's rule (as adapters.Conversation.Resume checks them).
func (c *Conversation) validate(rulings map[string]adapters.Ruling) error {
	if len(rulings) == 0 {
		return errors.New("no decision given")
	}
	if c.turn == nil || len(c.turn.m.Waiting()) == 0 {
		return adapters.ErrNothingPending
	}
	return c.turn.m.Check(decisions(rulings))
}

// quickCtx is ctx with the options of the activities that list and read.
// They send nothing. They are retried until they succeed or fail for good.
func (c *Conversation) quickCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           c.o.TaskQueue,
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
}

// callCtx is ctx with the options of job j's activity. It is bounded by the
// call's timeout plus a minute for its claim and record. It heartbeats, and
// waits for its cancellation to reach the server. It is retried as its plan
// says. A claim that another worker would not see cannot keep a call from
// being sent twice. Such a call gets one attempt.
func (c *Conversation) callCtx(ctx workflow.Context, j job) workflow.Context {
	attempts := j.in.Call.Attempts
	if j.in.Lost || j.in.Halted || (j.in.Decision != nil && !j.in.Decision.Allow) {
		attempts = 0 // sends nothing
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           c.o.TaskQueue,
		StartToCloseTimeout: c.o.CallTimeout + time.Minute,
		HeartbeatTimeout:    c.o.HeartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute,
			MaximumAttempts: attempts, NonRetryableErrorTypes: []string{nonRetryable}},
	})
}
