//go:build temporalserver

// The agent loop end to end on a real Temporal server run in process
// (temporaltest: the frontend, history and matching services over an
// in-memory SQLite), with workers and a client over gRPC on loopback.
//
// These tests need the build tag temporalserver: go.temporal.io/server is
// some 1,800 packages, and scripts/test runs them in a step of their own,
// without -race (see there why).
package temporalconduit_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/temporalconduit"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
)

var update = flag.Bool("update", false, "rewrite the recorded history under testdata")

// startWorker starts an in-process worker of ts with the agent over a
// client of m, held for the worker's life.
func startWorker(t *testing.T, ts *temporaltest.TestServer, m *mailServer) worker.Worker {
	return ts.NewWorker(taskQueue, func(r worker.Registry) {
		registerAgent(t, r, m.client(t, nil), nil)
	})
}

// waitPending queries the workflow until calls wait for a decision, and
// returns them.
func waitPending(ctx context.Context, t *testing.T, c client.Client, run client.WorkflowRun) []adapters.Pending {
	t.Helper()
	for {
		v, err := c.QueryWorkflow(ctx, run.GetID(), run.GetRunID(), temporalconduit.QueryPending)
		if err != nil {
			t.Fatal(err)
		}
		var ps []adapters.Pending
		if err := v.Get(&ps); err != nil {
			t.Fatal(err)
		}
		if len(ps) > 0 {
			return ps
		}
		select {
		case <-ctx.Done():
			t.Fatal("no call waits for a decision")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// decideOn sends an UpdateDecide and waits for it to complete.
func decideOn(ctx context.Context, c client.Client, run client.WorkflowRun, decisions map[string]adapters.Ruling) error {
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), RunID: run.GetRunID(),
		UpdateName: temporalconduit.UpdateDecide, Args: []any{decisions}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

// A turn with a call the policy allows and one it asks about: the query
// shows the one waiting, the validator refuses a decision on no such
// call, the update allows it, and it is sent once. The run's history
// replays on today's workflow code (and, with -update, is recorded for
// TestReplayRecordedHistory).
func TestServerApproval(t *testing.T) {
	start := time.Now()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	t.Logf("temporaltest.NewServer took %v", time.Since(start))
	m := newMailServer()
	startWorker(t, ts, m)
	c := ts.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "agent-approval", TaskQueue: taskQueue}, agentWorkflow,
		agentInput{Script: [][]toolcall.Raw{{read("r1"), send("s1")}},
			Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic, Principal: "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	ps := waitPending(ctx, t, c, run)
	if len(ps) != 1 || ps[0].ID != "s1" || ps[0].Arguments["to"] != "ops@example.com" || ps[0].Rule != "ask mail/send_email" {
		t.Fatalf("pending %+v", ps)
	}
	if err := decideOn(ctx, c, run, map[string]adapters.Ruling{"r1": {Allow: true}}); err == nil {
		t.Error("a decision on a call that waits for none was accepted")
	}
	if err := decideOn(ctx, c, run, map[string]adapters.Ruling{"s1": {Allow: true}}); err != nil {
		t.Fatal(err)
	}
	var out agentOutput
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	t.Logf("workflow run in %v from the server's start", time.Since(start))
	want := []string{"r1 3 unread messages", "s1 sent s1 to ops@example.com"}
	if len(out.Turns) != 1 || !slices.Equal(answered(out.Turns[0].Results), want) {
		t.Errorf("turns %+v, want %q", out.Turns, want)
	}
	if m.sends("s1") != 1 || m.sends("r1") != 1 {
		t.Errorf("sent %v, want each once", m.sent)
	}

	replayAndRecord(ctx, t, c, run, agent, historyFile)
}

// A canceled workflow cancels its running call: the cancellation reaches
// the activity with the answer to its next heartbeat, and from the
// activity's context the MCP server's handler, through
// notifications/cancelled.
func TestServerCancel(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	m := newMailServer()
	startWorker(t, ts, m)
	c := ts.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "agent-cancel", TaskQueue: taskQueue}, agentWorkflow,
		agentInput{Script: [][]toolcall.Raw{{{ID: "w1", Name: "wait", Args: map[string]any{"id": "w1"}}}},
			Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic, HeartbeatTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.waiting:
	case <-ctx.Done():
		t.Fatal("the call did not reach the server")
	}
	canceled := time.Now()
	if err := c.CancelWorkflow(ctx, run.GetID(), run.GetRunID()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.cancelled:
		t.Logf("the server's handler saw the cancellation %v after CancelWorkflow", time.Since(canceled))
	case <-ctx.Done():
		t.Fatal("the server's handler never saw the cancellation")
	}
	var ce *sdktemporal.CanceledError
	if err := run.Get(ctx, nil); !errors.As(err, &ce) {
		t.Errorf("workflow ended with %v, want canceled", err)
	}
}

// replayAndRecord replays the run's history on the workflow code wf of
// today. With -update it records the history in file.
func replayAndRecord(ctx context.Context, t *testing.T, c client.Client, run client.WorkflowRun, wf any, file string) {
	t.Helper()
	hist := history(ctx, t, c, run)
	if err := replayer(wf).ReplayWorkflowHistory(quiet, hist); err != nil {
		t.Fatalf("replaying the run's history: %v", err)
	}
	if *update {
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// history returns the run's whole history.
func history(ctx context.Context, t *testing.T, c client.Client, run client.WorkflowRun) *historypb.History {
	t.Helper()
	it := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	hist := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, e)
	}
	return hist
}
