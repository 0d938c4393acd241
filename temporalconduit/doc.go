// Package temporalconduit runs conduit's governed tool calls on Temporal
// (go.temporal.io/sdk). Its agent loops are durable. They wait days for an
// approval, survive deploys and crashed workers, and run on many machines.
// They keep conduit's policy, approvals, hooks, taint and limits.
//
// A worker holds a conduit source (a Hub) for its lifetime. It [Register]s
// conduit's activities over it. The application's workflow keeps a
// [Conversation]. Each turn, it calls its own activity to send the model a
// request. Conduit makes no LLM calls. The application's model activity
// gets the tool definitions of the [Offer] from [Activities.Tools]. Then
// the workflow calls [Conversation.Execute] with the response:
//
//	conv, err := temporalconduit.NewConversation(ctx, &temporalconduit.ConversationOptions{
//		Provider: adapters.Anthropic, Principal: user,
//	})
//	for {
//		var resp json.RawMessage
//		err := workflow.ExecuteActivity(ctx, "CallModel", conv.Offer(), messages).Get(ctx, &resp)
//		// ... append the response to the messages; stop when it asks for no tools
//		turn, err := conv.Execute(ctx, resp)
//		// ... append turn.Results; stop when turn.Halted
//	}
//
// # Workflow code and activities
//
// What runs in the workflow is scheduling and bookkeeping only:
//
//   - which activity runs when;
//   - waiting for decisions;
//   - the turn's answers in the model's order;
//   - the taint.
//
// Everything conduit decides or writes runs in activities, whose results
// the history records. That covers listing and tool definitions, reading
// the response, policy, approvers, hooks, validation, the call, and the
// answer's shape. So a conduit upgrade changes what later activities do.
// It never changes what a replay of recorded events decides. The workflow
// code of this package changes only behind workflow.GetVersion. The names
// of its activities ("conduit.ListTools", "conduit.Plan",
// "conduit.CallTool", "conduit.PollTask"), query and update are fixed.
// Its tests replay a recorded history of every release.
//
// A turn is one plan activity, then an activity per call. The plan reads
// the response's calls against the offer and sends nothing. Calls run
// MaxConcurrency at once, one by default. The tool listing stays out of
// the history. The offer names each tool by its definition's digest.
// Every activity finds the tool again in its worker's listing. So a tool
// whose definition changed since it was offered is not called.
//
// # At most once
//
// Tool calls are not idempotent: a retried activity must not send its call
// again. The call's activity claims the call before the pipeline runs. It
// claims in store.Claims: the worker's Options.Claims, by default the
// hub's conduit.Options.Store. The key holds the conversation, the turn,
// the call's position and the decision round. It also holds a digest of
// the call's name and arguments. The activity records the answer after the call. An
// attempt that finds the claim completed answers with the recorded answer.
// One that finds it pending (claimed, nothing recorded) sends nothing. It
// answers that the outcome is unknown. The model is told so, and
// Turn.Unknown names the call.
//
// Say a worker dies after sending a call and before recording its outcome.
// The call was sent once, and is never sent again. Temporal notices the
// death within the heartbeat timeout. The activity's next attempt, on
// another worker, finds the claim pending. The model is told that the call
// may have been made and was not made again. A worker may also be lost
// after it claimed the call and before it sent it. The approver, a hook or
// the policy was then running. It gets the same answer, since no one can
// tell these apart. Across workers this needs a shared store (store/redisstore).
// Give Redis persistence if its restart must not forget claims. A store of
// one process is store.Memory, a hub's default. With it, a call's activity
// has one attempt. A lost worker's call is answered the same way, from
// the claim where it can be read, and never retried. A claim lives
// Options.ClaimTTL. Past it, the call could be sent again.
//
// MCP's annotations relax this only for servers the worker's
// Options.Trusted names. A tool with readOnlyHint is sent on every attempt
// with no claim. One with idempotentHint is sent again when its outcome is
// unknown.
//
// # Deferred approvals
//
// The approver may defer a call (conduit.Defer, conduit.DeferAll). Give
// the workers' hub such an approver for the calls a person decides. A
// deferred call leaves its activity pending. The workflow shows it by the
// query QueryPending. It waits for an UpdateDecide with a decision, for
// as long as it takes (or ConversationOptions.DecisionTimeout). Another
// activity takes up the decided call, claimed under the next round. The
// decision is its approval (conduit.CallOptions.Approval). The policy
// still decides first, and a tool that changed since is not called. A
// denial with a halt ends the turn. The calls not yet sent, and those
// still waiting, are answered as halted. Turn.Halted tells the loop to
// end.
//
// # Tasks
//
// A server may run a call as a task (SEP-2663). The call's activity then
// returns the task as soon as the server makes it
// (conduit.CallOptions.DetachTask). The workflow waits the task's poll
// interval on a durable timer. Then a short activity, "conduit.PollTask",
// asks about the task once through the same pipeline. That repeats until
// the task ends, and its result answers the call. The task's id is in the
// history. So a worker lost in the middle is followed by another that
// polls the same task, and the call is not sent again. A cancelled
// workflow cancels the task (tasks/cancel). A task that asks for input
// waits as a deferred call does, and the answer goes to the same task.
// Only an activity's output that names a task takes this path. No earlier
// release recorded one, so their histories replay as before.
//
// # Long histories
//
// A Conversation's State is small: the offer's references, the taint, a
// turn count. Between turns it can be carried into a new run with
// workflow.NewContinueAsNewError and ResumeConversation. Do so when
// workflow.GetInfo(ctx).GetContinueAsNewSuggested says so. Results and
// answers are kept in the history. Options.MaxAnswerBytes bounds each one,
// since Temporal refuses a payload over 2 MB. The hub's result limits and
// budget should keep them far smaller. A call's activity returns its
// result whole. A local activity of the workflow answers the calls of each
// step of the turn, as adapters.ExecuteToolCalls does:
//
//   - each result within its budget: its server's "maxResultTokens", else
//     Options.Answers.MaxResultTokens, else 25,000 tokens;
//   - the turn's budget (ConversationOptions.MaxTurnTokens, 50,000 by
//     default) shared max-min fairly.
//
// The same response gets the same answers under both. A result over
// MaxAnswerBytes is answered by its activity instead. It stays within its
// own budget and the turn's, and counts as an answer written before.
package temporalconduit
