package soak_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/testenv"
)

// The short run's sizes are the flags' defaults; scripts/soak passes larger
// ones (go test ... -args -soak.calls=50000).
var (
	flagCalls    = flag.Int("soak.calls", 2000, "calls the callers make (at least: the run goes on until every planned fault is injected)")
	flagCallers  = flag.Int("soak.callers", 16, "concurrent callers")
	flagServers  = flag.Int("soak.servers", 3, "server-everything children over stdio")
	flagKills    = flag.Int("soak.kills", 0, "servers killed with SIGKILL, one at a time (0: one per 2,500 calls, at least 3)")
	flagStalls   = flag.Int("soak.stalls", 0, "servers stalled with SIGSTOP (0: one per 10,000 calls, at least 1)")
	flagStallFor = flag.Duration("soak.stall", 6*time.Second, "how long a stalled server stays stopped before SIGCONT")
	flagHostile  = flag.Int("soak.hostile", 0, "hostile responses (0: one per 250 calls, at least two of each kind)")
	flagMany     = flag.Int("soak.many", 1000, "calls in a hostile response of thousands of calls")
	flagDuration = flag.Duration("soak.duration", 0, "stop issuing calls after this long (0: no bound but the calls)")
	flagTimeout  = flag.Duration("soak.timeout", 5*time.Minute, "fail when the callers are not done by then (a hang)")
	flagSummary  = flag.String("soak.summary", "", "file the summary table is written to")
	flagSeed     = flag.Uint64("soak.seed", 0, "random seed (0: from the clock; the seed is logged)")
	flagHeapProf = flag.String("soak.heapprofile", "", "file a heap profile is written to at the end of the run, before Close")
)

// Bounds of the hub under test. RequestTimeout is below the stall, so a
// stalled server's calls time out; CallTimeout bounds every call whatever
// happens.
const (
	requestTimeout = 4 * time.Second
	callTimeout    = 30 * time.Second
)

// The policy's denials, observed from inside the servers: get-env is
// denied to everyone, and echo when its message holds forbidden.
const forbidden = "FORBIDDEN"

func policy() *conduit.Policy {
	return conduit.NewPolicy(
		conduit.Deny("*/get-env"),
		conduit.Deny("*/echo").When(conduit.ConditionFunc(func(c *conduit.Call) bool {
			m, _ := c.Args["message"].(string)
			return strings.Contains(m, forbidden)
		})),
		conduit.Allow("*"),
	)
}

// planned is one tool call written into a response, and what its answer
// may be.
type planned struct {
	id, name string
	args     any
	// echo, when set, is the message of an echo call: a result must read
	// "Echo: " + echo, and its first word is the key under which the
	// recorder finds the request on a server.
	echo string
	sum  []float64 // a get-sum call's operands: a result must state the sum
	// denied: the policy denies it; rejected: an unknown name or
	// arguments that are not an object. Neither may have a result.
	denied, rejected bool
	// kinds, when set, are the kinds its error must be one of.
	kinds []*conduit.Error
}

func (c planned) raw() toolcall.Raw { return toolcall.Raw{ID: c.id, Name: c.name, Args: c.args} }

// soak is one run.
type soak struct {
	t       *testing.T
	hub     *conduit.Hub
	servers []string
	budget  int64
	recDir  string

	issued  atomic.Int64  // calls the callers have written into responses
	hostile atomic.Int64  // calls in hostile responses
	stop    chan struct{} // closed: write no more calls (the duration is over)
	injDone chan struct{} // closed: every planned fault is injected
	seq     atomic.Int64  // for unique ids

	mu sync.Mutex
	// answers counts, per call id, the answers due and those given. It
	// holds every id of the run, so it is small: two counters.
	answers map[string]tally
	// pipeline counts the pipeline's CallDone events per call id, until
	// the call's response is checked.
	pipeline map[string]int
	okEcho   map[string]bool
	outcomes map[string]int // "result" or the error's kind
	problems map[string][]string
	nprob    map[string]int
	callLat  []time.Duration // per call in the pipeline (CallDone.Elapsed)
	turnLat  []time.Duration // per response, from Execute to its answers
	// slowest are the slowest call and response, and what they were.
	slowest, slowestTurn struct {
		took time.Duration
		what string
	}
	faults map[string]int
	turns  int
	unread int // hostile responses refused as unreadable
	// notOffered counts the allowed calls to a tool the tool set left
	// out (its server was down when it was listed); offered, the tools of
	// each conversation.
	notOffered int
	offered    []int
	ups        int
	downs      map[string]int // sessions lost, by why
	downAt     map[string]time.Time
	recon      []time.Duration // from a server's loss to its next session

	stalled atomic.Int64 // the pid under SIGSTOP, 0 when none
	samples []sample
}

