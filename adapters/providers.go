package adapters

import (
	"github.com/conduitmcp/conduit/adapters/anthropic"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/gemini"
	"github.com/conduitmcp/conduit/adapters/openai"
)

// The provider table: each Provider's driver, from its package. Adding a
// provider is a package under adapters/ that implements driver.Provider, a
// Provider constant, a row here, a fake in adaptertest, and its goldens.
var table = [...]driver.Provider{
	Anthropic:       anthropic.Driver(),
	OpenAIChat:      openai.Chat.Driver(),
	OpenAIResponses: openai.Responses.Driver(),
	Gemini:          gemini.Driver(),
}
