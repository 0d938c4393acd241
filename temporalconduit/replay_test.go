// Replay of a recorded history: the workflow code must make the same
// decisions from the same events, or a worker running new code cannot
// carry on the loops that older code started.
package temporalconduit_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/temporalconduit"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// historyFile is the history TestServerApproval records with -update
// (go test -tags temporalserver -run TestServerApproval -update) and
// TestReplayRecordedHistory replays: a turn with a call allowed and one
// deferred, decided by an update, then the model's answer. A release
// that changes the workflow code of this package adds its own recording
// beside the older ones, which must all still replay.
var historyFile = filepath.Join("testdata", "agent_history.json")

func replayer(wf any) worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: agentWorkflow})
	return r
}

// Every recorded history replays on today's Conversation.
func TestReplayRecordedHistory(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*_history.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded history: %v", err)
	}
	for _, f := range files {
		if err := replayer(agent).ReplayWorkflowHistoryFromJSONFile(quiet, f); err != nil {
			t.Errorf("the agent no longer replays %s: %v", f, err)
		}
	}
}

// The replayer does check: a loop whose turn runs the calls without the
// plan makes other commands from the same history, and its replay fails
// as nondeterministic.
func TestReplayDetectsChangedWorkflow(t *testing.T) {
	changed := func(ctx workflow.Context, in agentInput) (agentOutput, error) {
		conv, err := temporalconduit.NewConversation(ctx, &in.Options)
		if err != nil {
			return agentOutput{}, err
		}
		_, err = conv.Execute(ctx, []byte(`{"content": []}`))
		return agentOutput{}, err
	}
	err := replayer(changed).ReplayWorkflowHistoryFromJSONFile(quiet, historyFile)
	// TMPRL1100 is the SDK's code of a nondeterminism error.
	if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("replaying a changed workflow: %v, want a nondeterminism error", err)
	}
}
