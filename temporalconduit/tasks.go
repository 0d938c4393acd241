// Calls whose server runs them as tasks (SEP-2663). The activity that
// sends such a call returns the task at once. The workflow waits on
// durable timers and asks about the task in a short activity per tick.
// The task's id is in the history, so another worker goes on polling
// the same task: the call is never sent again.

package temporalconduit

import (
	"errors"
	"time"

	"github.com/conduitmcp/conduit"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// awaitTask waits the poll interval of task, the task job j's call runs
// as, on a timer. Then it asks about the task once (pollTask). done gets
// what it answered. A cancelled wait cancels the task.
func (c *Conversation) awaitTask(ctx workflow.Context, sel workflow.Selector, j job, task *conduit.Input, done func(job, callOutput, error)) {
	j.in.Input, j.poll = task, true
	sel.AddFuture(workflow.NewTimer(ctx, task.Task.PollInterval), func(f workflow.Future) {
		if err := f.Get(ctx, nil); err != nil {
			done(j, callOutput{}, err)
			return
		}
		sel.AddFuture(workflow.ExecuteActivity(c.pollCtx(ctx), activityPollTask, j.in), func(f workflow.Future) {
			var out callOutput
			err := f.Get(ctx, &out)
			done(j, out, err)
		})
	})
}

// cancelTask sends tasks/cancel for the task job j polls. It runs on a
// context of its own: the workflow's is cancelled already.
func (c *Conversation) cancelTask(ctx workflow.Context, j job) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	in := *j.in.Input
	task := *in.Task
	task.Cancel = true
	in.Task = &task
	j.in.Input = &in
	if err := workflow.ExecuteActivity(c.pollCtx(dctx), activityPollTask, j.in).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("conduit: a task could not be cancelled", "call", j.cs.Key, "task", task.ID, "error", err)
	}
}

// pollCtx is ctx with the options of a task's poll. A poll sends no
// tools/call, so it is retried freely, on any worker: a lost worker's
// poll is taken up by another.
func (c *Conversation) pollCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           c.o.TaskQueue,
		StartToCloseTimeout: c.o.CallTimeout + time.Minute,
		HeartbeatTimeout:    c.o.HeartbeatTimeout,
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute,
			MaximumAttempts: 10, NonRetryableErrorTypes: []string{nonRetryable}},
	})
}

// pollFailed is the outcome of a call whose task's polls failed for good.
// The task may go on at its server; the call is answered as unavailable.
func pollFailed(j job, err error) callOutput {
	var ae *temporal.ApplicationError
	msg := err.Error()
	if errors.As(err, &ae) {
		msg = ae.Message()
	}
	return failed(&conduit.Error{Kind: conduit.ErrUnavailable, Server: j.in.Call.Server, Tool: j.in.Call.Tool,
		Message: "The call to " + j.in.Call.Name + " runs as task " + j.in.Input.Task.ID + " at its server, which could not be asked about it: " + msg})
}
