// conduit resume: the decisions on the calls that exec --approve defer
// left pending, taken in a process of their own.

package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/internal/bounded"
)

func runResume(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "resume", `
Decide the calls that 'conduit exec --state FILE --approve defer' left
pending, in a process of its own (minutes or days later), and print the
turn's answers as exec does:

  {"results": [...], "halted": false, "paused": false, "taint": [...],
   "revealed": [...], "pending": [], "decided": [...]}

--allow runs the calls it names (as an approver's "allow" would have: the
policy still decides first), --deny answers them with --reason, and --halt
makes the denial stop the agent loop ("halted": true; the calls allowed
with it are then answered as halted, not sent). A call neither allowed nor
denied stays pending, in FILE and under "pending", and "results" stays
empty until every call is decided; once it is, "results" answers every
call of the turn in the model's order, those answered before included.
"decided" says what this resume did with each call it decided (in the
model's order, those still pending last), whether or not the turn is complete: {"id", "name",
"outcome"} where "outcome" is "ran" for a call made and answered, else
why not ("denied", "halted", "timeout", ...: the error's kind, with its
"error"), or "pending" for a call still waiting (its claim could not be
made, or its server asked again). The same is written to stderr.
A call whose tool changed since it was deferred (its definition, or its
server gone) is not made on the decision: its answer says so.

The result budget is exec's: give the same --max-result-tokens and
--max-turn-tokens. The turn's budget covers the whole turn: the calls
answered by exec before the deferral and those resumed share it as if the
turn had been answered at once (each call left pending held its own
budget's worth of it), and the answers written before are not cut again.

FILE is written back, for the next 'conduit exec --state FILE'. While a
command uses it, FILE.lock exists: a second resume of the same file waits
for nothing and sends nothing (it fails, and after the first one, FILE has
nothing pending). Each decided call is claimed in a store first, and a
second resumption of it (a copy of FILE, a backup restored) sends nothing
and answers with the first one's recorded answer, or that it was decided
elsewhere. The store is by default the SQLite file
$XDG_STATE_HOME/conduit/store.db (~/.local/state/conduit/store.db), shared
by the processes of this machine; --store redis://... shares the claims
with other machines, --store memory keeps them in this process only (a
copy resumed later would send the call again): give every process that
resumes the conversation the same store.elsewhere.`)
	var h hubFlags
	var bf budgetFlags
	var cm codeModeFlags
	h.register(fs)
	bf.register(fs, true)
	cm.register(fs)
	stateFile := fs.String("state", "", "the conversation's state `file`, as 'conduit exec --state' wrote it")
	storeURL := fs.String("store", "", storeUsage)
	allow := fs.String("allow", "", "the `IDs` of the pending calls to run, comma-separated")
	deny := fs.String("deny", "", "the `IDs` of the pending calls to deny, comma-separated")
	allowRun := fs.String("allow-run", "", "the `IDs` of pending run_code calls to run, allowing their code's waiting tool for the rest of the run (a loop of writes is one decision)")
	reason := fs.String("reason", "", "why the calls of --deny are denied, for the model")
	halt := fs.Bool("halt", false, "the denial also stops the agent loop")
	timeout := fs.Duration("timeout", bounded.DefaultCallTimeout, "how long one call may take in all")
	structured := fs.String("structured", "", "how results' structuredContent is answered, as exec's --structured (give the same)")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("resume", "unexpected argument %q", pos[0])
	}
	if *stateFile == "" {
		return usageError("resume", "--state FILE is required")
	}
	mode, err := toolcall.ParseStructured(*structured)
	if err != nil {
		return usageError("resume", "--structured: %v", err)
	}
	decisions := map[string]adapters.Ruling{}
	for _, id := range splitList(*allow) {
		decisions[id] = adapters.Ruling{Allow: true}
	}
	for _, id := range splitList(*allowRun) {
		decisions[id] = adapters.Ruling{Allow: true, ForRun: true}
	}
	for _, id := range splitList(*deny) {
		if _, both := decisions[id]; both {
			return usageError("resume", "%q is both allowed and denied", id)
		}
		decisions[id] = adapters.Ruling{Reason: *reason, Halt: *halt}
	}
	if *halt && *deny == "" {
		return usageError("resume", "--halt is a denial's: name the calls with --deny")
	}

	st, err := openState(env, *stateFile)
	if err != nil {
		return err
	}
	defer st.unlock()
	if st.saved == nil {
		return inputError("no state in %s: 'conduit exec --state %s --approve defer' writes one", *stateFile, *stateFile)
	}
	info := st.info
	if len(info.Pending) == 0 {
		return inputError("%s has no call waiting for a decision", *stateFile)
	}
	for id := range decisions {
		if !slices.ContainsFunc(info.Pending, func(p adapters.Pending) bool { return p.ID == id }) {
			return usageError("resume", "no pending call has the id %q (pending: %s)", id, pendingIDs(info.Pending))
		}
	}
	cfg, err := h.loadConfig()
	if err != nil {
		return err
	}
	u, err := config.ExpandEnv(*storeURL)
	if err != nil {
		return inputError("--store: %v", err)
	}
	shared, _, err := openStore(env, "conduit resume", u, "the calls decided are not sent until it is back")
	if err != nil {
		return err
	}
	defer shared.Close()
	// The calls decided need no approver: the decision is their approval.
	// A later ask inside a resumed run_code's code waits again, as it
	// did in exec, for the next resume.
	hub, _, err := h.openHub(ctx, env, cfg, hubOptions{needPolicy: true, store: shared,
		approver: conduit.DeferAll("waits for 'conduit resume'")})
	if err != nil {
		return err
	}
	defer hub.Close()
	conv, err := st.conversation(ctx, hub, info.Provider, &adapters.ConversationOptions{
		TurnOptions: adapters.TurnOptions{
			CallTimeout: *timeout,
			Answers:     toolcall.AnswerOptions{Structured: mode, MaxResultTokens: bf.resultTokens()},
			Budget:      bf.options(),
			Trace:       env.listingTrace(nil),
		},
		Listing: adapters.ListingOptions{CodeMode: cm.options()},
		State:   adapters.StateOptions{Keys: st.keys},
	})
	if err != nil {
		return err
	}
	reportWarnings(env, conv.Listing().Warnings, "when the conversation was saved")
	exec, err := conv.Resume(ctx, decisions)
	if err != nil {
		return inputError("%v", err)
	}
	for i, err := range exec.Errors {
		switch {
		case err != nil && exec.Results[i] != nil:
			fmt.Fprintf(env.Stderr, "conduit: call %d: %s\n", i+1, describe(err))
		case exec.Results[i] != nil && exec.Budgets[i].Cut:
			fmt.Fprintf(env.Stderr, "conduit: call %d: ok%s\n", i+1, budgetNote(exec.Budgets[i]))
		}
	}
	if err := st.save(conv); err != nil {
		return err
	}
	out := turnOf(exec, conv, false)
	out.Decided = decidedCalls(exec, decisions)
	for _, d := range out.Decided {
		note := d.Outcome
		if d.Error != "" {
			note += ": " + d.Error
		}
		fmt.Fprintf(env.Stderr, "conduit: %s (%s): %s\n", d.Name, d.ID, note)
	}
	return writeTurnOutput(env, *stateFile, exec, out)
}

