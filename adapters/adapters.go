// Package adapters connects a governed MCP source (a conduit.Hub or
// conduit.Client) to an LLM's tool calling: it lists the source's tools in
// a provider's format and answers the model's tool calls, run through the
// governed pipeline, in the same format. It makes no LLM HTTP calls: send
// the requests with your own client.
//
// A [Conversation] is the way in: one per chat, over one source and one
// provider, an agent loop is two calls a turn,
//
//	conv, err := adapters.NewConversation(ctx, hub, adapters.Anthropic, &adapters.ConversationOptions{
//		Principal: userID,
//	})
//	// each turn: send conv.Tools() with the messages, then
//	exec, err := conv.Execute(ctx, responseBody)
//	// append exec.Results to the messages; stop when exec.Halted
//
// and it carries the offered tool set, strict mode's null paths, the
// principal and the taint from turn to turn. A call the approver defers
// (conduit.Defer) leaves the turn incomplete: it is listed in
// [Execution.Pending], [Conversation.State] saves the conversation as
// sealed bytes, and [ResumeConversation] and [Conversation.Resume], in
// this process or another, complete the turn with the decisions, each
// decided call sent at most once ([StateOptions]). Past a size it offers tool
// search instead of every tool ([SearchOptions]): the provider's own where
// it has one, conduit's search_tools elsewhere. [Tools] and
// [ExecuteToolCalls] are the same steps as functions, for callers that
// keep those themselves.
//
// Each [Provider] is the driver of its package under adapters/
// (anthropic, openai, gemini), as gocloud.dev's portable types wrap their
// drivers: what differs between providers (definitions, parsing, answers,
// the HTTP API of [Wire]) is there, as pure functions; the interface they
// implement is adapters/driver, where what only some providers can do
// (their own tool search, a strict mode) is an optional interface; what
// every provider shares lives here and in toolcall. Fakes of the
// providers' APIs, and the conformance suite every provider runs, are in
// adapters/adaptertest.
//
// # Choices
//
// Every call of a response is answered, in the model's order: the answers
// of a turn are meant to be sent together, and a model that gets fewer
// answers than it made calls is refused by Anthropic and OpenAI. Answers
// never share state with the response they answer, which is never
// modified. Tool definitions are built once per tool (in
// [conduit.Tool.Memo]) and each listing costs little more than a map copy
// per tool. Listing options a provider does not use (CacheLast outside
// Anthropic, Strict outside OpenAI) are ignored.
//
// A response is outside input, and bounded ([ResponseLimits]): one over
// MaxResponseBytes (32 MiB) is refused unparsed, and the calls past
// MaxToolCalls (128) are answered, not sent. Answers are bounded too: an
// image over the provider's documented limit becomes a placeholder that
// says so, and invalid UTF-8 from a server is repaired before it is put
// in JSON.
//
// What the model reads of the results is bounded by a result budget,
// 25,000 tokens a result (AnswerOptions.MaxResultTokens, a server's own
// or a call's in its place) and 50,000 a turn, shared among its results
// (BudgetOptions), counted on the answers as each provider carries them:
// a result over its budget keeps its beginning, cut cleanly (a JSON text
// or structuredContent into valid JSON), and a notice says what was cut
// and how to ask for less. A Conversation with its read tool
// (ReadOptions) keeps the whole and offers read_result, governed as
// conduit/read_result, to read the rest. BudgetOptions and ReadOptions
// give the rules.
//
// Arguments that are not a JSON object are answered, not sent, and a
// field a provider always sends is malformed when it is null or missing.
// Per provider:
//
//   - Anthropic: "input" null or missing is not an object; the API sends
//     {} for a tool without parameters.
//   - OpenAI (Chat and Responses): "arguments" is a JSON string; null,
//     missing, or the string "null" is not an object. An empty string is
//     a call without arguments, as OpenAI sends it for a tool without
//     parameters (a decoded object, as some compatible servers send, is
//     taken as it is).
//   - Gemini: a call without "args" is a call without arguments, as Gemini
//     sends it for a function without parameters; "args": null is not an
//     object.
//
// The Anthropic adapter never builds a tool_choice of type "any" or
// "tool": current Claude models reject forced tool use. Leave tool_choice
// unset, or use "auto" or "none".
package adapters
