// Package shape tells which provider's API a response was made by, so
// that a response given to the wrong provider is named, not just refused.
package shape

import "fmt"

// A Shape is one provider API's response shape.
type Shape struct {
	// Provider is the provider's name, as adapters.Provider.String
	// returns it; API names the API for people, with its article.
	Provider, API string
	// Keys are where its tool calls are, for people.
	Keys string
}

var (
	anthropic = Shape{"anthropic", "an Anthropic Messages", "content[].tool_use"}
	chat      = Shape{"openai-chat", "an OpenAI Chat Completions", "choices[].message.tool_calls"}
	responses = Shape{"openai-responses", "an OpenAI Responses", "output[].function_call"}
	gemini    = Shape{"gemini", "a Gemini", "candidates[].content.parts[].functionCall"}
)

// Of returns the shape response m has, by the keys only its API uses;
// false when it has none of them. A bare message (an assistant message
// rather than a whole response) is recognised too.
func Of(m map[string]any) (Shape, bool) {
	switch {
	case m["object"] == "chat.completion", isList(m["choices"]):
		return chat, true
	case m["object"] == "response", isList(m["output"]):
		return responses, true
	case isList(m["candidates"]), isList(m["parts"]), m["promptFeedback"] != nil:
		return gemini, true
	case m["type"] == "message", m["stop_reason"] != nil:
		return anthropic, true
	case m["tool_calls"] != nil:
		return chat, true // a Chat message
	case m["role"] == "model":
		return gemini, true // a Gemini content
	case m["role"] == "assistant" && isList(m["content"]):
		for _, b := range m["content"].([]any) {
			if o, ok := b.(map[string]any); ok && o["type"] == "tool_use" {
				return anthropic, true
			}
		}
	}
	return Shape{}, false
}

// Mismatch says, for provider's parser that did not find its own shape in
// m, which other provider's response m looks like; "" when it looks like
// none (or like provider's own).
func Mismatch(provider string, m map[string]any) string {
	s, ok := Of(m)
	if !ok || s.Provider == provider {
		return ""
	}
	return fmt.Sprintf("; this looks like %s response (%s), but the provider is %s: give provider %s", s.API, s.Keys, provider, s.Provider)
}

func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}
