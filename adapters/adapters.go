// Package adapters connects a governed MCP source to an LLM's tool
// calling. The source is a conduit.Hub or conduit.Client. The package
// lists the source's tools in a provider's format. It runs the model's
// tool calls through the governed pipeline. It answers them in the same
// format. It makes no LLM HTTP calls: send the requests with your own
// client.
//
// A [Conversation] is the way in, one per chat. It runs over one source
// and one provider. An agent loop is two calls a turn:
//
//	conv, err := adapters.NewConversation(ctx, hub, adapters.Anthropic, &adapters.ConversationOptions{
//		Principal: userID,
//	})
//	// each turn: send conv.Tools() with the messages, then
//	exec, err := conv.Execute(ctx, responseBody)
//	// append exec.Results to the messages; stop when exec.Halted
//
// The Conversation carries from turn to turn the offered tool set,
// strict mode's null paths, the principal and the taint.
//
// A call the approver defers (conduit.Defer) leaves the turn incomplete.
// It is listed in [Execution.Pending]. [Conversation.State] saves the
// conversation as sealed bytes. [ResumeConversation] and
// [Conversation.Resume] complete the turn with the decisions. They may
// run in this process or another. Each decided call is sent at most
// once ([StateOptions]).
//
// Past a size, a Conversation offers tool search instead of every tool
// ([SearchOptions]). It uses the provider's own search where it has one.
// Elsewhere it uses conduit's search_tools. [Tools] and
// [ExecuteToolCalls] are the same steps as functions. They are for
// callers that keep that state themselves.
//
// Each [Provider] is the driver of its package under adapters/:
// anthropic, openai, gemini. This is how gocloud.dev's portable types
// wrap their drivers. What differs between providers lives in the
// driver, as pure functions: definitions, parsing, answers, and the HTTP
// API of [Wire]. The interface they implement is adapters/driver. There,
// what only some providers can do is an optional interface. Examples
// are their own tool search and a strict mode. What every provider
// shares lives here and in toolcall. adapters/adaptertest holds fakes of
// the providers' APIs. It also holds the conformance suite every
// provider runs.
//
// # Choices
//
// Every call of a response is answered, in the model's order. The
// answers of a turn are meant to be sent together. Anthropic and OpenAI
// refuse a model that gets fewer answers than it made calls. Answers
// never share state with the response they answer. The response is
// never modified. Tool definitions are built once per tool (in
// [conduit.Tool.Memo]). Each listing costs little more than a map copy
// per tool. Listing options a provider does not use are ignored. Those
// are CacheLast outside Anthropic and Strict outside OpenAI.
//
// A response is outside input, and bounded ([ResponseLimits]). One over
// MaxResponseBytes (32 MiB) is refused unparsed. The calls past
// MaxToolCalls (128) are answered, not sent. Answers are bounded too. An
// image over the provider's documented limit becomes a placeholder that
// says so. Invalid UTF-8 from a server is repaired before it is put in
// JSON.
//
// What the model reads of the results is bounded by a result budget
// (BudgetOptions):
//
//   - 25,000 tokens a result (AnswerOptions.MaxResultTokens, or a server's or a call's own);
//   - 50,000 a turn, shared among its results.
//
// Tokens are counted on the answers as each provider carries them. A
// result over its budget keeps its beginning, cut cleanly. A JSON text
// or structuredContent is cut into valid JSON. A notice says what was
// cut and how to ask for less. A Conversation with its read tool
// (ReadOptions) keeps the whole. It offers read_result to read the rest,
// governed as conduit/read_result. BudgetOptions and ReadOptions give
// the rules.
//
// Arguments that are not a JSON object are answered, not sent. A field a
// provider always sends is malformed when it is null or missing. Per
// provider:
//
//   - Anthropic: "input" null or missing is not an object. The API sends
//     {} for a tool without parameters.
//   - OpenAI (Chat and Responses): "arguments" is a JSON string. Null,
//     missing, or the string "null" is not an object. An empty string is
//     a call without arguments. OpenAI sends that for a tool without
//     parameters. A decoded object is taken as it is. Some compatible
//     servers send one.
//   - Gemini: a call without "args" is a call without arguments. Gemini
//     sends that for a function without parameters. "args": null is not
//     an object.
//
// The Anthropic adapter never builds a tool_choice of type "any" or
// "tool". Current Claude models reject forced tool use. Leave
// tool_choice unset, or use "auto" or "none".
package adapters
