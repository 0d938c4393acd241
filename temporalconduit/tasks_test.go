// A call that its server runs as a task (SEP-2663), under Temporal's test
// suite: the activity returns the task at once, the workflow waits on
// durable timers and polls once per tick, a cancelled workflow cancels
// the task. The server is a real conduit gateway over HTTP that makes
// the tasks, in front of an MCP server that counts what it is sent.
package temporalconduit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/temporalconduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
)

// jobServer is an MCP server whose tool report runs until released (or
// cancelled), counting its calls by the id argument.
type jobServer struct {
	srv *mcp.Server

	mu        sync.Mutex
	sent      map[string]int
	release   chan struct{} // closed to end the calls under way
	cancelled chan string   // ids of calls whose context ended first
	gets      atomic.Int64  // tasks/get requests the gateway was sent
	failGets  atomic.Int64  // tasks/get requests still to answer 503
}

func newJobServer() *jobServer {
	j := &jobServer{sent: map[string]int{}, release: make(chan struct{}), cancelled: make(chan string, 8)}
	j.srv = mcp.NewServer(&mcp.Implementation{Name: "jobs", Version: "1.0.0"}, nil)
	mcp.AddTool(j.srv, &mcp.Tool{Name: "report", Description: "Write a report; it takes a while."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in mailArgs) (*mcp.CallToolResult, any, error) {
			j.mu.Lock()
			j.sent[in.ID]++
			j.mu.Unlock()
			select {
			case <-j.release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "report " + in.ID + " written"}}}, nil, nil
			case <-ctx.Done():
				j.cancelled <- in.ID
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(j.srv, &mcp.Tool{Name: "confirm", Description: "Ask to confirm, then act."},
		func(_ context.Context, req *mcp.CallToolRequest, in mailArgs) (*mcp.CallToolResult, any, error) {
			if _, ok := req.Params.InputResponses["confirm"]; !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
					Message: "Act on " + in.ID + "?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}},
				}}}, nil, nil
			}
			j.mu.Lock()
			j.sent[in.ID]++
			j.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "acted on " + in.ID}}}, nil, nil
		})
	return j
}

func (j *jobServer) sends(id string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.sent[id]
}

