package toolcall

// The shapes of a conversation, for loops that keep one and send their own
// requests (conduit sends none): each provider package reads a response as
// a Turn, and builds a request from a Request.

// Turn is a model's response read as one turn of the conversation.
type Turn struct {
	// Items join the conversation, in order: the assistant message
	// (Anthropic, OpenAI Chat), the output items (OpenAI Responses), the
	// model's content (Gemini).
	Items []any
	// Text is what the model wrote for the user in the turn.
	Text string
	// ToolUse reports that the model asked for tools.
	ToolUse bool
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

// Answered is an answer found in a conversation: the call it answers, and
// whether it reports a failure.
type Answered struct {
	// ID is the call's id, or for a Gemini answer without one, the
	// function's name.
	ID    string
	Error bool
}
