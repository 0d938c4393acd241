package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/internal/bounded"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// callFlags are the flags of commands that make calls.
type callFlags struct {
	approve approveFlag
	taint   string
	timeout time.Duration
}

func (c *callFlags) register(fs *flagSet) {
	c.approve.register(fs)
	fs.StringVar(&c.taint, "taint", "", "the `servers`, comma-separated, whose output is already in the model's context, for the policy's tainted rules")
	fs.DurationVar(&c.timeout, "timeout", bounded.DefaultCallTimeout, "how long one call may take in all, approval included")
}

// taintList parses --taint, which must name configured servers.
func (c *callFlags) taintList(cmd string, cfg *config.File) ([]string, error) {
	taint := splitList(c.taint)
	var ids []string
	for _, s := range cfg.Servers {
		ids = append(ids, s.ID)
	}
	for _, t := range taint {
		if !slices.Contains(ids, t) {
			return nil, usageError(cmd, "--taint names %q, which is not a server in the configuration (%s)", t, strings.Join(ids, ", "))
		}
	}
	return taint, nil
}

// openHub opens the hub of a command that makes calls (call, exec): the
// configuration, the --taint servers it names, and the hub, which the
// policy and approver govern.
func (c *callFlags) openHub(ctx context.Context, env *Env, h *hubFlags, cmd string, approver conduit.Approver) (*conduit.Hub, *config.File, []string, error) {
	cfg, err := h.loadConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	taint, err := c.taintList(cmd, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	hub, _, err := h.openHub(ctx, env, cfg, hubOptions{approver: approver, needPolicy: true})
	if err != nil {
		return nil, nil, nil, err
	}
	return hub, cfg, taint, nil
}

func runExec(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "exec", `
Read a provider's response (the JSON body the model's API returned) from
--response FILE or stdin, list the servers' tools as 'conduit tools' does,
run the response's tool calls through the policy, and print every call's
answer, in the model's order and in the provider's shape:

  {"results": [...], "halted": false, "paused": false, "taint": ["web"],
   "revealed": ["github__create_issue"]}

"results" go into the next request (Anthropic: first in the next user
message; OpenAI Chat: tool messages; Responses: input items; Gemini: the
parts of a user content). "halted" is true when an approver denied a call
and asked to stop the loop. "paused" is true when the provider paused the
turn (Anthropic's pause_turn): send the conversation again, with this
response as its last assistant message, and the model continues. "taint"
is the next turn's --taint.

Past a size (--search auto, as 'conduit tools' lists), the model finds
tools with conduit's search_tools, which exec answers itself; each process
starts afresh, so pass the tools earlier searches revealed with --revealed
(in their order), for calls of them to resolve. "revealed" is every tool
revealed so far, earlier ones first: the next turn's --revealed, and the
tools 'conduit tools --revealed' appends to the list. The tools a search of
this response revealed are also named on stderr.

Each result the model reads is cut to --max-result-tokens (25000 by
default; a server's "maxResultTokens" in the configuration takes its place
for its tools), and the results of the response together to
--max-turn-tokens (50000, shared among them): a cut result keeps its
beginning and ends with a notice of what was cut and how to ask for less.
0 is no budget.

Calls the policy sends to approval ("ask" rules) are decided by --approve:
ask prompts on the terminal for each call (allow, deny, or deny and halt),
reading /dev/tty even when the response comes on stdin; it is the default
when stdin is a terminal, and deny is the default otherwise.

With --state FILE the conversation outlives the process: FILE is read when
it exists (the conversation goes on with its tools, principal, taint and
revealed tools, so --principal, --taint and --revealed are not given
again) and written after the turn. With --approve defer, the calls the
policy asks about are not sent: they wait in FILE, listed under "pending"
(each with its "id", "name" and "arguments"), and "results" stays empty
until 'conduit resume --state FILE --allow ID,... --deny ID,...' decides
them, in another process, and prints the turn's complete results. FILE is
encrypted and authenticated (AES-256-GCM) with the key in
CONDUIT_STATE_KEY, or else with a key file created in conduit's
configuration directory: without the key it shows nothing of the calls,
and an altered FILE is refused.

With --stream the response is the API's streamed one (its server-sent
events, as the API sent them with "stream": true; Gemini's from
streamGenerateContent?alt=sse; Bedrock's ConverseStream events as JSON, one
per line or per SSE data line), read as it comes: each call starts as soon
as the model has written it whole, while the rest streams in, and the
answers are printed in the model's order when the stream ends. The output
adds "response", the whole response the stream makes (the model's turn, to
put in the conversation), "ended", and "unfinished", the calls the stream
began and never completed (not sent, not answered). A stream that stops
early or carries a bad event still answers the calls already whole, then
exits with status 2.

A response that is not JSON, or not the provider's shape, is exit status 2.
Denied and failed calls are answers, not failures: the exit status is 0.`)
	var h hubFlags
	var l listFlags
	var c callFlags
	var sf searchFlags
	var bf budgetFlags
	var cm codeModeFlags
	h.register(fs)
	l.register(fs, true)
	c.register(fs)
	sf.register(fs)
	bf.register(fs, true)
	cm.register(fs)
	respFile := fs.String("response", "", "the provider response `file` (default: stdin)")
	structured := fs.String("structured", "", "how results' structuredContent is answered: `auto`, prefer, append or ignore (default: the provider's)")
	stream := fs.Bool("stream", false, "read the response as the API streamed it (server-sent events), and start each call as soon as it is whole")
	stateFile := fs.String("state", "", "the conversation's state `file`: read when it exists, written after the turn; with --approve defer the calls asked about wait in it for 'conduit resume'")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("exec", "unexpected argument %q (the response is read from --response FILE or stdin)", pos[0])
	}
	p, strict, err := l.parse(fs)
	if err != nil {
		return err
	}
	search, err := sf.parse(fs)
	if err != nil {
		return err
	}
	mode, err := toolcall.ParseStructured(*structured)
	if err != nil {
		return usageError("exec", "--structured: %v", err)
	}
	if c.approve.mode == "defer" && *stateFile == "" {
		return usageError("exec", "--approve defer needs --state FILE, where the deferred calls wait for 'conduit resume'")
	}
	st, err := openStateFlag(env, fs, *stateFile, p, &l, &c, &sf)
	if err != nil {
		return err
	}
	defer st.unlock()
	approver, release, err := c.approve.approver("exec", env)
	if err != nil {
		return err
	}
	defer release()

	if (*respFile == "" || *respFile == "-") && env.StdinTerminal {
		fmt.Fprintln(env.Stderr, "conduit: reading the response from the terminal; end it with Ctrl-D (or pass --response FILE)")
	}
	// The response is checked before any server is started; a stream
	// is read as it comes, once they are.
	var data []byte
	var raws []toolcall.Raw
	var paused bool
	if !*stream {
		if data, err = readInput(env, *respFile, "the response"); err != nil {
			return err
		}
		if raws, err = p.Parse(data); err != nil {
			return inputError("the response cannot be read as %s: %v; pass the JSON body the API returned", p, err)
		}
		paused = pausedTurn(p, data)
	}
	hub, _, taint, err := c.openHub(ctx, env, &h, "exec", approver)
	if err != nil {
		return err
	}
	defer hub.Close()
	copts := &adapters.ConversationOptions{
		TurnOptions: adapters.TurnOptions{
			Principal: l.principal, Taint: taint, CallTimeout: c.timeout,
			Answers: toolcall.AnswerOptions{Structured: mode, MaxResultTokens: bf.resultTokens()},
			Budget:  bf.options(),
			Trace:   env.listingTrace(nil),
		},
		Listing: adapters.ListingOptions{Strict: strict, CodeMode: cm.options()},
		Search:  search,
		State:   adapters.StateOptions{Keys: st.keys},
	}
	conv, err := st.conversation(ctx, hub, p, copts)
	if err != nil {
		return err
	}
	reportWarnings(env, conv.Listing().Warnings, "revealed by an earlier search")
	reportWarnings(env, conv.Listing().Warnings, "when the conversation was saved")
	if *stream {
		return execStream(ctx, env, conv, st, p, *respFile, *stateFile)
	}
	exec, err := conv.Execute(ctx, json.RawMessage(data))
	if err != nil {
		return inputError("the response: %v", err)
	}
	reportCalls(env, raws, exec)
	reportRevealed(env, exec)
	if err := st.save(conv); err != nil {
		return err
	}
	if paused {
		fmt.Fprintln(env.Stderr, "conduit: paused: the provider paused the turn; send the conversation again, this response last, for the model to continue")
	}
	return writeTurn(env, *stateFile, exec, conv, paused)
}

