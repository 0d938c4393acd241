// Package adapters connects a governed MCP source (a conduit.Hub or
// conduit.Client) to an LLM's tool calling: [Tools] lists the source's tools
// in a provider's format, and [ExecuteToolCalls] runs the calls a model made
// through the governed pipeline and answers every one in the same format.
// It makes no LLM HTTP calls: send the requests with your own client.
//
// The wire shapes of each provider live in its own package (anthropic,
// openai, gemini), as pure functions for programs that drive the pipeline
// themselves; what every provider shares lives here and in toolcall.
//
// # Choices
//
// Every call of a response is answered, in the model's order: the answers
// of a turn are meant to be sent together, and a model that gets fewer
// answers than it made calls is refused by Anthropic and OpenAI. Answers never
// share state with the response they answer, which is never modified.
// Tool definitions are built once per tool (in [conduit.Tool.Memo]) and
// each listing costs little more than a map copy per tool.
//
// The Anthropic adapter never builds a tool_choice of type "any" or
// "tool": current Claude models reject forced tool use. Leave tool_choice
// unset, or use "auto" or "none".
package adapters
