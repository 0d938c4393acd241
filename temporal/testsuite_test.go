// The agent loop under Temporal's test suite, whose clock skips ahead
// while the workflow waits.
package temporal_test

import (
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

func newTestEnv(t *testing.T, m *mailServer) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quiet)
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(AgentLoop, workflow.RegisterOptions{Name: loopWorkflow})
	env.RegisterActivity(&Activities{Source: m.client(t)})
	return env
}

// An approval that comes three days later: the workflow waits on its
// signal in workflow time, which the test suite skips through, then sends
// the call once.
func TestSuiteApprovalAfterThreeDays(t *testing.T) {
	m := newMailServer()
	env := newTestEnv(t, m)
	const wait = 72 * time.Hour
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(approvalSignal, Decision{Allow: true})
	}, wait)
	wall := time.Now()
	env.ExecuteWorkflow(loopWorkflow, LoopInput{Call: emailCall("c1"), ApprovalTimeout: 7 * 24 * time.Hour})
	t.Logf("3 days of workflow time in %v of wall time", time.Since(wall))

	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out LoopOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if got := toolNames(out.Tools); !slices.Equal(got, []string{"send_email", "send_once_then_hang", "wait"}) {
		t.Errorf("listed %v", got)
	}
	if out.Waited < wait || out.Waited > wait+time.Minute {
		t.Errorf("waited %v of workflow time, want %v", out.Waited, wait)
	}
	if out.Outcome != (CallOutcome{Text: "sent c1 to ops@example.com"}) {
		t.Errorf("outcome %+v", out.Outcome)
	}
	if n := m.sends("c1"); n != 1 {
		t.Errorf("call sent %d times, want 1", n)
	}
}

// No decision within the approval timeout: the timer fires in skipped
// time, the call is denied and nothing is sent.
func TestSuiteApprovalTimesOut(t *testing.T) {
	m := newMailServer()
	env := newTestEnv(t, m)
	env.ExecuteWorkflow(loopWorkflow, LoopInput{Call: emailCall("c2"), ApprovalTimeout: 7 * 24 * time.Hour})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out LoopOutput
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if !out.Outcome.IsError || out.Waited != 7*24*time.Hour {
		t.Errorf("outcome %+v after %v, want a denial after 168h", out.Outcome, out.Waited)
	}
	if n := m.sends("c2"); n != 0 {
		t.Errorf("call sent %d times, want 0", n)
	}
}
