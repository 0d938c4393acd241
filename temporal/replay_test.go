// Replay of a recorded history: the workflow code must make the same
// decisions from the same events, or a worker running new code cannot
// continue the loops that older code started.
package temporal_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// historyFile is the history TestServerApproval records with -update and
// TestReplayRecordedHistory replays.
var historyFile = filepath.Join("testdata", "agent_loop_history.json")

func replayer(wf any) worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: loopWorkflow})
	return r
}

// The history TestServerApproval recorded (go test -run TestServerApproval
// -update) replays on today's AgentLoop.
func TestReplayRecordedHistory(t *testing.T) {
	if err := replayer(AgentLoop).ReplayWorkflowHistoryFromJSONFile(quiet, historyFile); err != nil {
		t.Fatalf("AgentLoop no longer replays %s: %v", historyFile, err)
	}
}

// The replayer does check: a loop that sends the call before it waits for
// the approval makes different commands from the same history, and its
// replay fails as nondeterministic.
func TestReplayDetectsChangedWorkflow(t *testing.T) {
	callFirst := func(ctx workflow.Context, in LoopInput) (LoopOutput, error) {
		var out LoopOutput
		var a *Activities
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			RetryPolicy:         &sdktemporal.RetryPolicy{MaximumAttempts: 1},
		})
		err := workflow.ExecuteActivity(ctx, a.CallTool, in.Call).Get(ctx, &out.Outcome)
		return out, err
	}
	err := replayer(callFirst).ReplayWorkflowHistoryFromJSONFile(quiet, historyFile)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "nondeterminis") {
		t.Fatalf("replaying a changed workflow: %v, want a nondeterminism error", err)
	}
}
