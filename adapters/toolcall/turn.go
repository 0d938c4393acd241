package toolcall

// The shapes of a conversation, for loops that keep one and send their own
// requests. Conduit sends none. Each provider package reads a response as
// a Turn, and builds a request from a Request.

// Turn is a model's response read as one turn of the conversation.
type Turn struct {
	// Items join the conversation, in order. They are the assistant
	// message (Anthropic, OpenAI Chat), the output items (OpenAI
	// Responses), or the model's content (Gemini).
	Items []any
	// Text is what the model wrote for the user in the turn.
	Text string
	// ToolUse reports that the model asked for tools.
	ToolUse bool
	// Paused reports that the provider paused the turn before it ended.
	// That is Anthropic's stop_reason "pause_turn". A server tool such as
	// the tool search tool ran long, or past the API's own loop limit. The
	// loop goes on by sending the conversation again, with Items as they
	// came. The model continues its turn. Its tool calls, if it has any,
	// are answered first as a tool turn's are.
	Paused bool
}

// Request is what one request to a provider's API carries.
type Request struct {
	Model string
	// MaxTokens bounds the answer where the API requires a bound
	// (Anthropic); zero means 4096.
	MaxTokens int
	// Tools are the tool definitions, as the provider package lists them.
	Tools []map[string]any
	// Conversation is the conversation so far.
	Conversation []any
}

// DefaultMaxTokens is a Request's MaxTokens when it is zero.
const DefaultMaxTokens = 4096
