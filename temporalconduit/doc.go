// Package temporalconduit runs conduit's governed tool calls on Temporal
// (go.temporal.io/sdk): durable agent loops that wait days for an
// approval, survive deploys and crashed workers, and run on many
// machines, and that keep conduit's policy, approvals, hooks, taint and
// limits.
//
// A worker holds a conduit source (a Hub) for its lifetime and
// [Register]s conduit's activities over it. The application's workflow
// keeps a [Conversation] and, each turn, calls its own activity to send
// the model a request (conduit makes no LLM calls: the application's
// model activity gets the tool definitions of the [Offer] from
// [Activities.Tools]), then [Conversation.Execute] with the response:
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
// What runs in the workflow is scheduling and bookkeeping only: which
// activity runs when, waiting for decisions, the turn's answers in the
// model's order, the taint. Everything conduit decides or writes (listing
// and tool definitions, reading the response, policy, approvers, hooks,
// validation, the call, the answer's shape) runs in activities, whose
// results the history records. So a conduit upgrade changes what later
// activities do, never what a replay of recorded events decides: the
// workflow code of this package changes only behind workflow.GetVersion,
// and the names of its activities ("conduit.ListTools", "conduit.Plan",
// "conduit.CallTool"), query and update are fixed. Its tests replay a
// recorded history of every release.
//
// A turn is one plan activity, which reads the response's calls against
// the offer and sends nothing, then an activity per call (MaxConcurrency
// at once, one by default). The tool listing stays out of the history:
// the offer names each tool by its definition's digest, and every activity
// finds it again in its worker's listing, so a tool whose definition
// changed since it was offered is not called.
//
// # At most once
//
// Tool calls are not idempotent: a retried activity must not send its call
// again. The call's activity claims the call (store.Claims: the worker's
// Options.Claims, by default the hub's conduit.Options.Store) before the
// pipeline runs, under a key of the conversation, the turn, the call's
// position, the decision round and a digest of its name and arguments,
// and records the answer after. An attempt that finds the claim completed
// answers with the recorded answer; one that finds it pending (claimed,
// nothing recorded) sends nothing and answers that the outcome is unknown
// (the model is told so, and Turn.Unknown names the call).
//
// A worker that dies after sending a call and before recording its
// outcome: the call was sent once, and is never sent again. Temporal
// notices the death within the heartbeat timeout; the activity's next
// attempt, on another worker, finds the claim pending, and the model is
// told that the call may have been made and was not made again. The same
// answer is given for a worker lost after it claimed the call and before
// it sent it (the approver, a hook or the policy running), since no one
// can tell these apart. Across workers this needs a shared store
// (store/redisstore, with persistence if a restart of Redis must not
// forget claims). With a store of one process (store.Memory, a hub's
// default), a call's activity has one attempt: a lost worker's call is
// answered the same way, from the claim where it can be read, never
// retried. A claim lives Options.ClaimTTL; past it the call could be sent
// again.
//
// MCP's annotations relax this only for servers the worker's
// Options.Trusted names: a tool with readOnlyHint is sent on every attempt
// with no claim, and one with idempotentHint is sent again when its
// outcome is unknown.
//
// # Deferred approvals
//
// A call the approver defers (conduit.Defer, conduit.DeferAll: give the
// workers' hub such an approver for the calls a person decides) leaves
// its activity pending: the workflow shows it by the query QueryPending
// and waits for an UpdateDecide with a decision, for as long as it takes
// (or ConversationOptions.DecisionTimeout). The decided call is taken up
// by another activity, claimed under the next round, with the decision as
// the approval (conduit.CallOptions.Approval): the policy still decides
// first, and a tool that changed since is not called. A denial with a
// halt ends the turn: the calls not yet sent, and those still waiting, are
// answered as halted, and Turn.Halted tells the loop to end.
//
// # Long histories
//
// A Conversation's State is small (the offer's references, the taint, a
// turn count); between turns it can be carried into a new run with
// workflow.NewContinueAsNewError and ResumeConversation, when
// workflow.GetInfo(ctx).GetContinueAsNewSuggested says so. Results and
// answers are kept in the history: Options.MaxAnswerBytes bounds each one
// (Temporal refuses a payload over 2 MB), and the hub's result limits and
// budget should keep them far smaller. A call's activity returns its
// result whole, and a local activity of the workflow answers the calls
// of each step of the turn as adapters.ExecuteToolCalls does: each result
// within its budget (its server's "maxResultTokens", else
// Options.Answers.MaxResultTokens, else 25,000 tokens), and the turn's (ConversationOptions.MaxTurnTokens,
// 50,000 by default) shared max-min fairly. The same response gets the
// same answers under both. A result over MaxAnswerBytes is answered by
// its activity instead, within its own budget and the turn's, and counts
// as an answer written before.
package temporalconduit
