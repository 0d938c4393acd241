package adapters

import (
	"github.com/conduitmcp/conduit/adapters/anthropic"
	"github.com/conduitmcp/conduit/adapters/bedrock"
	"github.com/conduitmcp/conduit/adapters/gemini"
	"github.com/conduitmcp/conduit/adapters/openai"
)

// The built-in providers, each made of its package's driver. A provider
// from outside this module is made the same way, with [NewProvider].
var (
	// Anthropic is the Anthropic Messages API.
	Anthropic = NewProvider(anthropic.Driver())
	// OpenAIChat is OpenAI's Chat Completions API.
	OpenAIChat = NewProvider(openai.ChatDriver())
	// OpenAIResponses is OpenAI's Responses API.
	OpenAIResponses = NewProvider(openai.ResponsesDriver())
	// Gemini is the Gemini API's generateContent. It is experimental. Its
	// shapes come from the API reference, not from end-to-end runs.
	Gemini = NewProvider(gemini.Driver())
	// Bedrock is Amazon Bedrock's Converse API.
	Bedrock = NewProvider(bedrock.Driver())
)

// Providers lists the built-in providers, in a stable order. Their names
// are those ParseProvider and the CLI's --provider know.
func Providers() []Provider {
	return []Provider{Anthropic, OpenAIChat, OpenAIResponses, Gemini, Bedrock}
}
