package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// testKey is a key for saved states, as an application would hold one.
var testKey = []byte("0123456789abcdef0123456789abcdef-test-key")

// askPolicy asks before echo and deploy, and allows the rest.
func askPolicy() *conduit.Policy {
	return conduit.NewPolicy(conduit.Ask("lab/echo", "lab/deploy"), conduit.Allow("*"))
}

// deferringHub is a lab hub whose approver defers every ask.
func deferringHub(t *testing.T) (*conduit.Hub, *lab) {
	t.Helper()
	hub, l, _ := labHub(t, hubOpts{noGone: true, policy: askPolicy(), approver: conduit.DeferAll("waiting for the user")})
	return hub, l
}

// reopen saves conv's state and resumes it over src with o, as a later
// process would. It returns the resumed conversation and the state.
func reopen(t *testing.T, ctx context.Context, conv *adapters.Conversation, src conduit.Source, p adapters.Provider, o *adapters.ConversationOptions) (*adapters.Conversation, []byte) {
	t.Helper()
	state, err := conv.State()
	if err != nil {
		t.Fatal(err)
	}
	back, err := adapters.ResumeConversation(ctx, src, p, state, o)
	if err != nil {
		t.Fatal(err)
	}
	return back, state
}

// memoryStore is a store of this process, given explicitly: what a
// resumed state needs at least.
func memoryStore(t *testing.T) store.Store {
	s := store.NewMemory()
	t.Cleanup(func() { s.Close() })
	return s
}

// stateOpts are conversation options that save state with testKey and
// claim in s (nil: the process's).
func stateOpts(s store.Claims) *adapters.ConversationOptions {
	return &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Principal: "ada", CallTimeout: 10 * time.Second},
		State: adapters.StateOptions{Keys: [][]byte{testKey}, Claims: s}}
}

// The whole round trip in one process, for every provider: a turn whose
// ask is deferred is incomplete (its answer is not produced, the others
// are), its state is saved and restored into a new Conversation, and the
// decision completes it: every call answered in the model's order, the
// answers produced before the deferral included and not run again.
func TestResumeRoundTrip(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			hub, l := deferringHub(t)
			ctx := context.Background()
			conv, err := adapters.NewConversation(ctx, hub, p, stateOpts(nil))
			if err != nil {
				t.Fatal(err)
			}
			exec, err := conv.Execute(ctx, script(p,
				scripted{id: "c1", name: "lab__text", args: map[string]any{}},
				scripted{id: "c2", name: "lab__echo", args: map[string]any{"message": "hello"}},
				scripted{id: "c3", name: "lab__nope", args: map[string]any{}}))
			if err != nil {
				t.Fatal(err)
			}
			if exec.Complete() || len(exec.Pending) != 1 || exec.Results[1] != nil || exec.Results[0] == nil || exec.Results[2] == nil {
				t.Fatalf("pending %+v, results %v", exec.Pending, exec.Results)
			}
			pend := exec.Pending[0]
			if pend.ID != "c2" || pend.Name != "lab__echo" || pend.Server != "lab" || pend.Tool != "echo" ||
				pend.Arguments["message"] != "hello" || pend.Rule != "ask lab/echo,lab/deploy" || pend.Reason != "waiting for the user" {
				t.Errorf("pending %+v", pend)
			}
			if !errors.Is(exec.Errors[1], conduit.ErrDeferred) || !slices.Equal(l.sent(), []string{"text"}) {
				t.Fatalf("errors %v, sent %v", exec.Errors, l.sent())
			}
			if !slices.Equal(conv.Taint(), []string{"lab"}) {
				t.Errorf("taint %v", conv.Taint())
			}
			if _, err := conv.Execute(ctx, script(p)); !errors.Is(err, adapters.ErrTurnPending) {
				t.Errorf("another turn while one is pending: %v", err)
			}
			back, state := reopen(t, ctx, conv, hub, p, stateOpts(nil))
			if !reflect.DeepEqual(back.Tools(), conv.Tools()) || !slices.Equal(back.Taint(), conv.Taint()) {
				t.Error("the restored conversation offers other tools, or has another taint")
			}
			done, err := back.Resume(ctx, map[string]adapters.Ruling{"c2": {Allow: true}})
			if err != nil {
				t.Fatal(err)
			}
			if !done.Complete() || done.Halted || len(done.Results) != 3 {
				t.Fatalf("resumed: %+v", done)
			}
			if !reflect.DeepEqual(canon(done.Results[0]), canon(exec.Results[0])) || !reflect.DeepEqual(canon(done.Results[2]), canon(exec.Results[2])) {
				t.Errorf("the answers made before the deferral changed:\n%v\n%v", done.Results, exec.Results)
			}
			answered := adaptertest.FakeOf(p).Answered(p.Wire().Answers(done.Results))
			if len(answered) != 3 || answered[1].Error || !strings.Contains(canon(done.Results[1]), "Echo: hello") {
				t.Errorf("answers %v %s", answered, canon(done.Results[1]))
			}
			if !slices.Equal(l.sent(), []string{"text", "echo"}) {
				t.Errorf("sent %v", l.sent())
			}
			// Done: nothing is pending any more, and the next turn runs.
			if _, err := back.Resume(ctx, nil); !errors.Is(err, adapters.ErrNothingPending) {
				t.Errorf("resume again: %v", err)
			}
			if _, err := back.Execute(ctx, script(p, scripted{id: "c4", name: "lab__text", args: map[string]any{}})); err != nil {
				t.Error(err)
			}
			// The same state resumed again reads the recorded answer.
			again, err := adapters.ResumeConversation(ctx, hub, p, state, stateOpts(nil))
			if err != nil {
				t.Fatal(err)
			}
			twice, err := again.Resume(ctx, map[string]adapters.Ruling{"c2": {Reason: "changed my mind"}})
			if err != nil {
				t.Fatal(err)
			}
			if canon(twice.Results) != canon(done.Results) || count(l.sent(), "echo") != 1 {
				t.Errorf("the second resumption: %v, sent %v", twice.Results, l.sent())
			}
		})
	}
}

