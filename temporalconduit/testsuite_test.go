// The agent loop under Temporal's test suite, whose clock skips ahead
// while the workflow waits: approvals days later, denials, halts,
// timeouts, continue-as-new, heartbeats and cancellation.
package temporalconduit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/temporalconduit"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// suiteEnv is a test environment with the agent registered over m, with
// the workers' options o.
func suiteEnv(t *testing.T, m *mailServer, o *temporalconduit.Options) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	return sourceEnv(t, m.client(t, nil), o)
}

// sourceEnv is a test environment with the agent registered over src,
// with the workers' options o.
func sourceEnv(t *testing.T, src conduit.Source, o *temporalconduit.Options) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quiet)
	env := s.NewTestWorkflowEnvironment()
	registerAgent(t, env, src, o)
	return env
}

// result is the workflow's result, which must have completed.
func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) agentOutput {
	t.Helper()
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out agentOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// pending queries the calls that wait for a decision: "id name rule".
func pending(t *testing.T, env *testsuite.TestWorkflowEnvironment) []string {
	t.Helper()
	var ids []string
	for _, p := range pendingCalls(t, env) {
		ids = append(ids, p.ID+" "+p.Name+" "+p.Rule)
	}
	return ids
}

// pendingCalls queries the calls that wait for a decision.
func pendingCalls(t *testing.T, env *testsuite.TestWorkflowEnvironment) []adapters.Pending {
	t.Helper()
	v, err := env.QueryWorkflow(temporalconduit.QueryPending)
	if err != nil {
		t.Fatal(err)
	}
	var ps []adapters.Pending
	if err := v.Get(&ps); err != nil {
		t.Fatal(err)
	}
	return ps
}

// updates sends UpdateDecides and collects their rejections, which the
// test suite reports after the update has run.
type updates struct {
	env      *testsuite.TestWorkflowEnvironment
	mu       sync.Mutex
	rejected []string
	accepted []string
}

func (u *updates) decide(id string, decisions map[string]adapters.Ruling) {
	u.env.UpdateWorkflow(temporalconduit.UpdateDecide, id, &testsuite.TestUpdateCallback{
		OnAccept: func() {
			u.mu.Lock()
			u.accepted = append(u.accepted, id)
			u.mu.Unlock()
		},
		OnReject: func(err error) {
			u.mu.Lock()
			u.rejected = append(u.rejected, id+": "+err.Error())
			u.mu.Unlock()
		},
	}, decisions)
}

// An approval that comes three days later: the call the policy allows is
// answered at once, the one it asks about waits, shown by the query, and
// is sent once when the update allows it; both answers go to the model in
// its order, and the server's output taints the conversation.
func TestSuiteApprovalThreeDaysLater(t *testing.T) {
	m := newMailServer()
	env := suiteEnv(t, m, nil)
	const wait = 72 * time.Hour
	var shown []string
	env.RegisterDelayedCallback(func() {
		shown = pending(t, env)
		if n := m.sends("r1") + m.sends("s1"); n != 1 {
			t.Errorf("%d calls sent before the decision, want the read only", n)
		}
	}, time.Hour)
	var decidedAt time.Time
	u := &updates{env: env}
	env.RegisterDelayedCallback(func() {
		decidedAt = env.Now()
		u.decide("approve", map[string]adapters.Ruling{"s1": {Allow: true}})
	}, wait)
	start := env.Now()
	env.ExecuteWorkflow(agentWorkflow, agentInput{Script: [][]toolcall.Raw{{read("r1"), send("s1")}},
		Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic, Principal: "alice"}})
	out := result(t, env)

	if want := []string{"s1 send_email ask mail/send_email"}; !slices.Equal(shown, want) {
		t.Errorf("pending %q, want %q", shown, want)
	}
	if !slices.Equal(u.accepted, []string{"approve"}) {
		t.Errorf("updates accepted %q, rejected %q", u.accepted, u.rejected)
	}
	if got := decidedAt.Sub(start); got < wait {
		t.Errorf("decided after %v of workflow time", got)
	}
	want := []string{"r1 3 unread messages", "s1 sent s1 to ops@example.com"}
	if len(out.Turns) != 1 || !slices.Equal(answered(out.Turns[0].Results), want) || out.Turns[0].Halted {
		t.Errorf("turns %+v, want %q", out.Turns, want)
	}
	if m.sends("s1") != 1 || m.sends("r1") != 1 {
		t.Errorf("sent s1 %d and r1 %d times, want once each", m.sends("s1"), m.sends("r1"))
	}
	if !slices.Equal(out.State.Taint, []string{"mail"}) || out.State.Turns != 1 || out.Ended != "text" {
		t.Errorf("state %+v, ended %q", out.State, out.Ended)
	}
	if want := sorted([]string{"read_inbox", "send_email", "send_then_hang", "wait"}); !slices.Equal(sorted(out.Tools[0]), want) {
		t.Errorf("the model saw %v, want %v", out.Tools[0], want)
	}
}