// problem records an invariant's violation.
func (s *soak) problem(what, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problemLocked(what, format, args...)
}

func (s *soak) problemLocked(what, format string, args ...any) {
	s.nprob[what]++
	if len(s.problems[what]) < 10 {
		msg := fmt.Sprintf(format, args...)
		if len(msg) > 600 {
			msg = msg[:600] + "…"
		}
		s.problems[what] = append(s.problems[what], msg)
	}
}

func (s *soak) fault(kind string) {
	s.mu.Lock()
	s.faults[kind]++
	s.mu.Unlock()
}

func (s *soak) id(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, s.seq.Add(1))
}

func (s *soak) trace() *conduit.Trace {
	return &conduit.Trace{
		CallDone: func(i conduit.CallDoneInfo) {
			s.mu.Lock()
			s.callLat = append(s.callLat, i.Elapsed)
			if i.Elapsed > s.slowest.took {
				s.slowest.took, s.slowest.what = i.Elapsed, fmt.Sprintf("%s: %v", i.Call.Exposed, i.Err)
			}
			if i.Call != nil && i.Call.ID != "" {
				s.pipeline[i.Call.ID]++
			}
			s.mu.Unlock()
		},
		ServerUp: func(i conduit.ServerEvent) {
			s.mu.Lock()
			s.ups++
			if at, ok := s.downAt[i.Server]; ok {
				s.recon = append(s.recon, time.Since(at))
				delete(s.downAt, i.Server)
			}
			s.mu.Unlock()
		},
		ServerDown: func(i conduit.ServerEvent) {
			why := "?"
			if i.Err != nil {
				why = strings.Join(strings.Fields(i.Err.Error()), " ")
				if len(why) > 100 {
					why = why[:100] + "…"
				}
			}
			s.mu.Lock()
			s.downs[why]++
			if _, ok := s.downAt[i.Server]; !ok {
				s.downAt[i.Server] = time.Now()
			}
			s.mu.Unlock()
		},
	}
}