// decidedCall is what a resume did with one call it decided.
type decidedCall struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// decidedCalls reports the outcome of each call decisions decided, in the
// model's order. So a resume that leaves others pending still says what ran.
func decidedCalls(exec *adapters.Execution, decisions map[string]adapters.Ruling) []decidedCall {
	type found struct {
		index int
		call  decidedCall
	}
	var out []found
	for id := range decisions {
		if i := slices.IndexFunc(exec.Pending, func(p adapters.Pending) bool { return p.ID == id }); i >= 0 {
			// Its claim could not be made, or its server asked again.
			out = append(out, found{len(exec.Results) + i, decidedCall{ID: id, Name: exec.Pending[i].Name, Outcome: "pending"}})
			continue
		}
		c, ok := callByKey(exec.Calls, id)
		if !ok {
			continue
		}
		d := decidedCall{ID: id, Name: c.Name, Outcome: "ran"}
		if err := exec.Errors[c.Index]; err != nil {
			var ce *conduit.Error
			errors.As(err, &ce)
			d.Outcome, d.Error = ce.String(), describe(err)
		}
		out = append(out, found{c.Index, d})
	}
	slices.SortFunc(out, func(a, b found) int { return a.index - b.index })
	calls := make([]decidedCall, len(out))
	for i, f := range out {
		calls[i] = f.call
	}
	return calls
}

// callByKey finds the call that key (a Pending.ID) names: its id, or its
// id and its position from 1 ("id#2").
func callByKey(calls []toolcall.Call, key string) (toolcall.Call, bool) {
	for _, c := range calls {
		if c.ID+"#"+strconv.Itoa(c.Index+1) == key {
			return c, true
		}
	}
	for _, c := range calls {
		if c.ID == key {
			return c, true
		}
	}
	return toolcall.Call{}, false
}