// streamOutput is what exec --stream prints: the turn, and what the
// stream was.
type streamOutput struct {
	turnOutput
	Response   map[string]any `json:"response"`
	Ended      bool           `json:"ended"`
	Unfinished []unfinished   `json:"unfinished"`
}

// unfinished is a call the stream began and never completed.
type unfinished struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// execStream runs the calls of a streamed response as they complete, and
// prints the turn when the stream ends.
func execStream(ctx context.Context, env *Env, conv *adapters.Conversation, st *stateRun, p adapters.Provider, respFile, stateFile string) error {
	in := env.Stdin
	if respFile != "" && respFile != "-" {
		f, err := os.Open(respFile)
		if err != nil {
			return inputError("reading the response: %v", err)
		}
		defer f.Close()
		in = f
	}
	s, err := conv.ExecuteStream(ctx, in, &adapters.StreamOptions{Started: func(c toolcall.Call) {
		fmt.Fprintf(env.Stderr, "conduit: call %d %s: started while the response streams\n", c.Index+1, c.Name)
	}})
	if s == nil {
		return inputError("the stream: %v", err)
	}
	raws, _ := p.Parse(s.Response)
	reportCalls(env, raws, s.Execution)
	reportRevealed(env, s.Execution)
	if serr := st.save(conv); serr != nil {
		return serr
	}
	paused := false
	if turn, terr := p.Wire().Turn(s.Response); terr == nil {
		paused = turn.Paused
	}
	out := streamOutput{turnOutput: turnOf(s.Execution, conv, paused), Response: s.Response, Ended: s.Ended, Unfinished: []unfinished{}}
	for _, u := range s.Unfinished {
		out.Unfinished = append(out.Unfinished, unfinished{ID: u.ID, Name: u.Name})
		fmt.Fprintf(env.Stderr, "conduit: call %s %s: unfinished when the stream ended; not sent\n", u.ID, u.Name)
	}
	if werr := writeTurnDoc(env, stateFile, s.Execution, out); werr != nil {
		return werr
	}
	if err != nil {
		return inputError("the stream: %v; the calls complete before it are answered above", err)
	}
	return nil
}