// The update's validator refuses what cannot be decided, recording
// nothing: no decision, an id that waits for none, a call decided
// already. A denial with a halt answers the other waiting call as halted;
// neither is sent, and the loop ends.
func TestSuiteDenyAndHalt(t *testing.T) {
	m := newMailServer()
	env := suiteEnv(t, m, nil)
	u := &updates{env: env}
	env.RegisterDelayedCallback(func() {
		for i, d := range []map[string]adapters.Ruling{{}, {"r1": {Allow: true}}, {"nope": {}}} {
			u.decide(fmt.Sprint("bad", i), d)
		}
		u.decide("deny", map[string]adapters.Ruling{"s1": {Reason: "not today", Halt: true}})
	}, 24*time.Hour)
	env.ExecuteWorkflow(agentWorkflow, agentInput{Script: [][]toolcall.Raw{{send("s1"), read("r1"), send("s2")}, {read("r2")}},
		Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic}})
	out := result(t, env)

	if r := u.rejected; len(r) != 3 || !strings.Contains(r[0], "bad0: no decision") ||
		!strings.Contains(r[1], `bad1: no call waits for a decision under the id "r1"`) || !strings.Contains(r[2], `"nope" (waiting: s1, s2)`) ||
		!slices.Equal(u.accepted, []string{"deny"}) {
		t.Errorf("rejected %q, accepted %q", u.rejected, u.accepted)
	}
	want := []string{"s1 error: The call to send_email was denied: not today.", "r1 3 unread messages",
		"s2 error: The call to send_email was not made: the run was halted by an approver."}
	if len(out.Turns) != 1 || !slices.Equal(answered(out.Turns[0].Results), want) || !out.Turns[0].Halted || out.Ended != "halted" {
		t.Errorf("turns %+v, want %q, halted", out.Turns, want)
	}
	if m.sends("s1")+m.sends("s2") != 0 || m.sends("r1") != 1 || m.sends("r2") != 0 {
		t.Errorf("sent %v", m.sent)
	}
}

// No decision within DecisionTimeout: the call is denied, in skipped
// time, and never sent.
func TestSuiteDecisionTimeout(t *testing.T) {
	m := newMailServer()
	env := suiteEnv(t, m, nil)
	start := env.Now()
	env.ExecuteWorkflow(agentWorkflow, agentInput{Script: [][]toolcall.Raw{{send("s1")}},
		Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic, DecisionTimeout: 7 * 24 * time.Hour}})
	out := result(t, env)
	want := []string{"s1 error: The call to send_email was denied: no decision was made within 168h0m0s."}
	if len(out.Turns) != 1 || !slices.Equal(answered(out.Turns[0].Results), want) {
		t.Errorf("turns %+v, want %q", out.Turns, want)
	}
	if got := env.Now().Sub(start); got < 7*24*time.Hour {
		t.Errorf("ended after %v of workflow time", got)
	}
	if m.sends("s1") != 0 {
		t.Error("sent without a decision")
	}
}

