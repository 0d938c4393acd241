// The call's activity alone, under Temporal's activity test environment:
// at most once across workers sharing a real Redis, the claim found
// pending or completed, the annotations of trusted servers, a tool that
// changed, an answer too large for the history.
package temporalconduit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/redisstore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/testsuite"
)

// counter is an MCP server whose tools count their calls: post (no
// annotations), touch (idempotentHint), peek (readOnlyHint).
type counter struct {
	srv *mcp.Server
	mu  sync.Mutex
	n   map[string]int
}

func newCounter() *counter {
	c := &counter{srv: mcp.NewServer(&mcp.Implementation{Name: "box", Version: "1"}, nil), n: map[string]int{}}
	c.add("post", "Post a message.", nil)
	c.add("touch", "Mark a message read.", &mcp.ToolAnnotations{IdempotentHint: true})
	c.add("peek", "Read a message.", &mcp.ToolAnnotations{ReadOnlyHint: true})
	return c
}

func (c *counter) add(name, desc string, ann *mcp.ToolAnnotations) {
	mcp.AddTool(c.srv, &mcp.Tool{Name: name, Description: desc, Annotations: ann},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			c.mu.Lock()
			c.n[name]++
			c.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ": " + in.Text}}}, nil, nil
		})
}

func (c *counter) calls(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// worker is one worker's activities over its own client of the server,
// with o (whose Claims, when nil, are the client's own in-memory store).
func (c *counter) worker(t *testing.T, o *Options) (*Activities, *testsuite.TestActivityEnvironment) {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := c.srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := conduit.NewClient(context.Background(), conduit.Server{ID: "box", Transport: ct}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	a, err := Register(env, cl, o)
	if err != nil {
		t.Fatal(err)
	}
	return a, env
}

// sharedClaims is a store of claims in a real Redis, as workers share it.
func sharedClaims(t *testing.T) store.Store {
	t.Helper()
	r := testenv.Redis(t, nil)
	s, err := redisstore.Open(r.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// planOf plans a response in which the model calls tool with text.
func planOf(t *testing.T, env *testsuite.TestActivityEnvironment, tools ...string) (Offer, plan) {
	t.Helper()
	v, err := env.ExecuteActivity(activityListTools, listInput{Provider: adapters.Anthropic.String()})
	if err != nil {
		t.Fatal(err)
	}
	var l listOutput
	if err := v.Get(&l); err != nil {
		t.Fatal(err)
	}
	var raws []toolcall.Raw
	for i, tool := range tools {
		raws = append(raws, toolcall.Raw{ID: fmt.Sprint("c", i), Name: tool, Args: map[string]any{"text": "hi"}})
	}
	resp, _ := json.Marshal(adaptertest.FakeOf(adapters.Anthropic).Response("", raws...))
	v, err = env.ExecuteActivity(activityPlan, planInput{Offer: l.Offer, Response: resp})
	if err != nil {
		t.Fatal(err)
	}
	var p plan
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	return l.Offer, p
}

// call runs the call's activity.
func call(t *testing.T, env *testsuite.TestActivityEnvironment, in callInput) callOutput {
	t.Helper()
	v, err := env.ExecuteActivity(activityCallTool, in)
	if err != nil {
		t.Fatal(err)
	}
	var out callOutput
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// text is an answer's text, in Anthropic's shape: the answer the
// activity wrote, or the one the workflow writes of its outcome.
func text(out callOutput) string {
	answer := out.Answer
	if answer == nil && out.Pending == nil {
		c := toolcall.Call{ID: "x", Name: "x"}
		answer = adapters.Anthropic.Answer(c, out.Result, out.Err.error(c), nil)
	}
	var b strings.Builder
	if e, _ := answer["is_error"].(bool); e {
		b.WriteString("error: ")
	}
	content, _ := answer["content"].([]any)
	for _, c := range content {
		m, _ := c.(map[string]any)
		s, _ := m["text"].(string)
		b.WriteString(s)
	}
	return b.String()
}

// Two workers share their claims through Redis: the second attempt of a
// call, on the other worker, answers with what the first recorded and
// sends nothing; a call claimed and never recorded (its worker lost) is
// answered as unknown and not sent; a lost call's claim won afresh is
// recorded as unknown, so every later attempt says the same.
func TestCallToolOnceAcrossWorkers(t *testing.T) {
	box := newCounter()
	claims := sharedClaims(t)
	_, w1 := box.worker(t, &Options{Claims: claims})
	_, w2 := box.worker(t, &Options{Claims: claims})
	offer, p := planOf(t, w1, "post", "post")
	if len(p.Calls) != 2 || p.Calls[0].Mode != modeClaim || p.Calls[0].Attempts != 0 {
		t.Fatalf("plan %+v: want calls claimed, retried freely", p.Calls)
	}
	in := callInput{Conversation: "conv1", Turn: 1, Offer: offer, Call: p.Calls[0]}
	first := call(t, w1, in)
	again := call(t, w2, in)
	if text(first) != "post: hi" || text(again) != text(first) || !first.Reached || !again.Reached {
		t.Errorf("first %q, again %q", text(first), text(again))
	}
	if n := box.calls("post"); n != 1 {
		t.Fatalf("sent %d times, want once", n)
	}

	// The second call: claimed by a worker that died before recording.
	in2 := callInput{Conversation: "conv1", Turn: 1, Offer: offer, Call: p.Calls[1]}
	if cl, err := claims.Claim(context.Background(), claimKey(in2), time.Hour); err != nil || cl.State != store.Claimed {
		t.Fatal(cl, err)
	}
	lost := call(t, w2, in2)
	if got := text(lost); !lost.Unknown || !strings.Contains(got, "may have been made") || !strings.Contains(got, "was not made again") {
		t.Errorf("a pending claim answered %q", got)
	}
	if n := box.calls("post"); n != 1 {
		t.Errorf("sent %d times, want once", n)
	}

	// A lost call whose claim this worker wins (the worker before kept it
	// elsewhere): unknown, recorded, never sent.
	in3 := in
	in3.Turn, in3.Lost = 2, true
	if got := text(call(t, w1, in3)); !strings.Contains(got, "may have been made") {
		t.Errorf("a lost call answered %q", got)
	}
	in3.Lost = false
	if got := text(call(t, w2, in3)); !strings.Contains(got, "may have been made") {
		t.Errorf("a lost call's next attempt answered %q", got)
	}
	if n := box.calls("post"); n != 1 {
		t.Errorf("sent %d times, want once", n)
	}
}

// A store of one process gives a call one attempt; the annotations of a
// trusted server relax at most once: a read-only tool is sent on every
// attempt, an idempotent one is sent again when its claim is pending.
// An untrusted server's annotations change nothing.
func TestPlanModes(t *testing.T) {
	box := newCounter()
	_, mem := box.worker(t, nil)
	if _, p := planOf(t, mem, "post", "touch", "peek"); p.Calls[0].Attempts != 1 || p.Calls[1].Mode != modeClaim || p.Calls[2].Mode != modeClaim {
		t.Errorf("untrusted, in memory: %+v", p.Calls)
	}
	_, trusted := box.worker(t, &Options{Trusted: []string{"box"}})
	offer, p := planOf(t, trusted, "post", "touch", "peek")
	if p.Calls[0].Mode != modeClaim || p.Calls[0].Attempts != 1 || p.Calls[1].Mode != modeIdempotent ||
		p.Calls[1].Attempts != 0 || p.Calls[2].Mode != modeReadOnly || p.Calls[2].Attempts != 0 {
		t.Errorf("trusted: %+v", p.Calls)
	}

	peek := callInput{Conversation: "c", Turn: 1, Offer: offer, Call: p.Calls[2]}
	call(t, trusted, peek)
	call(t, trusted, peek)
	if n := box.calls("peek"); n != 2 {
		t.Errorf("read-only: sent %d times, want on every attempt", n)
	}
	touch := callInput{Conversation: "c", Turn: 1, Offer: offer, Call: p.Calls[1]}
	// Claimed by a worker that died: an idempotent call is sent again.
	acts, env := box.worker(t, &Options{Trusted: []string{"box"}, Claims: store.NewMemory()})
	if cl, err := acts.claims.Claim(context.Background(), claimKey(touch), time.Hour); err != nil || cl.State != store.Claimed {
		t.Fatal(cl, err)
	}
	if got := text(call(t, env, touch)); got != "touch: hi" {
		t.Errorf("idempotent, pending: %q", got)
	}
	if n := box.calls("touch"); n != 1 {
		t.Errorf("idempotent: sent %d times, want once", n)
	}
}

// A tool whose definition changed after it was offered is not called on
// the model's reading of the old one; a result whose answer is over
// MaxAnswerBytes is answered with an error saying so (the call was made).
func TestCallToolChangedAndTooLarge(t *testing.T) {
	box := newCounter()
	acts, env := box.worker(t, &Options{MaxAnswerBytes: 400})
	offer, p := planOf(t, env, "post", "peek")

	big := callInput{Conversation: "c", Turn: 1, Offer: offer, Call: p.Calls[1]}
	big.Call.Args = json.RawMessage(`{"text":"` + strings.Repeat("x", 500) + `"}`)
	if got := text(call(t, env, big)); !strings.Contains(got, "too large to be kept") || box.calls("peek") != 1 {
		t.Errorf("a large answer: %q, sent %d times", got, box.calls("peek"))
	}

	box.add("post", "Post a message to everyone.", nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ts, err := acts.src.ListTools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if tool, ok := ts.Lookup("post"); ok && strings.Contains(tool.Description, "everyone") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the client never saw the tool change")
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := text(call(t, env, callInput{Conversation: "c", Turn: 1, Offer: offer, Call: p.Calls[0]}))
	if !strings.Contains(got, "definition changed") || box.calls("post") != 0 {
		t.Errorf("a changed tool: %q, sent %d times", got, box.calls("post"))
	}
	if tools, err := acts.Tools(context.Background(), offer); err != nil || len(tools) != 2 {
		t.Errorf("the offer's tools now: %d, %v; want the changed one left out", len(tools), err)
	}
}

// A call's result goes back to the workflow whole, to be answered within
// its share of the turn's budget there; one too large for the history is
// answered by the activity, cut to its own budget within the turn's, and
// counted as written: its demand and what it kept.
func TestCallToolResultForTheTurn(t *testing.T) {
	box := newCounter()
	_, env := box.worker(t, &Options{MaxAnswerBytes: 4000, Answers: toolcall.AnswerOptions{MaxResultTokens: 200}})
	offer, p := planOf(t, env, "peek", "peek")
	if p.Calls[0].Budget != 200 || p.Options == nil || p.Options.MaxResultTokens != 200 || p.MaxAnswerBytes != 4000 {
		t.Fatalf("the plan's budget %d, options %+v, max bytes %d", p.Calls[0].Budget, p.Options, p.MaxAnswerBytes)
	}
	small := callInput{Conversation: "c", Turn: 1, Offer: offer, Call: p.Calls[0], Options: callOptions{TurnTokens: 1000}}
	out := call(t, env, small)
	if out.Result == nil || out.Answer != nil || text(out) != "peek: hi" || !out.Reached {
		t.Errorf("a small result: %+v", out)
	}
	big := callInput{Conversation: "c", Turn: 1, Offer: offer, Call: p.Calls[1], Options: callOptions{TurnTokens: 100}}
	big.Call.Args = json.RawMessage(`{"text":"` + strings.Repeat("word ", 2000) + `"}`)
	out = call(t, env, big)
	if out.Result != nil || out.Answer == nil || !strings.Contains(text(out), "cut to fit its budget of 100 tokens") || out.Demand != 100 || out.Kept == 0 || out.Kept > 100 {
		t.Errorf("a result too large for the history: demand %d, kept %d, %.120q", out.Demand, out.Kept, text(out))
	}
}

// A claim recorded by the release before (its bare output, without the
// record's header) is read during an upgrade: the attempt answers with it
// and sends nothing. One recorded now reads back the same way.
func TestCallToolReadsEarlierRecords(t *testing.T) {
	box := newCounter()
	claims := store.NewMemory()
	t.Cleanup(func() { claims.Close() })
	_, env := box.worker(t, &Options{Claims: claims})
	offer, p := planOf(t, env, "post", "post")
	ctx := context.Background()
	old := callInput{Conversation: "c", Turn: 1, Offer: offer, Call: p.Calls[0]}
	cl, err := claims.Claim(ctx, claimKey(old), time.Hour)
	if err != nil || cl.State != store.Claimed {
		t.Fatal(cl, err)
	}
	bare := `{"answer":{"type":"tool_result","tool_use_id":"c0","content":[{"type":"text","text":"post: recorded before"}]},"reached":true}`
	if err := claims.Complete(ctx, claimKey(old), cl.Token, []byte(bare), time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := call(t, env, old); text(got) != "post: recorded before" || !got.Reached {
		t.Errorf("a bare record answered %q (%+v)", text(got), got)
	}
	fresh := callInput{Conversation: "c", Turn: 1, Offer: offer, Call: p.Calls[1]}
	first := call(t, env, fresh)
	if again := call(t, env, fresh); text(again) != text(first) || text(first) != "post: hi" {
		t.Errorf("recorded %q, read back %q", text(first), text(again))
	}
	if n := box.calls("post"); n != 1 {
		t.Errorf("sent %d times, want once", n)
	}
}