// A denial is answered with its reason; a denial that halts answers the
// calls allowed with it as halted, unsent, and halts the turn. A call
// without a decision stays pending; decisions that name no pending call,
// or allow a call without its input, are refused before anything is sent.
func TestResumeDenyHaltAndUndecided(t *testing.T) {
	hub, l := deferringHub(t)
	ctx := context.Background()
	p := adapters.OpenAIChat
	conv, err := adapters.NewConversation(ctx, hub, p, stateOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	exec, err := conv.Execute(ctx, script(p,
		scripted{id: "a", name: "lab__echo", args: map[string]any{"message": "1"}},
		scripted{id: "b", name: "lab__deploy", args: map[string]any{}},
		scripted{id: "c", name: "lab__echo", args: map[string]any{"message": "3"}}))
	if err != nil || len(exec.Pending) != 3 {
		t.Fatalf("%v %+v", err, exec)
	}
	if _, err := conv.Resume(ctx, map[string]adapters.Ruling{"zz": {Allow: true}}); err == nil || !strings.Contains(err.Error(), `"zz"`) {
		t.Errorf("unknown id: %v", err)
	}
	// a is denied; b and c wait.
	part, err := conv.Resume(ctx, map[string]adapters.Ruling{"a": {Reason: "not that one"}})
	if err != nil {
		t.Fatal(err)
	}
	if part.Complete() || len(part.Pending) != 2 || part.Pending[0].ID != "b" || part.Results[0] == nil ||
		!strings.Contains(canon(part.Results[0]), "The call to lab__echo was denied: not that one.") {
		t.Fatalf("partial: %+v", part)
	}
	// b is denied with a halt: c, allowed with it, is halted.
	done, err := conv.Resume(ctx, map[string]adapters.Ruling{"b": {Reason: "stop", Halt: true}, "c": {Allow: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !done.Complete() || !done.Halted || !errors.Is(done.Errors[2], conduit.ErrHalted) || !errors.Is(done.Errors[1], conduit.ErrDenied) {
		t.Fatalf("halted: %+v", done.Errors)
	}
	if len(l.sent()) != 0 {
		t.Errorf("sent %v", l.sent())
	}
}

// Two resumptions of one state at once: the call is sent once; the other
// resumption answers with the recorded answer, or, while there is none,
// says that the call was decided elsewhere, and never sends it.
func TestResumeConcurrent(t *testing.T) {
	hub, l := deferringHub(t)
	ctx := context.Background()
	p := adapters.Anthropic
	claims := store.NewMemory()
	defer claims.Close()
	conv, err := adapters.NewConversation(ctx, hub, p, stateOpts(claims))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Execute(ctx, script(p, scripted{id: "d", name: "lab__slow", args: map[string]any{}},
		scripted{id: "e", name: "lab__echo", args: map[string]any{"message": "once"}})); err != nil {
		t.Fatal(err)
	}
	state, err := conv.State()
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	var wg sync.WaitGroup
	results := make([]*adapters.Execution, n)
	for i := range n {
		wg.Go(func() {
			c, err := adapters.ResumeConversation(ctx, hub, p, state, stateOpts(claims))
			if err != nil {
				t.Error(err)
				return
			}
			if results[i], err = c.Resume(ctx, map[string]adapters.Ruling{"e": {Allow: true}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if echoes := count(l.sent(), "echo"); echoes != 1 {
		t.Fatalf("the server saw echo %d times", echoes)
	}
	sent, elsewhere := 0, 0
	for _, r := range results {
		if r == nil || !r.Complete() {
			t.Fatalf("incomplete: %+v", r)
		}
		switch {
		case r.Errors[1] == nil && strings.Contains(canon(r.Results[1]), "Echo: once"):
			sent++
		case errors.Is(r.Errors[1], adapters.ErrDecidedElsewhere):
			elsewhere++
			if !strings.Contains(canon(r.Results[1]), "whether it was made is unknown") {
				t.Errorf("answer %s", canon(r.Results[1]))
			}
		default:
			t.Errorf("answer %v %s", r.Errors[1], canon(r.Results[1]))
		}
	}
	if sent < 1 || sent+elsewhere != n {
		t.Errorf("%d answered with the result, %d decided elsewhere", sent, elsewhere)
	}
}

// A tool whose definition changes between the deferral and the decision is
// not run on the decision: its answer says so, nothing is sent, and a
// conversation restored after the change leaves it out of its offer.
func TestResumeToolChanged(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "ops", Version: "1"}, nil)
	var mu sync.Mutex
	var sent []string
	handler := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		sent = append(sent, req.Params.Name)
		mu.Unlock()
		return text("done"), nil
	}
	srv.AddTool(&mcp.Tool{Name: "wipe", Description: "Wipes the staging disk.", InputSchema: obj(map[string]any{})}, handler)
	srv.AddTool(&mcp.Tool{Name: "list", Description: "Lists.", InputSchema: obj(map[string]any{})}, handler)
	tr, _ := connect(t, srv)
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "ops", Transport: tr}}, &conduit.Options{
		Policy: conduit.NewPolicy(conduit.Ask("ops/wipe"), conduit.Allow("*")), Approver: conduit.DeferAll("ask"), Store: memoryStore(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	p := adapters.Gemini
	o := stateOpts(nil)
	conv, err := adapters.NewConversation(ctx, hub, p, o)
	if err != nil {
		t.Fatal(err)
	}
	exec, err := conv.Execute(ctx, script(p, scripted{name: "ops__wipe", args: map[string]any{}}))
	if err != nil || len(exec.Pending) != 1 || exec.Pending[0].ID != "#1" {
		t.Fatalf("%v %+v", err, exec)
	}
	state, err := conv.State()
	if err != nil {
		t.Fatal(err)
	}
	// The server now says wipe wipes production.
	srv.AddTool(&mcp.Tool{Name: "wipe", Description: "Wipes the production disk.", InputSchema: obj(map[string]any{})}, handler)
	waitFor(t, func() bool {
		ts, err := hub.ListTools(ctx)
		if err != nil {
			return false
		}
		w, _ := ts.Lookup("ops__wipe")
		return w != nil && strings.Contains(w.Description, "production")
	})
	done, err := conv.Resume(ctx, map[string]adapters.Ruling{"#1": {Allow: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(done.Errors[0], adapters.ErrToolChanged) || !strings.Contains(canon(done.Results[0]), "definition changed") || len(sent) != 0 {
		t.Fatalf("changed: %v %s, sent %v", done.Errors[0], canon(done.Results[0]), sent)
	}
	back, err := adapters.ResumeConversation(ctx, hub, p, state, o)
	if err != nil {
		t.Fatal(err)
	}
	var warned bool
	for _, w := range back.Listing().Warnings {
		warned = warned || (w.Tool == "ops__wipe" && strings.Contains(w.Message, "definition changed"))
	}
	if _, offered := back.Listing().ToolSet.Lookup("ops__wipe"); offered || !warned {
		t.Errorf("the changed tool: offered %v, warnings %v", offered, back.Listing().Warnings)
	}
}

func count(xs []string, x string) int {
	n := 0
	for _, s := range xs {
		if s == x {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A server of protocol 2026-07-28 that asks for input during a call, whose
// handler defers it: the pending call carries the question; the state
// carries it and the server's request state to another Conversation; the
// answer given with the decision goes back to the server, which finishes.
func TestResumeDeferredElicitation(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "forms", Version: "1"}, nil)
	var mu sync.Mutex
	var states []string
	srv.AddTool(&mcp.Tool{Name: "book", Description: "Books a room.", InputSchema: obj(map[string]any{"room": str})},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			states = append(states, req.Params.RequestState)
			mu.Unlock()
			if r, ok := req.Params.InputResponses["date"].(*mcp.ElicitResult); ok && req.Params.RequestState == "step-1" {
				return text(fmt.Sprintf("booked for %v", r.Content["date"])), nil
			}
			return &mcp.CallToolResult{RequestState: "step-1", InputRequests: mcp.InputRequestMap{
				"date": &mcp.ElicitParams{Message: "Which date?", RequestedSchema: obj(map[string]any{"date": str})},
			}}, nil
		})
	ctx := context.Background()
	var asked int
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "forms", Transport: func() mcp.Transport { tr, _ := connect(t, srv); return tr }()}},
		&conduit.Options{Policy: conduit.AllowAll(), Store: memoryStore(t), Handlers: &conduit.Handlers{
			Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked++
				return nil, conduit.DeferInput("the user fills in a form")
			}}})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	p := adapters.OpenAIResponses
	conv, err := adapters.NewConversation(ctx, hub, p, stateOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	exec, err := conv.Execute(ctx, script(p, scripted{id: "fc_1", name: "forms__book", args: map[string]any{"room": "blue"}}))
	if err != nil || len(exec.Pending) != 1 {
		t.Fatalf("%v %+v", err, exec)
	}
	in := exec.Pending[0].Input
	if q, ok := in.Requests["date"].(*mcp.ElicitParams); !ok || q.Message != "Which date?" || in.RequestState != "step-1" || exec.Pending[0].Rule != "" {
		t.Fatalf("pending input %+v", in)
	}
	back, _ := reopen(t, ctx, conv, hub, p, stateOpts(nil))
	if _, err := back.Resume(ctx, map[string]adapters.Ruling{"fc_1": {Allow: true}}); err == nil || !strings.Contains(err.Error(), "date") {
		t.Fatalf("allowed without the answer: %v", err)
	}
	done, err := back.Resume(ctx, map[string]adapters.Ruling{"fc_1": {Allow: true, Input: mcp.InputResponseMap{
		"date": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"date": "2026-09-01"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !done.Complete() || !strings.Contains(canon(done.Results[0]), "booked for 2026-09-01") {
		t.Fatalf("resumed: %v %s", done.Errors, canon(done.Results))
	}
	if asked != 1 || !slices.Equal(states, []string{"", "step-1"}) {
		t.Errorf("asked %d, request states %q", asked, states)
	}
}

// TestResumeTurnBudget: a turn answered in steps is within the turn's
// budget as the turn answered at once is. Four large results share a
// turn's budget of 3,000 tokens (each within its own of 2,000); two of
// the calls are deferred. When both are allowed (in one Resume, or one
// Resume each, the conversation restored from its state in between) the
// completed turn's answers are those of the turn answered at once, for
// every provider. When one is denied, the answers written before stay as
// they were, and the turn is still within its budget.
func TestResumeTurnBudget(t *testing.T) {
	const perResult, perTurn = 2000, 3000
	big := map[string]any{"lines": 2000}
	calls := []scripted{{id: "c1", name: "free__report", args: big}, {id: "c2", name: "asked__report", args: big},
		{id: "c3", name: "free__report", args: big}, {id: "c4", name: "asked__report", args: big}}
	policy := conduit.NewPolicy(conduit.Ask("asked/*"), conduit.Allow("*"))
	servers := func() []conduit.Server { return []conduit.Server{{ID: "free"}, {ID: "asked"}} }
	opts := func() *adapters.ConversationOptions {
		o := stateOpts(store.NewMemory())
		o.Answers.MaxResultTokens, o.Budget.MaxTurnTokens = perResult, perTurn
		return o
	}
	kept := func(bs []toolcall.Budgeted) (n int) {
		for _, b := range bs {
			n += b.Kept
		}
		return n
	}
	ctx := context.Background()
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			approveAll := func(context.Context, conduit.ApprovalRequest) conduit.Approval { return conduit.Approve() }
			onceHub, _ := reportHubWith(t, &conduit.Options{Policy: policy, Approver: approveAll}, servers()...)
			once := turn(t, newConv(t, onceHub, p, opts()), p, calls...)
			if !once.Complete() || kept(once.Budgets) > perTurn {
				t.Fatalf("at once: %+v", once.Budgets)
			}
			for _, b := range once.Budgets {
				if !b.Cut || b.Budget != perTurn/len(calls) {
					t.Fatalf("at once, each result gets an equal share: %+v", once.Budgets)
				}
			}

			hub, received := reportHubWith(t, &conduit.Options{Policy: policy, Approver: conduit.DeferAll("later")}, servers()...)
			resume := func(conv *adapters.Conversation, d map[string]adapters.Ruling) *adapters.Execution {
				t.Helper()
				back, _ := reopen(t, ctx, conv, hub, p, opts())
				exec, err := back.Resume(ctx, d)
				if err != nil {
					t.Fatal(err)
				}
				return exec
			}
			paused := turn(t, newConv(t, hub, p, opts()), p, calls...)
			if len(paused.Pending) != 2 || received() != 2 {
				t.Fatalf("pending %+v", paused.Pending)
			}
			// Each pending call held its place: the answers written are those
			// of the turn answered at once.
			for _, i := range []int{0, 2} {
				if canon(paused.Results[i]) != canon(once.Results[i]) || paused.Budgets[i] != once.Budgets[i] {
					t.Errorf("call %d when the turn paused: %+v, at once %+v", i, paused.Budgets[i], once.Budgets[i])
				}
			}

			// Both allowed at once, in this process and in another.
			conv := newConv(t, hub, p, opts())
			turn(t, conv, p, calls...)
			done := resume(conv, map[string]adapters.Ruling{"c2": {Allow: true}, "c4": {Allow: true}})
			if !done.Complete() || canon(done.Results) != canon(once.Results) || !slices.Equal(done.Budgets, once.Budgets) {
				t.Errorf("resumed: %+v\nat once: %+v", done.Budgets, once.Budgets)
			}
			done, err := conv.Resume(ctx, map[string]adapters.Ruling{"c2": {Allow: true}, "c4": {Allow: true}})
			if err != nil {
				t.Fatal(err)
			}
			if !done.Complete() || canon(done.Results) != canon(once.Results) || !slices.Equal(done.Budgets, once.Budgets) {
				t.Errorf("resumed in the same process: %+v\nat once: %+v", done.Budgets, once.Budgets)
			}

			// One at a time, each in a process of its own: c4 holds its
			// place while c2 is answered.
			conv = newConv(t, hub, p, opts())
			turn(t, conv, p, calls...)
			half, _ := reopen(t, ctx, conv, hub, p, opts())
			first, err := half.Resume(ctx, map[string]adapters.Ruling{"c2": {Allow: true}})
			if err != nil {
				t.Fatal(err)
			}
			if first.Complete() || canon(first.Results[1]) != canon(once.Results[1]) {
				t.Errorf("c2 resumed first: %+v", first.Budgets[1])
			}
			done = resume(half, map[string]adapters.Ruling{"c4": {Allow: true}})
			if !done.Complete() || canon(done.Results) != canon(once.Results) || !slices.Equal(done.Budgets, once.Budgets) {
				t.Errorf("resumed in two steps: %+v\nat once: %+v", done.Budgets, once.Budgets)
			}

			// c2 denied: the answers written before are kept as they were,
			// c4 is answered within what is left.
			conv = newConv(t, hub, p, opts())
			paused = turn(t, conv, p, calls...)
			done = resume(conv, map[string]adapters.Ruling{"c2": {Reason: "no"}, "c4": {Allow: true}})
			if !done.Complete() || kept(done.Budgets) > perTurn {
				t.Fatalf("with a denial: %+v", done.Budgets)
			}
			for _, i := range []int{0, 2} {
				if canon(done.Results[i]) != canon(paused.Results[i]) || done.Budgets[i] != paused.Budgets[i] {
					t.Errorf("call %d was written again: %+v", i, done.Budgets[i])
				}
			}
			if b := done.Budgets[3]; !b.Cut || b.Budget < once.Budgets[3].Budget || b.Budget > perResult {
				t.Errorf("c4 after a denial: %+v", b)
			}

			// Resumed under a smaller turn's budget than it paused with: the
			// calls resumed share what the answers written before left of it.
			conv = newConv(t, hub, p, opts())
			turn(t, conv, p, calls...)
			smaller := opts()
			smaller.Budget.MaxTurnTokens = 2000
			back, _ := reopen(t, ctx, conv, hub, p, smaller)
			done, err = back.Resume(ctx, map[string]adapters.Ruling{"c2": {Allow: true}, "c4": {Allow: true}})
			if err != nil {
				t.Fatal(err)
			}
			if n := kept(done.Budgets); !done.Complete() || n > 2000 || n < 1900 || done.Budgets[1].Budget != done.Budgets[3].Budget {
				t.Errorf("under a smaller budget: %d kept, %+v", n, done.Budgets)
			}
		})
	}
}

// TestResumeReadTool: a Conversation with the read tool, saved and
// restored with the same options, offers byte-identical tools (the read
// tool through the same listing, with conduit's search, the provider's
// own, or none), and its state names the servers' tools only. What the
// first process kept is gone without a shared Keeper, and the read says
// so; a call cut on Resume is kept by the restored one; a read_result
// call deferred by the policy is answered by the Conversation on Resume.
func TestResumeReadTool(t *testing.T) {
	ctx := context.Background()
	big := map[string]any{"lines": 3000}
	policy := conduit.NewPolicy(conduit.Ask("asked/*", "conduit/read_result"), conduit.Allow("*"))
	for _, p := range adapters.Providers() {
		for _, search := range []string{"none", "conduit", "own"} {
			t.Run(p.String()+"/"+search, func(t *testing.T) {
				hub, _ := reportHubWith(t, &conduit.Options{Policy: policy, Approver: conduit.DeferAll("later")},
					conduit.Server{ID: "r"}, conduit.Server{ID: "asked"})
				opts := func(keeper adapters.Keeper) *adapters.ConversationOptions {
					o := stateOpts(nil)
					o.Read = adapters.ReadOptions{On: true, Keeper: keeper}
					o.Answers.MaxResultTokens = 1000
					if search != "none" {
						o.Search = adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: search == "conduit", AlwaysLoaded: []string{"r/report", "asked/report"}}
					}
					return o
				}
				conv := newConv(t, hub, p, opts(nil))
				if _, ok := conv.Listing().ToolSet.Lookup(adapters.ReadToolName); !ok {
					t.Fatal("read_result is not offered")
				}
				exec := turn(t, conv, p, scripted{id: "c1", name: "r__report", args: big}, scripted{id: "c2", name: "asked__report", args: big})
				before := exec.Budgets[0].Ref
				if before == "" || len(exec.Pending) != 1 {
					t.Fatalf("budgets %+v, pending %+v", exec.Budgets, exec.Pending)
				}
				back, state := reopen(t, ctx, conv, hub, p, opts(nil))
				if canon(back.Tools()) != canon(conv.Tools()) {
					t.Fatalf("the tools offered changed:\n%s\n%s", canon(back.Tools()), canon(conv.Tools()))
				}
				// Restored without the read tool: it is simply not offered,
				// and nothing of the servers' tools is missing.
				off := opts(nil)
				off.Read = adapters.ReadOptions{}
				plain, err := adapters.ResumeConversation(ctx, hub, p, state, off)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := plain.Listing().ToolSet.Lookup(adapters.ReadToolName); ok || len(plain.Listing().Warnings) != len(conv.Listing().Warnings) {
					t.Errorf("restored without the read tool: warnings %v", plain.Listing().Warnings)
				}

				done, err := back.Resume(ctx, map[string]adapters.Ruling{"c2": {Allow: true}})
				if err != nil {
					t.Fatal(err)
				}
				after := done.Budgets[1].Ref
				if !done.Complete() || after == "" || done.Budgets[0].Ref != before {
					t.Fatalf("resumed: %+v", done.Budgets)
				}
				read := func(conv *adapters.Conversation, ref string) string {
					t.Helper()
					exec := turn(t, conv, p, scripted{id: "read", name: adapters.ReadToolName, args: map[string]any{"result": ref, "line": 3000}})
					if len(exec.Pending) == 1 { // the policy asks: allow it
						done, err := conv.Resume(ctx, map[string]adapters.Ruling{exec.Pending[0].ID: {Allow: true}})
						if err != nil {
							t.Fatal(err)
						}
						exec = done
					}
					return resultText(p, exec.Results[0])
				}
				if text := read(back, before); !strings.Contains(text, "is not kept") || !strings.Contains(text, "carried on elsewhere") {
					t.Errorf("a result kept before the save: %q", text)
				}
				if text := read(back, after); !strings.Contains(text, reportLine(3000)) {
					t.Errorf("a result cut on Resume: %q", text)
				}

				// With a Keeper shared by both, the restored one reads what the
				// first kept, through a read_result call deferred and resumed
				// after the save.
				shared := adapters.NewMemoryKeeper(0)
				first := newConv(t, hub, p, opts(shared))
				ref := turn(t, first, p, scripted{id: "c1", name: "r__report", args: big}).Budgets[0].Ref
				asked := turn(t, first, p, scripted{id: "read", name: adapters.ReadToolName, args: map[string]any{"result": ref, "line": 3000}})
				if len(asked.Pending) != 1 {
					t.Fatalf("the read is not deferred: %v", asked.Errors)
				}
				if state, err = first.State(); err != nil {
					t.Fatal(err)
				}
				second, err := adapters.ResumeConversation(ctx, hub, p, state, opts(shared))
				if err != nil {
					t.Fatal(err)
				}
				done, err = second.Resume(ctx, map[string]adapters.Ruling{"read": {Allow: true}})
				if err != nil {
					t.Fatal(err)
				}
				if text := resultText(p, done.Results[0]); done.Errors[0] != nil || !strings.Contains(text, reportLine(3000)) {
					t.Errorf("the deferred read: %v %q", done.Errors[0], text)
				}
				if !slices.Equal(second.Taint(), []string{"r"}) {
					t.Errorf("the read tool's answer tainted: %v", second.Taint())
				}
			})
		}
	}
}

// Two branches of one conversation, resumed from the same saved state (a
// turn answered again, an older state kept), each pause a turn of the
// same number with a call at the same position: each decided call runs
// and gets its own answer, never the other branch's recorded one.
func TestResumeBranches(t *testing.T) {
	p := adapters.Anthropic
	hub, l := deferringHub(t)
	ctx := context.Background()
	conv, err := adapters.NewConversation(ctx, hub, p, stateOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Execute(ctx, script(p, scripted{id: "c1", name: "lab__text", args: map[string]any{}})); err != nil {
		t.Fatal(err)
	}
	saved, err := conv.State()
	if err != nil {
		t.Fatal(err)
	}
	var paused [][]byte
	for _, msg := range []string{"branch one", "branch two"} {
		b, err := adapters.ResumeConversation(ctx, hub, p, saved, stateOpts(nil))
		if err != nil {
			t.Fatal(err)
		}
		exec, err := b.Execute(ctx, script(p, scripted{id: "c2", name: "lab__echo", args: map[string]any{"message": msg}}))
		if err != nil || len(exec.Pending) != 1 {
			t.Fatalf("%s: %v, pending %+v", msg, err, exec.Pending)
		}
		st, err := b.State()
		if err != nil {
			t.Fatal(err)
		}
		paused = append(paused, st)
	}
	for i, msg := range []string{"branch one", "branch two"} {
		b, err := adapters.ResumeConversation(ctx, hub, p, paused[i], stateOpts(nil))
		if err != nil {
			t.Fatal(err)
		}
		done, err := b.Resume(ctx, map[string]adapters.Ruling{"c2": {Allow: true}})
		if err != nil {
			t.Fatal(err)
		}
		if got := canon(done.Results[0]); !strings.Contains(got, "Echo: "+msg) {
			t.Errorf("%s resumed: %s", msg, got)
		}
	}
	if count(l.sent(), "echo") != 2 {
		t.Errorf("sent %v: want each branch's echo once", l.sent())
	}
}