// Calls that cannot be sent are answered by the plan, and no call's
// activity runs for them: a name not offered, arguments that are not an
// object.
func TestSuiteAnsweredUnsent(t *testing.T) {
	m := newMailServer()
	env := suiteEnv(t, m, nil)
	var mu sync.Mutex
	var ran []string
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		mu.Lock()
		ran = append(ran, info.ActivityType.Name)
		mu.Unlock()
	})
	env.ExecuteWorkflow(agentWorkflow, agentInput{Script: [][]toolcall.Raw{{
		{ID: "u1", Name: "delete_everything", Args: map[string]any{}},
		{ID: "b1", Name: "read_inbox", Args: "not an object"},
	}}, Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic}})
	out := result(t, env)
	got := answered(out.Turns[0].Results)
	if len(got) != 2 || !strings.HasPrefix(got[0], "u1 error: ") || !strings.Contains(got[0], "delete_everything") ||
		!strings.HasPrefix(got[1], "b1 error: ") {
		t.Errorf("answers %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(ran, "conduit.CallTool") || !slices.Contains(ran, "conduit.Plan") {
		t.Errorf("activities run: %v", ran)
	}
}

// A conversation carried on in a new run (continue-as-new): its state
// names the same claims, offer and taint, and the turns go on counting.
func TestSuiteContinueAsNew(t *testing.T) {
	m := newMailServer()
	in := agentInput{Script: [][]toolcall.Raw{{read("a")}, {read("b")}, {read("c")}},
		Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic}, ContinueAfter: 1}
	var states []temporalconduit.State
	for run := 0; ; run++ {
		env := suiteEnv(t, m, nil)
		env.ExecuteWorkflow(agentWorkflow, in)
		var can *workflow.ContinueAsNewError
		if err := env.GetWorkflowError(); !errors.As(err, &can) {
			out := result(t, env)
			states = append(states, out.State)
			break
		}
		if run > 5 {
			t.Fatal("no end")
		}
		if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
			t.Fatal(err)
		}
		states = append(states, *in.State)
	}
	if len(states) != 4 {
		t.Fatalf("%d runs", len(states))
	}
	for i, st := range states {
		if st.ID != states[0].ID || st.ID == "" || !slices.Equal(st.Taint, []string{"mail"}) || len(st.Offer.Tools) != 4 {
			t.Errorf("run %d: state %+v", i, st)
		}
		if want := min(i+1, 3); st.Turns != want {
			t.Errorf("run %d: %d turns, want %d", i, st.Turns, want)
		}
	}
	if m.sends("a") != 1 || m.sends("b") != 1 || m.sends("c") != 1 {
		t.Errorf("sent %v", m.sent)
	}
}

// A long call heartbeats with the server's progress as details, and the
// workflow's cancellation reaches the server's handler through the
// activity's context.
func TestSuiteProgressAndCancel(t *testing.T) {
	m := newMailServer()
	env := suiteEnv(t, m, nil)
	var mu sync.Mutex
	var details []string
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) {
		var p struct{ Message string }
		if d.HasValues() && d.Get(&p) == nil {
			mu.Lock()
			details = append(details, p.Message)
			mu.Unlock()
		}
	})
	env.RegisterDelayedCallback(func() {
		select {
		case <-m.waiting:
		case <-time.After(30 * time.Second):
			t.Error("the call never reached the server")
		}
		env.CancelWorkflow()
	}, time.Second)
	// The cancellation reaches the activity with the answer to a
	// heartbeat, which the SDK sends at most every 0.8 heartbeat timeouts.
	env.ExecuteWorkflow(agentWorkflow, agentInput{Script: [][]toolcall.Raw{{{ID: "w1", Name: "wait", Args: map[string]any{"id": "w1"}}}},
		Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic, HeartbeatTimeout: time.Second}})
	canceled := time.Now()
	select {
	case <-m.cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("the server's handler never saw the cancellation")
	}
	t.Logf("the server's handler saw the cancellation %v after the workflow's", time.Since(canceled))
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(strings.ToLower(err.Error()), "cancel") {
		t.Errorf("the workflow ended with %v, want canceled", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(details, "halfway") {
		t.Errorf("heartbeat details %q, want the server's progress", details)
	}
}
