//go:build temporalserver

// A worker process stopped while its call's task runs at the server, and
// another worker process that polls the same task to its end.
package temporalconduit_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/temporalconduit"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"
)

// The first worker process sends the call, which the gateway runs as a
// task, and polls it on the workflow's timers; it is killed (SIGKILL)
// while the task still runs. A second worker process takes up the polls
// of the same task, whose id is in the history, and the turn ends with
// the task's result. The tool was called once, counted at the server.
func TestServerTaskOutlivesWorker(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	j := newJobServer()
	url := j.gateway(t)
	c := ts.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	first := startWorkerProcess(t, ts, url, "")
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "agent-task-worker-lost", TaskQueue: taskQueue}, agentWorkflow,
		agentInput{Script: [][]toolcall.Raw{{report("w1")}},
			Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic, HeartbeatTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	for j.gets.Load() < 3 {
		select {
		case <-first.exited:
			t.Fatal("the worker process exited")
		case <-ctx.Done():
			t.Fatalf("the task was polled %d times before the deadline", j.gets.Load())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if n := j.sends("w1"); n != 1 {
		t.Fatalf("before the kill the tool was called %d times, want once", n)
	}
	first.kill()
	before := j.gets.Load()
	startWorkerProcess(t, ts, url, "")
	for j.gets.Load() == before {
		select {
		case <-ctx.Done():
			t.Fatal("the new worker never polled the task")
		case <-time.After(20 * time.Millisecond):
		}
	}
	close(j.release)

	var out agentOutput
	if err := run.Get(ctx, &out); err != nil {
		t.Fatal(err)
	}
	if want := []string{"w1 report w1 written"}; len(out.Turns) != 1 || !slices.Equal(answered(out.Turns[0].Results), want) {
		t.Errorf("turns %+v, want %q", out.Turns, want)
	}
	if n := j.sends("w1"); n != 1 {
		t.Errorf("the tool was called %d times, want once", n)
	}
	if len(out.Turns) == 1 && len(out.Turns[0].Unknown) != 0 {
		t.Errorf("unknown outcomes %q, want none", out.Turns[0].Unknown)
	}

	// The run's history replays on today's workflow code. With -update it
	// is recorded beside the older ones (TestReplayRecordedHistory).
	replayAndRecord(ctx, t, c, run, agent, filepath.Join("testdata", "agent_task_history.json"))
}