// TestSoak is the soak under faults; see the package doc. Its sizes come
// from the soak.* flags.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test")
	}
	node, args := testenv.Everything(t)
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -args -soak.seed=%d)", seed, seed)
	recDir := t.TempDir()
	recorder := filepath.Join(testenv.RepoRoot(), "internal", "soak", "testdata", "record.cjs")
	// node --env-file=... --require record.cjs server.js stdio
	serverArgs := append([]string{args[0], "--require", recorder}, args[1:]...)

	nservers := max(*flagServers, 1)
	var servers []conduit.Server
	var ids []string
	for i := range nservers {
		id := fmt.Sprintf("ev%d", i+1)
		ids = append(ids, id)
		servers = append(servers, conduit.Server{ID: id, Command: node, Args: serverArgs,
			Env: map[string]string{"SOAK_RECORD_DIR": recDir, "SOAK_SERVER_ID": id}})
	}

	// What the process holds before the hub: the poller's descriptors are
	// made on first use, so make them now.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	runtime.GC()
	baseG, baseFD := goroutines(), fds()
	if kids := children(); len(kids) > 0 {
		t.Fatalf("child processes before the hub: %v", kids)
	}

	s := &soak{
		t: t, servers: ids, budget: int64(max(*flagCalls, 1)), recDir: recDir,
		stop: make(chan struct{}), injDone: make(chan struct{}),
		answers: map[string]tally{}, pipeline: map[string]int{},
		okEcho: map[string]bool{}, outcomes: map[string]int{}, problems: map[string][]string{},
		nprob: map[string]int{}, faults: map[string]int{}, downs: map[string]int{}, downAt: map[string]time.Time{},
	}
	ctx := context.Background()
	startCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	hub, err := conduit.NewHub(startCtx, servers, &conduit.Options{Policy: policy(),
		Validate:       true,
		CallTimeout:    callTimeout,
		RequestTimeout: requestTimeout,
		Reconnect:      conduit.Backoff{Min: 100 * time.Millisecond, Max: time.Second},
		Trace:          s.trace()})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	s.hub = hub
	closed := false
	defer func() {
		if !closed {
			hub.Close()
		}
	}()
	if !waitUp(hub, 90*time.Second) {
		t.Fatalf("the servers did not all come up: %+v", hub.Status())
	}
	ts, err := hub.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for tool := range ts.All() {
		known[tool.Name] = true
	}
	for _, name := range []string{"echo", "get-sum", "get-structured-content"} {
		if _, ok := ts.Lookup(ids[0] + "__" + name); !ok {
			t.Fatalf("%s__%s is not listed", ids[0], name)
		}
	}

	// The run.
	rng := rand.New(rand.NewPCG(seed, 0))
	plan := s.plan(rng)
	memDone := make(chan struct{})
	memStopped := make(chan struct{})
	s.sampleNow(true)
	go s.sampler(memDone, memStopped)
	start := time.Now()
	if *flagDuration > 0 {
		timer := time.AfterFunc(*flagDuration, func() { close(s.stop) })
		defer timer.Stop()
	}
	var callers sync.WaitGroup
	for i := range max(*flagCallers, 1) {
		callers.Go(func() { s.caller(ctx, i, rand.New(rand.NewPCG(seed, uint64(i)+1))) })
	}
	var injector sync.WaitGroup
	injector.Go(func() { s.inject(ctx, plan, rand.New(rand.NewPCG(seed, 1<<32))) })

	done := make(chan struct{})
	go func() { callers.Wait(); injector.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(*flagTimeout):
		if pid := s.stalled.Load(); pid != 0 {
			syscall.Kill(int(pid), syscall.SIGCONT)
		}
		t.Fatalf("the run did not end within %v (issued %d calls): a call is never answered?\n\n%s",
			*flagTimeout, s.issued.Load(), strings.Join(newGoroutines(baseG), "\n\n"))
	}
	elapsed := time.Since(start)

	// The hub recovers: every server comes back and answers.
	recovered := waitUp(hub, 90*time.Second)
	if !recovered {
		s.problem("not recovered", "servers after the run: %+v", hub.Status())
	} else {
		s.finalCalls(ctx)
	}
	close(memDone)
	<-memStopped
	s.sampleNow(true)
	heapEnd := s.samples[len(s.samples)-1].live
	if *flagHeapProf != "" {
		if f, err := os.Create(*flagHeapProf); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}

	// Close, and what is left.
	startedPIDs := recordedPIDs(recDir)
	closeStart := time.Now()
	if err := hub.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed = true
	closeTook := time.Since(closeStart)
	leakedG := waitFor(10*time.Second, func() []string { return newGoroutines(baseG) })
	leakedFD := waitFor(5*time.Second, func() []string { return newFDs(baseFD) })
	leakedKids := waitFor(5*time.Second, func() []string {
		var out []string
		for _, p := range children() {
			out = append(out, fmt.Sprintf("pid %d (%s, state %c)", p.pid, p.server, p.state))
		}
		for _, pid := range startedPIDs {
			if ourChild(pid) {
				out = append(out, fmt.Sprintf("started pid %d", pid))
			}
		}
		return out
	})

	// What reached the servers, as they read it.
	rec := readRecords(t, recDir, known)
	s.mu.Lock()
	for id := range s.okEcho {
		if !rec.echoes[id] {
			s.problemLocked("answer without request", "echo %s was answered with a result no server was asked for", id)
		}
	}
	for id, n := range s.answers {
		if n.got > n.due {
			s.problemLocked("answered twice", "%s: %d answers, %d due", id, n.got, n.due)
		}
	}
	for id, n := range s.pipeline {
		if n > max(int(s.answers[id].due), 1) {
			s.problemLocked("answered twice", "%s: %d CallDone events in the pipeline", id, n)
		}
	}
	s.mu.Unlock()
	for _, v := range rec.denied {
		s.problem("denied reached a server", "%s", v)
	}
	for _, v := range rec.rejected {
		s.problem("rejected reached a server", "%s", v)
	}

	sum := s.summary(summaryInput{
		elapsed: elapsed, closeTook: closeTook, rec: rec, heapEnd: heapEnd,
		leakedG: leakedG, leakedFD: leakedFD, leakedKids: leakedKids, startedPIDs: len(startedPIDs),
	})
	if *flagSummary != "" {
		if err := os.WriteFile(*flagSummary, []byte(sum), 0o644); err != nil {
			t.Error(err)
		}
	} else {
		t.Log("\n" + sum)
	}

	// The invariants.
	for _, what := range slices.Sorted(maps.Keys(s.nprob)) {
		t.Errorf("%s: %d times; first:\n\t%s", what, s.nprob[what], strings.Join(s.problems[what], "\n\t"))
	}
	if len(leakedG) > 0 {
		t.Errorf("%d goroutines outlived Close:\n\n%s", len(leakedG), strings.Join(leakedG, "\n\n"))
	}
	if len(leakedFD) > 0 {
		t.Errorf("file descriptors left after Close: %v", leakedFD)
	}
	if len(leakedKids) > 0 {
		t.Errorf("child processes left after Close: %v", leakedKids)
	}
	if s.issued.Load() < s.budget && *flagDuration == 0 {
		t.Errorf("%d calls made, %d planned", s.issued.Load(), s.budget)
	}
	for _, f := range plan {
		if f.kind == "kill" && s.faults["kill"] == 0 {
			t.Errorf("no server was killed")
			break
		}
	}
	if rec.calls == 0 {
		t.Errorf("the recorder saw no tools/call: the servers' side is not observed")
	}
	if msg := s.memoryGrowth(heapEnd); msg != "" {
		t.Error(msg)
	}
}

