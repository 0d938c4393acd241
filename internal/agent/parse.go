package agent

import (
	"fmt"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/anthropic"
	"github.com/conduitmcp/conduit/adapters/gemini"
	"github.com/conduitmcp/conduit/adapters/openai"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// ParseCalls returns the tool calls of a provider response as the model wrote
// them, in order, one per entry of the Execution.Results that
// adapters.ExecuteToolCalls makes of the same response. It is how a caller
// learns the name the model used for a call that did not resolve, which
// Execution.Calls leaves out; its error is the adapters' own for a response
// they cannot read.
func ParseCalls(p adapters.Provider, response any) ([]toolcall.Raw, error) {
	switch p {
	case adapters.Anthropic:
		return anthropic.Parse(response)
	case adapters.OpenAIChat:
		return openai.Parse(openai.Chat, response)
	case adapters.OpenAIResponses:
		return openai.Parse(openai.Responses, response)
	case adapters.Gemini:
		return gemini.Parse(response)
	}
	return nil, fmt.Errorf("unknown provider %v", p)
}