// gateway serves j through a conduit gateway over HTTP, which runs every
// call of report as a task polled every 100ms, and returns its URL.
func (j *jobServer) gateway(t testing.TB) string {
	t.Helper()
	ct, srvT := mcp.NewInMemoryTransports()
	if _, err := j.srv.Connect(context.Background(), srvT, nil); err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(context.Background(), []conduit.Server{{ID: "jobs", Transport: ct}}, &gateway.Options{
		Hub:         &conduit.Options{Policy: conduit.AllowAll()},
		Transparent: true,
		Tasks:       &gateway.TaskOptions{Tools: []string{"jobs/report", "jobs/confirm"}, PollInterval: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	h, err := g.Handler(&gateway.HTTPOptions{NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tasks/get" {
			j.gets.Add(1)
			if j.failGets.Add(-1) >= 0 {
				http.Error(w, "the network fails", http.StatusServiceUnavailable)
				return
			}
			j.failGets.Store(0)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// jobClient is a worker's conduit client of the gateway at url. It defers
// what a server asks, for a person to answer through the workflow.
func jobClient(t testing.TB, url string) *conduit.Client {
	return jobClientWith(t, url, &conduit.Options{Policy: conduit.AllowAll()})
}

// jobClientWith is jobClient with the options o (its Handlers set).
func jobClientWith(t testing.TB, url string, o *conduit.Options) *conduit.Client {
	t.Helper()
	o.Handlers = &conduit.Handlers{Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return nil, conduit.DeferInput("a person answers")
	}}
	c, err := conduit.NewClient(context.Background(), conduit.Server{ID: "jobs", URL: url}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// taskEnv is a test environment with the agent registered over src, and
// the ticks it records.
func taskEnv(t *testing.T, src conduit.Source) (*testsuite.TestWorkflowEnvironment, *ticks) {
	t.Helper()
	env := sourceEnv(t, src, nil)
	k := &ticks{}
	k.listen(env)
	return env, k
}

// runTurn runs the agent on one turn of calls, the Anthropic way.
func runTurn(env *testsuite.TestWorkflowEnvironment, calls ...toolcall.Raw) {
	env.ExecuteWorkflow(agentWorkflow, agentInput{Script: [][]toolcall.Raw{calls},
		Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic}})
}

// checkAnswered checks that env's run was one turn, its calls answered want.
func checkAnswered(t *testing.T, env *testsuite.TestWorkflowEnvironment, want ...string) {
	t.Helper()
	if out := result(t, env); len(out.Turns) != 1 || !slices.Equal(answered(out.Turns[0].Results), want) {
		t.Errorf("turns %+v, want %q", out.Turns, want)
	}
}

func report(id string) toolcall.Raw {
	return toolcall.Raw{ID: id, Name: "report", Args: map[string]any{"id": id}}
}

// ticks records a test environment's timers and conduit's activities.
type ticks struct {
	mu     sync.Mutex
	timers []time.Duration
	acts   []string
	onPoll func(n int) // called after each poll, with the count so far; set before the run
}

func (k *ticks) listen(env *testsuite.TestWorkflowEnvironment) {
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		k.mu.Lock()
		k.timers = append(k.timers, d)
		k.mu.Unlock()
	})
	env.SetOnActivityCompletedListener(func(info *activity.Info, _ converter.EncodedValue, _ error) {
		k.mu.Lock()
		k.acts = append(k.acts, info.ActivityType.Name)
		n := k.count("conduit.PollTask")
		k.mu.Unlock()
		if info.ActivityType.Name == "conduit.PollTask" && k.onPoll != nil {
			k.onPoll(n)
		}
	})
}

func (k *ticks) count(name string) int {
	n := 0
	for _, a := range k.acts {
		if a == name {
			n++
		}
	}
	return n
}

// A tool its server runs as a task: the call's activity returns as soon
// as the task is made, while the tool still runs. The workflow then waits
// on timers of the task's poll interval and asks about the task in a
// short activity per tick. The task's result is the call's answer, and
// the tool was called once.
func TestSuiteTaskPolledOnTimers(t *testing.T) {
	j := newJobServer()
	env, k := taskEnv(t, jobClient(t, j.gateway(t)))
	var once sync.Once
	var sentWhileRunning int
	// The gateway makes the task before its backend has the call: the
	// tool is released once it runs, after 3 polls at least.
	k.onPoll = func(n int) {
		if n >= 3 && j.sends("p1") > 0 {
			once.Do(func() {
				sentWhileRunning = j.sends("p1")
				close(j.release)
			})
		}
	}
	runTurn(env, report("p1"))
	checkAnswered(t, env, "p1 report p1 written")
	if sentWhileRunning != 1 || j.sends("p1") != 1 {
		t.Errorf("the tool was called %d times while its task ran, %d in all; want once", sentWhileRunning, j.sends("p1"))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if n := k.count("conduit.CallTool"); n != 1 {
		t.Errorf("conduit.CallTool ran %d times, want once", n)
	}
	polls := k.count("conduit.PollTask")
	if polls < 4 {
		t.Errorf("the task was polled %d times, want at least 4 (3 before it ended)", polls)
	}
	waits := 0
	for _, d := range k.timers {
		if d == 100*time.Millisecond {
			waits++
		}
	}
	if waits != polls {
		t.Errorf("%d timers of the poll interval for %d polls (timers %v)", waits, polls, k.timers)
	}
}

// A workflow cancelled while its call's task runs cancels the task: the
// gateway ends the tool's run, which the server sees.
func TestSuiteTaskCancelledWithWorkflow(t *testing.T) {
	j := newJobServer()
	env, k := taskEnv(t, jobClient(t, j.gateway(t)))
	k.onPoll = func(n int) {
		if n == 2 {
			env.CancelWorkflow()
		}
	}
	runTurn(env, report("c1"))
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() == nil {
		t.Fatalf("the workflow ended with %v, want cancelled", env.GetWorkflowError())
	}
	select {
	case id := <-j.cancelled:
		if id != "c1" {
			t.Errorf("cancelled %q", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the task's tool run was not cancelled")
	}
	if j.sends("c1") != 1 {
		t.Errorf("the tool was called %d times, want once", j.sends("c1"))
	}
}

// A task that asks: its question waits in the workflow as a deferred
// call's does, shown by the query; the decision's answer goes to the same
// task, which the workflow polls on to its end. The tool acted once.
func TestSuiteTaskAsks(t *testing.T) {
	j := newJobServer()
	env, k := taskEnv(t, jobClient(t, j.gateway(t)))
	u := &updates{env: env}
	var shown []adapters.Pending
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(temporalconduit.QueryPending)
		if err != nil {
			t.Error(err)
			return
		}
		if err := v.Get(&shown); err != nil || len(shown) != 1 || shown[0].Input == nil || shown[0].Input.Task == nil {
			t.Errorf("pending %+v (%v), want the call waiting on its task's question", shown, err)
			return
		}
		answers := mcp.InputResponseMap{}
		for _, key := range shown[0].Input.Missing() {
			answers[key] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}
		}
		u.decide("answer", map[string]adapters.Ruling{shown[0].ID: {Allow: true, Input: answers}})
	}, time.Hour)
	runTurn(env, toolcall.Raw{ID: "q1", Name: "confirm", Args: map[string]any{"id": "q1"}})
	checkAnswered(t, env, "q1 acted on q1")
	if !slices.Equal(u.accepted, []string{"answer"}) {
		t.Errorf("updates accepted %q, rejected %q", u.accepted, u.rejected)
	}
	if j.sends("q1") != 1 {
		t.Errorf("the tool acted %d times, want once", j.sends("q1"))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	// The call, then its take-up with the answer: no third tools/call.
	if n := k.count("conduit.CallTool"); n != 2 {
		t.Errorf("conduit.CallTool ran %d times, want twice (the call, the answer)", n)
	}
}

// A tool the policy asks about, approved at once by the worker's
// approver: the approver is asked when the call is sent, not at each poll
// of its task.
func TestSuiteTaskApprovedOnce(t *testing.T) {
	j := newJobServer()
	var mu sync.Mutex
	asked := 0
	src := jobClientWith(t, j.gateway(t), &conduit.Options{
		Policy: conduit.NewPolicy(conduit.Ask("jobs/report"), conduit.Allow("jobs/*")),
		Approver: func(context.Context, conduit.ApprovalRequest) conduit.Approval {
			mu.Lock()
			asked++
			mu.Unlock()
			return conduit.Approve()
		},
	})
	env, k := taskEnv(t, src)
	var once sync.Once
	k.onPoll = func(n int) {
		if n == 3 {
			once.Do(func() { close(j.release) })
		}
	}
	runTurn(env, report("a1"))
	checkAnswered(t, env, "a1 report a1 written")
	k.mu.Lock()
	polls := k.count("conduit.PollTask")
	k.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if asked != 1 || polls < 4 {
		t.Errorf("the approver was asked %d times over %d polls, want once", asked, polls)
	}
}

// Polls that do not reach the server (503 twice) are retried, not the
// call answered: the task goes on, and its result answers the call.
func TestSuiteTaskPollRetried(t *testing.T) {
	j := newJobServer()
	env, k := taskEnv(t, jobClient(t, j.gateway(t)))
	var fail, release sync.Once
	k.onPoll = func(n int) {
		fail.Do(func() { j.failGets.Store(2) })
		if n >= 5 {
			release.Do(func() { close(j.release) })
		}
	}
	runTurn(env, report("n1"))
	checkAnswered(t, env, "n1 report n1 written")
	k.mu.Lock()
	defer k.mu.Unlock()
	// A retried attempt is not reported as completed: the gateway's count
	// of tasks/get is two more than the polls that completed.
	if polls := k.count("conduit.PollTask"); j.gets.Load() != int64(polls)+2 || j.sends("n1") != 1 {
		t.Errorf("%d tasks/get for %d polls, the tool called %d times; want 2 failures retried, one call", j.gets.Load(), polls, j.sends("n1"))
	}
}

// A decision that comes while another call of the turn still runs as a
// task is not lost: the decided call is answered in the same turn.
func TestSuiteDecidedWhileTaskRuns(t *testing.T) {
	j := newJobServer()
	src := jobClientWith(t, j.gateway(t), &conduit.Options{
		Policy:   conduit.NewPolicy(conduit.Ask("jobs/confirm"), conduit.Allow("jobs/*")),
		Approver: conduit.DeferAll("later"),
	})
	env, k := taskEnv(t, src)
	u := &updates{env: env}
	k.onPoll = func(n int) {
		switch n {
		case 2:
			env.RegisterDelayedCallback(func() { u.decide("deny", map[string]adapters.Ruling{"d1": {Reason: "no"}}) }, 0)
		case 6:
			close(j.release)
		}
	}
	env.ExecuteWorkflow(agentWorkflow, agentInput{Script: [][]toolcall.Raw{{report("p1"), {ID: "d1", Name: "confirm", Args: map[string]any{"id": "d1"}}}},
		Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic, MaxConcurrency: 2}})
	checkAnswered(t, env, "p1 report p1 written", "d1 error: The call to confirm was denied: no.")
}

// A cancelled workflow cancels every task still running, not only the
// first it hears of.
func TestSuiteCancelEveryTask(t *testing.T) {
	j := newJobServer()
	env, k := taskEnv(t, jobClient(t, j.gateway(t)))
	k.onPoll = func(n int) {
		if n == 4 {
			env.CancelWorkflow()
		}
	}
	env.ExecuteWorkflow(agentWorkflow, agentInput{Script: [][]toolcall.Raw{{report("c1"), report("c2")}},
		Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic, MaxConcurrency: 2}})
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case id := <-j.cancelled:
			got[id] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("cancelled only %v, want c1 and c2", got)
		}
	}
}