// waitUp waits until every server of h is up.
func waitUp(h *conduit.Hub, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		up := true
		for _, st := range h.Status() {
			up = up && st.State == conduit.StateUp
		}
		if up {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFor polls f until it returns nothing or d has passed, and returns
// its last answer: what is left is given time to go.
func waitFor(d time.Duration, f func() []string) []string {
	deadline := time.Now().Add(d)
	for {
		out := f()
		if len(out) == 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// finalCalls shows every server answering after the faults, through the
// adapters.
func (s *soak) finalCalls(ctx context.Context) {
	p := adapters.Providers()[0]
	ts, err := s.hub.ListTools(ctx)
	if err != nil {
		s.problem("not recovered", "ListTools: %v", err)
		return
	}
	var calls []planned
	for _, srv := range s.servers {
		id := s.id("final-")
		calls = append(calls, planned{id: id, name: srv + "__echo", args: map[string]any{"message": "m:" + id}, echo: "m:" + id})
	}
	exec, err, el := s.execute(ctx, p, nil, ts, calls, false)
	s.check(p, calls, exec, err, el)
	for i, c := range calls {
		if exec == nil || exec.Errors[i] != nil {
			var e error
			if exec != nil {
				e = exec.Errors[i]
			}
			s.problem("not recovered", "%s after the run: %v", c.name, e)
		}
	}
}

// execute writes calls as a response of p (as bytes or decoded, as an
// API client would hand it over) and runs it, in conv when there is one.
func (s *soak) execute(ctx context.Context, p adapters.Provider, conv *adapters.Conversation, ts *conduit.ToolSet, calls []planned, asBytes bool) (*adapters.Execution, error, time.Duration) {
	raws := make([]toolcall.Raw, len(calls))
	for i, c := range calls {
		raws[i] = c.raw()
	}
	// A server down when the tool set was listed left its tools out, and a
	// listing for a principal leaves out the tools the policy denies
	// outright (get-env): calls to them are unknown, and must be answered
	// so.
	offered := ts
	if conv != nil {
		offered = conv.Listing().ToolSet
	}
	down := map[string]bool{}
	for _, sk := range offered.Skipped() {
		if sk.Reason == conduit.SkipServerDown {
			down[sk.Server] = true
		}
	}
	for i := range calls {
		if _, ok := offered.Lookup(calls[i].name); !ok {
			if !calls[i].rejected && !calls[i].denied {
				s.mu.Lock()
				s.notOffered++
				s.mu.Unlock()
			}
			calls[i].rejected = true
			if i < adapters.DefaultMaxToolCalls {
				// Past the limit of calls a response, a call is answered
				// ErrLimit before its name is looked at. A tool of a
				// server that is down is unavailable (try again later),
				// not unknown.
				calls[i].kinds = []*conduit.Error{conduit.ErrUnknownTool}
				if server, _, ok := strings.Cut(calls[i].name, "__"); ok && down[server] {
					calls[i].kinds = []*conduit.Error{conduit.ErrUnavailable}
				}
			}
		}
	}
	body, err := json.Marshal(adaptertest.FakeOf(p).Response("", raws...))
	if err != nil {
		s.problem("test", "marshal: %v", err)
		return nil, err, 0
	}
	var response any = body
	if !asBytes {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			s.problem("test", "unmarshal: %v", err)
			return nil, err, 0
		}
		response = m
	}
	start := time.Now()
	var exec *adapters.Execution
	if conv != nil {
		exec, err = conv.Execute(ctx, response)
	} else {
		// Many calls at once, as a loop that runs a big response would.
		exec, err = adapters.ExecuteToolCalls(ctx, s.hub, p, response, &adapters.ExecOptions{ToolSet: ts, TurnOptions: adapters.TurnOptions{MaxConcurrency: 16}})
	}
	return exec, err, time.Since(start)
}

// answerIDs returns the call ids the results answer, as the provider's
// next request carries them.
func answerIDs(p adapters.Provider, results []map[string]any) []string {
	var ids []string
	for _, a := range adaptertest.FakeOf(p).Answered(p.Wire().Answers(results)) {
		ids = append(ids, a.ID)
	}
	return ids
}

// check checks the answers of one response: one per call, in order, each
// keyed by its call's id, each a result or a typed error, and each the
// right one.
func (s *soak) check(p adapters.Provider, calls []planned, exec *adapters.Execution, err error, elapsed time.Duration) {
	var ids, texts []string
	if err == nil && exec != nil {
		ids = answerIDs(p, exec.Results)
		texts = make([]string, len(exec.Results))
		for i, r := range exec.Results {
			if i < len(exec.Errors) && exec.Errors[i] == nil && r != nil {
				texts[i] = resultText(p, r)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns++
	s.turnLat = append(s.turnLat, elapsed)
	if elapsed > s.slowestTurn.took {
		s.slowestTurn.took, s.slowestTurn.what = elapsed, fmt.Sprintf("%s, %d calls", p, len(calls))
	}
	for _, c := range calls {
		s.due(c.id)
	}
	defer s.pipelineOnce(calls)
	if err != nil || exec == nil {
		s.problemLocked("answer lost", "%s: a response of %d calls was answered with %v", p, len(calls), err)
		return
	}
	if len(exec.Results) != len(calls) || len(exec.Errors) != len(calls) || len(ids) != len(calls) {
		s.problemLocked("answer lost", "%s: %d calls, %d results, %d errors, %d answers", p, len(calls), len(exec.Results), len(exec.Errors), len(ids))
	}
	for _, id := range ids {
		s.got(id)
	}
	for i, c := range calls {
		if i >= len(exec.Results) || i >= len(exec.Errors) || i >= len(ids) || exec.Results[i] == nil {
			s.problemLocked("answer lost", "%s: call %s (%s) has no answer", p, c.id, c.name)
			continue
		}
		if ids[i] != c.id {
			s.problemLocked("answer lost", "%s: call %s (%s) is answered as %q", p, c.id, c.name, ids[i])
		}
		e := exec.Errors[i]
		if e == nil {
			s.outcomes["result"]++
			switch {
			case c.denied:
				s.problemLocked("denied answered", "%s: denied call %s (%s) has a result: %.200s", p, c.id, c.name, texts[i])
			case c.rejected:
				s.problemLocked("rejected answered", "%s: call %s (%s, %.100v) has a result: %.200s", p, c.id, c.name, c.args, texts[i])
			case c.echo != "":
				if !echoed(texts[i], "Echo: "+c.echo, exec.Budgets[i]) {
					s.problemLocked("wrong answer", "%s: echo %s answered %.200q", p, c.id, texts[i])
				} else {
					s.okEcho[strings.Clone(strings.Fields(c.echo)[0])] = true // not a slice of a MiB message
				}
			case c.sum != nil:
				want := fmt.Sprintf("The sum of %v and %v is %v.", c.sum[0], c.sum[1], c.sum[0]+c.sum[1])
				if texts[i] != want {
					s.problemLocked("wrong answer", "%s: get-sum %s answered %.200q, want %q", p, c.id, texts[i], want)
				}
			}
			continue
		}
		var ce *conduit.Error
		if !errors.As(e, &ce) {
			s.outcomes["untyped error"]++
			s.problemLocked("untyped error", "%s: call %s (%s): %T %v", p, c.id, c.name, e, e)
			continue
		}
		s.outcomes[ce.Kind.String()]++
		if c.kinds != nil && !slices.Contains(c.kinds, ce.Kind) {
			s.problemLocked("wrong error", "%s: call %s (%s) answered %v (%s), want one of %v", p, c.id, c.name, ce.String(), ce.Message, c.kinds)
		}
	}
}

// tally is the answers due to a call id and those given.
type tally struct{ due, got uint32 }

func (s *soak) due(id string) { n := s.answers[id]; n.due++; s.answers[id] = n }
func (s *soak) got(id string) { n := s.answers[id]; n.got++; s.answers[id] = n }

// pipelineOnce checks that the pipeline ended each of calls at most as
// often as it was due, and forgets them. s.mu is held.
func (s *soak) pipelineOnce(calls []planned) {
	for _, c := range calls {
		if n, due := s.pipeline[c.id], int(s.answers[c.id].due); n > due {
			s.problemLocked("answered twice", "%s: %d CallDone events in the pipeline, %d due", c.id, n, due)
		}
		delete(s.pipeline, c.id)
	}
}

// resultText is the text of an answer, whatever the provider.
// echoed reports whether an echo's answer, text, is want: whole, or, for
// a result the budget cut (a message of half a MiB is over the default
// 25,000 tokens), its beginning followed by the budget's notice.
func echoed(text, want string, b toolcall.Budgeted) bool {
	if !b.Cut {
		return text == want
	}
	kept, _, ok := strings.Cut(text, "[conduit: the result was cut")
	kept = strings.TrimRight(kept, "\n")
	return ok && len(kept) > len("Echo: ") && strings.HasPrefix(want, kept)
}

func resultText(p adapters.Provider, answer map[string]any) string {
	switch p {
	case adapters.Anthropic:
		if s, ok := answer["content"].(string); ok {
			return s
		}
		var parts []string
		for _, b := range asList(answer["content"]) {
			if m, ok := b.(map[string]any); ok && m["type"] == "text" {
				s, _ := m["text"].(string)
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	case adapters.OpenAIChat:
		s, _ := answer["content"].(string)
		return s
	case adapters.OpenAIResponses:
		s, _ := answer["output"].(string)
		return s
	case adapters.Bedrock:
		tr, _ := answer["toolResult"].(map[string]any)
		var parts []string
		for _, b := range asList(tr["content"]) {
			if m, ok := b.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	default:
		fr, _ := answer["functionResponse"].(map[string]any)
		r, _ := fr["response"].(map[string]any)
		if e, ok := r["error"]; ok {
			return fmt.Sprint(e)
		}
		return fmt.Sprint(r["output"])
	}
}

func asList(v any) []any {
	switch l := v.(type) {
	case []any:
		return l
	case []map[string]any:
		out := make([]any, len(l))
		for i, m := range l {
			out[i] = m
		}
		return out
	}
	return nil
}

// take reserves n calls of the budget; false when the run is over: the
// budget is spent and every fault injected, or the duration is over.
func (s *soak) take(n int) bool {
	select {
	case <-s.stop:
		return false
	default:
	}
	if s.issued.Load() >= s.budget {
		select {
		case <-s.injDone:
			return false
		default:
		}
	}
	s.issued.Add(int64(n))
	return true
}

// caller is one agent: conversations of a few turns each, with a
// provider of its own, each turn's calls written as the model would and
// answered through the conversation, whose answers join the next
// request.
func (s *soak) caller(ctx context.Context, n int, rng *rand.Rand) {
	p := adapters.Providers()[n%len(adapters.Providers())]
	w := p.Wire()
	for {
		conv, err := adapters.NewConversation(ctx, s.hub, p, &adapters.ConversationOptions{
			Search: adapters.SearchOptions{Mode: adapters.SearchOff}, TurnOptions: adapters.TurnOptions{MaxConcurrency: 4},
		})
		if err != nil {
			s.problem("test", "NewConversation: %v", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		s.offered = append(s.offered, conv.Listing().ToolSet.Len())
		s.mu.Unlock()
		history := []any{w.Prompt("soak")}
		for range 3 + rng.IntN(8) {
			ncalls := 1 + rng.IntN(4)
			if !s.take(ncalls) {
				return
			}
			calls := make([]planned, ncalls)
			for i := range calls {
				calls[i] = s.ordinaryCall(rng)
			}
			exec, err, el := s.execute(ctx, p, conv, nil, calls, rng.IntN(2) == 0)
			s.check(p, calls, exec, err, el)
			if exec == nil {
				continue
			}
			// The next request, as an agent loop sends it.
			raws := make([]toolcall.Raw, len(calls))
			for i, c := range calls {
				raws[i] = c.raw()
			}
			turn, err := w.Turn(adaptertest.FakeOf(p).Response("", raws...))
			if err != nil {
				s.problem("test", "%s: Turn: %v", p, err)
			}
			history = append(history, turn.Items...)
			history = append(history, w.Answers(exec.Results)...)
			if _, err := json.Marshal(w.Request(toolcall.Request{Model: "soak", Tools: conv.Tools(), Conversation: history})); err != nil {
				s.problem("test", "%s: the next request: %v", p, err)
			}
			if rng.IntN(50) == 0 {
				s.directDenied(ctx, rng)
			}
		}
	}
}

// ordinaryCall is a call a model might make: mostly allowed, some denied
// by the policy.
func (s *soak) ordinaryCall(rng *rand.Rand) planned {
	srv := s.servers[rng.IntN(len(s.servers))]
	id := s.id("c")
	c := planned{id: id}
	switch r := rng.IntN(100); {
	case r < 40:
		c.name, c.echo = srv+"__echo", "m:"+id
		c.args = map[string]any{"message": c.echo}
	case r < 60:
		a, b := float64(rng.IntN(1000)), float64(rng.IntN(1000))
		c.name, c.sum, c.args = srv+"__get-sum", []float64{a, b}, map[string]any{"a": a, "b": b}
	case r < 68:
		c.name, c.args = srv+"__get-structured-content", map[string]any{"location": "Chicago"}
	case r < 73:
		c.name, c.args = srv+"__get-tiny-image", map[string]any{}
	case r < 78:
		c.name, c.args = srv+"__get-annotated-message", map[string]any{"messageType": "success"}
	case r < 83:
		// In flight long enough to be cut by a kill or a stall.
		c.name, c.args = srv+"__trigger-long-running-operation", map[string]any{"duration": 0.4, "steps": 2}
	case r < 93:
		c.name, c.denied = srv+"__echo", true
		c.args = map[string]any{"message": "m:" + id + " " + forbidden}
		c.kinds = []*conduit.Error{conduit.ErrDenied}
	default:
		c.name, c.denied, c.args = srv+"__get-env", true, map[string]any{}
		c.kinds = []*conduit.Error{conduit.ErrDenied, conduit.ErrUnknownTool}
	}
	return c
}

// directDenied calls a denied tool through the hub itself, without a
// response around it.
func (s *soak) directDenied(ctx context.Context, rng *rand.Rand) {
	if !s.take(1) {
		return
	}
	id := s.id("d")
	name := s.servers[rng.IntN(len(s.servers))] + "__get-env"
	res, err := s.hub.CallTool(ctx, name, map[string]any{}, &conduit.CallOptions{ID: id})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.due(id)
	s.got(id)
	s.pipelineOnce([]planned{{id: id}})
	switch {
	case err == nil:
		s.problemLocked("denied answered", "hub.CallTool(%s) = %v", name, res)
	case errors.Is(err, conduit.ErrDenied), errors.Is(err, conduit.ErrUnavailable):
		// Unavailable while the server is down: the hub's listing lacks
		// it, and says its server is down.
		var ce *conduit.Error
		errors.As(err, &ce)
		s.outcomes[ce.String()]++
	default:
		s.problemLocked("wrong error", "hub.CallTool(%s): %v, want denied", name, err)
	}
}
