package adapters

import (
	"context"
	"slices"

	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/turn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The result budget of ExecuteToolCalls and Conversation.Execute. Each
// result's budget is resolved: the call's, its server's, the
// conversation's, or the default. The turn's budget is shared among its
// results once all are answered. Each answer is written within the
// smaller of the two. Results over the warning threshold are reported
// (see BudgetOptions). The counting and cutting are internal/tokens'.
// adapters/internal/budget applies them to each provider's rendering.

const (
	// DefaultMaxResultTokens is a result's budget when nothing sets one.
	// It is 25,000 tokens, as Claude Code's MAX_MCP_OUTPUT_TOKENS.
	DefaultMaxResultTokens = toolcall.DefaultMaxResultTokens
	// DefaultMaxTurnTokens is BudgetOptions.MaxTurnTokens's default:
	// 50,000 tokens, two full results. That is a quarter of Claude's
	// 200,000-token context. OpenAI's and Gemini's are larger. So a turn
	// of parallel calls leaves room for the conversation and several
	// more turns.
	DefaultMaxTurnTokens = turn.DefaultMaxTurnTokens
	// DefaultWarnTokens is BudgetOptions.WarnTokens's default: 10,000
	// tokens. Claude Code warns of a large MCP result at that size.
	DefaultWarnTokens = 10000
)

// BudgetOptions bound what the model reads of a turn's results, beyond
// each result's own budget. They also say what is reported. The zero
// value is the defaults.
//
// Each result's budget is the first of these that is set:
//
//   - the call's own (CallTokens);
//   - its server's (conduit.Server.MaxResultTokens, "maxResultTokens" in mcp.json);
//   - the conversation's (AnswerOptions.MaxResultTokens);
//   - DefaultMaxResultTokens.
//
// A negative budget means none. A result over its budget keeps its
// beginning, cut at a line break, and a notice ends it. A JSON text or
// structuredContent is cut into valid JSON. When nothing fits, the
// notice replaces it. An image that does not fit is dropped.
//
// The turn's budget is shared once every call of the response is
// answered, whatever the order they finish in. Each result's demand is
// its size up to its own budget. The turn's budget is divided max-min
// fairly. A result within an equal share keeps all of it. The larger
// ones share what is left equally. Ten results of 20,000 tokens get
// 5,000 each. Results of 100, 90,000, 3,000 and 40,000 get 100, 23,450,
// 3,000 and 23,450. Each is then cut to the smaller of its budget and its
// share, in the model's order. A result with no budget of its own is
// still within the turn's. conduit's own short answers to calls it did
// not send are not counted. Such calls name an unknown tool or have bad
// arguments.
//
// A turn whose calls are deferred (Execution.Pending) is answered in
// steps. Its budget covers the whole of it. The answers written when the
// turn pauses share the turn's budget with the calls left pending. Each
// pending call holds its own budget's worth, since it may yet produce
// that much. The calls a Resume runs share what the answers written
// before them left. They share it with the calls still pending. The
// completed turn's results together are within MaxTurnTokens. That holds
// however many Resumes it took, in this process or another. When each
// deferred call produces its whole budget, the answers are those of the
// turn answered at once.
//
// An answer is written once. The answers written before a Resume are
// kept as they were written. That holds in the Conversation and in its
// saved state. So the saved state holds at most a turn's budget of
// answers, never a large result whole. A pending call may not use the
// room it held, when it was denied or answered briefly. That room is not
// given back to the answers written before. Sharing the turn's budget
// afresh when the turn completes would need every whole result in the
// saved state.
type BudgetOptions struct {
	// MaxTurnTokens bounds the results of one response together. It is
	// shared among them max-min fairly. 0 means DefaultMaxTurnTokens.
	// Negative means no turn budget.
	MaxTurnTokens int
	// WarnTokens is the size past which a result is reported, cut or
	// not. Trace.ResultBudget and the Logger at Warn report it. 0 means
	// DefaultWarnTokens. Negative means only cut results are reported.
	WarnTokens int
	// CallTokens, when set, returns a call's own budget. It takes the
	// place of its server's and of MaxResultTokens. 0 leaves the call to
	// them. Negative is no budget. It is called for each call in the
	// model's order once the calls are done. It is also called for each
	// call still pending whenever the turn's budget is shared. So it must
	// give a call the same budget each time.
	CallTokens func(c toolcall.Call) int
}

// ResultBudgetInfo is the argument of [Trace.ResultBudget].
type ResultBudgetInfo struct {
	// Call is the call the result answers. It must not be modified.
	Call toolcall.Call
	// Budgeted says what the budget did. It holds the result's tokens,
	// those kept, the budget applied, and whether it was cut.
	Budgeted toolcall.Budgeted
	// Context is the Execute's (ExecuteToolCalls') context.
	Context context.Context
}

// resultBudget is c's budget in tokens, 0 for none. It is the call's
// own, else its server's, else the conversation's, else the default.
func (o *ExecOptions) resultBudget(c toolcall.Call) int {
	call, server := 0, 0
	if o.Budget.CallTokens != nil {
		call = o.Budget.CallTokens(c)
	}
	if c.Def != nil {
		server = c.Def.MaxResultTokens
	}
	return turn.ResultBudget(call, server, o.Answers.MaxResultTokens)
}

// turnBudget is a turn's budget in tokens, 0 for none.
func (o *ExecOptions) turnBudget() int { return turn.Budget(o.Budget.MaxTurnTokens) }

// warnTokens is the size past which a result is reported, 0 for never.
func (o *ExecOptions) warnTokens() int {
	switch n := o.Budget.WarnTokens; {
	case n == 0:
		return DefaultWarnTokens
	case n < 0:
		return 0
	default:
		return n
	}
}

// write writes d's answer to c within o's budget, as one answer alone.
func write(d driver.Provider, c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) (map[string]any, toolcall.Budgeted) {
	var b toolcall.Budget
	if o != nil {
		b.Tokens = o.MaxResultTokens
	}
	return d.Prepare(c, res, err, o).Write(b)
}

// demand is the demand on the turn's budget of the answer at position i
// of exec. It is what answer measured. conduit's own answers are
// written alone, so for them it is what they kept.
func (e *Execution) demand(i int) int {
	if i < len(e.demands) && e.demands[i] > 0 {
		return e.demands[i]
	}
	if i < len(e.Budgets) {
		return e.Budgets[i].Kept
	}
	return 0
}

// machine is the turn machine over the calls sent, once they are done.
// It knows each call's outcome: waiting for a decision, or done. It
// halts with the Execution.
func (r *runner) machine(sent []toolcall.Call) *turn.Machine {
	budget := r.o.turnBudget()
	keys := CallKeys(sent)
	calls := make([]turn.Call, len(sent))
	for k, c := range sent {
		calls[k] = turn.Call{Index: c.Index, Key: keys[c.Index], Budget: r.o.withinTurn(c, budget)}
	}
	m := turn.NewMachine(budget, calls)
	if r.exec.Halted {
		m.Halt()
	}
	for _, c := range sent {
		o := turn.Outcome{}
		for _, p := range r.exec.Pending {
			if p.index == c.Index {
				o.Waiting, o.Input = true, p.Input
			}
		}
		_ = m.Settle(c.Index, o) // c is one of the machine's calls
	}
	return m
}

// finish answers the calls sent, once they are done. The machine says
// what comes next. A halted turn answers its calls deferred as halted.
// The others wait for a decision. The rest are answered within the
// turn's budget.
func (r *runner) finish(ctx context.Context, sent []toolcall.Call) {
	m := r.machine(sent)
	byIndex := make(map[int]toolcall.Call, len(sent))
	for _, c := range sent {
		byIndex[c.Index] = c
	}
	for _, j := range m.Halting() {
		r.exec.Errors[j.Index] = haltedError(byIndex[j.Index].Def)
		r.exec.Pending = slices.DeleteFunc(r.exec.Pending, func(p Pending) bool { return p.index == j.Index })
		_ = m.Settle(j.Index, turn.Outcome{})
	}
	r.answer(ctx, m, byIndex)
}

// answer writes the answers of the machine's next step at their places
// in Results. Each result is measured and the turn's budget is shared.
// Then each answer is written within its budget, in the model's order
// (see "Result budget" above). A result cut in a Conversation with its
// read tool is kept whole first, and its notice names it.
//
// A turn may be answered in steps: calls deferred, then resumed. It
// shares its budget as the turn answered at once would (see package
// internal/turn). The answers written before are not written again.
func (r *runner) answer(ctx context.Context, m *turn.Machine, byIndex map[int]toolcall.Call) {
	o := r.o
	plan, ok := m.Plan()
	if !ok {
		return
	}
	step := plan.Step
	for _, i := range plan.Indexes {
		step.Done = append(step.Done, r.d.Prepare(byIndex[i], r.results[i], r.exec.Errors[i], &o.Answers))
	}
	for k, cut := range step.Share() {
		c := byIndex[plan.Indexes[k]]
		i := c.Index
		b := toolcall.Budget{Tokens: cut.Budget}
		if cut.Over && o.reader != nil && !o.isLocal(c.Def) {
			b.ReadTool, b.Ref = o.reader.keep(ctx, step.Done[k].Text())
		}
		r.exec.Results[i], r.exec.Budgets[i] = step.Done[k].Write(b)
		r.exec.demands[i] = cut.Demand
		_ = m.Wrote(i, turn.Written{Demand: cut.Demand, Kept: r.exec.Budgets[i].Kept})
		o.report(ctx, c, r.exec.Budgets[i])
	}
}

// withinTurn is c's budget within a turn's budget of turn tokens. A turn
// of 0 means no turn budget. The result is 0 for none. No result alone
// is over the turn's budget.
func (o *ExecOptions) withinTurn(c toolcall.Call, t int) int {
	return turn.Within(o.resultBudget(c), t)
}

// report tells Trace and Logger of a result over the warning threshold,
// or cut.
func (o *ExecOptions) report(ctx context.Context, c toolcall.Call, b toolcall.Budgeted) {
	warn := o.warnTokens()
	if !b.Cut && (warn == 0 || b.Tokens <= warn) {
		return
	}
	if o.Trace != nil && o.Trace.ResultBudget != nil {
		o.Trace.ResultBudget(ResultBudgetInfo{Call: c, Budgeted: b, Context: ctx})
	}
	if o.Logger != nil {
		attrs := []any{"tool", c.Name, "tokens", b.Tokens, "budget", b.Budget}
		msg := "conduit: a large tool result"
		if b.Cut {
			msg = "conduit: a tool result was cut to its budget"
			attrs = append(attrs, "kept", b.Kept)
		}
		if b.Ref != "" {
			attrs = append(attrs, "ref", b.Ref)
		}
		o.Logger.WarnContext(ctx, msg, attrs...)
	}
}