// turnOutput is what exec and resume print of a turn.
type turnOutput struct {
	Results  []map[string]any   `json:"results"`
	Halted   bool               `json:"halted"`
	Paused   bool               `json:"paused"`
	Taint    []string           `json:"taint"`
	Revealed []string           `json:"revealed"`
	Pending  []adapters.Pending `json:"pending"`
	// Decided, of a resume, says what it did with each call it decided.
	Decided []decidedCall `json:"decided,omitempty"`
}

// writeTurn prints a turn: its results when it is complete, else the
// calls that wait for 'conduit resume'.
func writeTurn(env *Env, stateFile string, exec *adapters.Execution, conv *adapters.Conversation, paused bool) error {
	return writeTurnOutput(env, stateFile, exec, turnOf(exec, conv, paused))
}

// turnOf is the output of a turn: its results only when it is complete.
func turnOf(exec *adapters.Execution, conv *adapters.Conversation, paused bool) turnOutput {
	out := turnOutput{Results: []map[string]any{}, Halted: exec.Halted, Paused: paused,
		Taint: jsonv.NonNil(conv.Taint()), Revealed: jsonv.NonNil(conv.Listing().Revealed), Pending: jsonv.NonNil(exec.Pending)}
	if exec.Complete() {
		out.Results = jsonv.NonNil(exec.Results)
	}
	return out
}

// writeTurnOutput prints out, and on stderr what the turn needs next.
func writeTurnOutput(env *Env, stateFile string, exec *adapters.Execution, out turnOutput) error {
	return writeTurnDoc(env, stateFile, exec, out)
}

// writeTurnDoc prints doc, a turn's output, and on stderr what the turn
// needs next.
func writeTurnDoc(env *Env, stateFile string, exec *adapters.Execution, doc any) error {
	if exec.Complete() {
		if exec.Halted {
			fmt.Fprintln(env.Stderr, "conduit: halted: every call is answered, but the agent loop should stop here")
		}
	} else {
		fmt.Fprintf(env.Stderr, "conduit: %d call(s) wait for a decision (%s): conduit resume --state %s --allow ID,... --deny ID,...\n",
			len(exec.Pending), pendingIDs(exec.Pending), stateFile)
		for _, p := range exec.Pending {
			if n := p.Nested; n != nil {
				args, _ := json.Marshal(n.Arguments)
				fmt.Fprintf(env.Stderr, "conduit: %s: its code calls %s %s (after %d call(s) that resuming replays); --allow %s sends it once, --allow-run %s also allows %s for the rest of the run\n",
					p.ID, n.Name, args, n.Before, p.ID, p.ID, n.Name)
			}
		}
	}
	return writeJSON(env.Stdout, doc)
}

// pausedTurn reports whether the provider paused the turn the response
// ends (Anthropic's pause_turn).
func pausedTurn(p adapters.Provider, data []byte) bool {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	turn, err := p.Wire().Turn(m)
	return err == nil && turn.Paused
}

// reportRevealed names on stderr the tools conduit's search revealed.
func reportRevealed(env *Env, exec *adapters.Execution) {
	if len(exec.Revealed) > 0 {
		fmt.Fprintf(env.Stderr, "conduit: search_tools revealed %s\n", strings.Join(exec.Revealed, ", "))
	}
}

// reportWarnings writes the listing's warnings that contain about to
// stderr.
func reportWarnings(env *Env, ws []toolcall.Warning, about string) {
	for _, w := range ws {
		if strings.Contains(w.Message, about) {
			fmt.Fprintf(env.Stderr, "conduit: %s: %s\n", w.Tool, w.Message)
		}
	}
}

// reportCalls writes one line per call to stderr: its name and outcome.
func reportCalls(env *Env, raws []toolcall.Raw, exec *adapters.Execution) {
	for i := range exec.Results {
		name := "?"
		if i < len(raws) {
			name = raws[i].Name
		}
		outcome := "ok"
		if err := exec.Errors[i]; err != nil {
			outcome = describe(err)
		}
		if errors.Is(exec.Errors[i], conduit.ErrDeferred) {
			// Why it waits was said when it was deferred. What to do next is
			// said once for every pending call.
			outcome = "pending"
		}
		if i < len(exec.Budgets) {
			outcome += budgetNote(exec.Budgets[i])
		}
		fmt.Fprintf(env.Stderr, "conduit: call %d %s: %s\n", i+1, name, outcome)
	}
}
