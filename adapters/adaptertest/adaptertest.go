// Package adaptertest is for tests of the adapters. It holds fakes of each
// built-in provider's HTTP API ([FakeOf]). It holds the conformance suite
// that every provider runs ([RunConformanceTests]). It is as gocloud.dev's
// drivertest is for its drivers. A provider from outside this module
// brings its own [Fake] in a [Harness] and runs the same suite.
package adaptertest

import (
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// Fake fakes a provider's HTTP API, in its documented shapes. It writes
// the responses a model would send. It reads what the requests sent to
// the API carry. Its methods are pure and safe for concurrent use.
type Fake interface {
	// Response is a response in which the model says text and makes
	// calls, in order, as the API would send it. OpenAI's arguments are
	// JSON strings.
	Response(text string, calls ...toolcall.Raw) map[string]any
	// Conversation returns the conversation a request body carries.
	Conversation(request map[string]any) []any
	// Answered returns the answers that end a conversation. Each gives the
	// call it answers, and whether it reports a failure.
	Answered(conversation []any) []Answered
}

// Answered is an answer found in a conversation. It gives the call it
// answers, and whether it reports a failure.
type Answered struct {
	// ID is the call's id, or for a Gemini answer without one, the
	// function's name.
	ID    string
	Error bool
	// Text is what the model reads of the answer as text. That is its text
	// blocks or items, one a line, images left out. For Gemini it is the
	// output or error, a structured output as JSON, then its notice.
	Text string
}

// Pauser is the Fake of an API that pauses a turn before it ends
// (Anthropic's pause_turn). Package adapters reads it as
// toolcall.Turn.Paused.
type Pauser interface {
	Fake
	// Paused is a response in which the model says text and the API
	// pauses the turn. It has no call of the model's own.
	Paused(text string) map[string]any
}

// Harness is a provider under test and the fake of its API.
type Harness struct {
	// Provider is the provider, as adapters.NewProvider makes it.
	Provider adapters.Provider
	// Fake writes the responses of its API and reads its requests.
	Fake Fake
}

// Of returns the harness of a built-in provider (its fake is FakeOf's).
func Of(p adapters.Provider) Harness { return Harness{Provider: p, Fake: FakeOf(p)} }

// FakeOf returns built-in provider p's fake, nil for any other.
func FakeOf(p adapters.Provider) Fake {
	switch p {
	case adapters.Anthropic:
		return anthropicFake{}
	case adapters.OpenAIChat:
		return chatFake{}
	case adapters.OpenAIResponses:
		return responsesFake{}
	case adapters.Gemini:
		return geminiFake{}
	case adapters.Bedrock:
		return bedrockFake{}
	}
	return nil
}
