//go:build temporalserver

// The agent loop end to end on a real Temporal server run in process
// (temporaltest: the server's frontend, history and matching services over
// an in-memory SQLite), with a worker and a client over gRPC on loopback.
//
// These tests need the build tag temporalserver: go.temporal.io/server is
// some 1,800 packages, and scripts/test runs them in a step of their own,
// without -race (see there why).
package temporal_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"
)

var update = flag.Bool("update", false, "rewrite the recorded history under testdata")

// startWorker starts a worker of ts with the loop and a conduit client of
// its own, held for the worker's life.
func startWorker(t *testing.T, ts *temporaltest.TestServer, m *mailServer) worker.Worker {
	return ts.NewWorker(taskQueue, func(r worker.Registry) {
		r.RegisterWorkflowWithOptions(AgentLoop, workflow.RegisterOptions{Name: loopWorkflow})
		r.RegisterActivity(&Activities{Source: m.client(t)})
	})
}

func TestServerApproval(t *testing.T) {
	start := time.Now()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	t.Logf("temporaltest.NewServer took %v", time.Since(start))
	m := newMailServer()
	startWorker(t, ts, m)
	c := ts.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "loop-approval", TaskQueue: taskQueue},
		loopWorkflow, LoopInput{Call: emailCall("e1"), ApprovalTimeout: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), approvalSignal, Decision{Allow: true}); err != nil {
		t.Fatal(err)
	}
	var out LoopOutput
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	t.Logf("workflow run in %v from the server's start", time.Since(start))
	if out.Outcome != (CallOutcome{Text: "sent e1 to ops@example.com"}) || len(out.Tools) != 3 {
		t.Errorf("output %+v", out)
	}
	if n := m.sends("e1"); n != 1 {
		t.Errorf("call sent %d times, want 1", n)
	}

	hist := history(ctx, t, c, run)
	if err := replayer(AgentLoop).ReplayWorkflowHistory(quiet, hist); err != nil {
		t.Fatalf("replaying the run's history: %v", err)
	}
	if *update {
		data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(historyFile, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A canceled workflow cancels its running call: the cancellation reaches
// the activity with its next heartbeat, and from the activity's context
// the MCP server's handler, through notifications/cancelled.
func TestServerCancel(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	m := newMailServer()
	startWorker(t, ts, m)
	c := ts.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	call := ToolCall{ID: "w1", Name: "wait", Arguments: map[string]any{"id": "w1"}}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "loop-cancel", TaskQueue: taskQueue},
		loopWorkflow, LoopInput{Call: call, ApprovalTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), approvalSignal, Decision{Allow: true}); err != nil {
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
