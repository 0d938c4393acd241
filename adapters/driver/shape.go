// Shapes: which provider's API a response was made by. So a response given
// to the wrong provider is named, not just refused.

package driver

import "fmt"

// A shape is one provider API's response shape.
type shape struct {
	// Provider is the provider's name, as adapters.Provider.String
	// returns it. API names the API for people, with its article.
	Provider, API string
	// Keys are where its tool calls are, for people.
	Keys string
}

var (
	anthropic = shape{"anthropic", "an Anthropic Messages", "content[].tool_use"}
	chat      = shape{"openai-chat", "an OpenAI Chat Completions", "choices[].message.tool_calls"}
	responses = shape{"openai-responses", "an OpenAI Responses", "output[].function_call"}
	gemini    = shape{"gemini", "a Gemini", "candidates[].content.parts[].functionCall"}
	converse  = shape{"bedrock", "an Amazon Bedrock Converse", "output.message.content[].toolUse"}
)

// shapeOf returns the shape response m has, by the keys only its API
// uses. It returns false when m has none of them. A bare message is
// recognised too: an assistant message rather than a whole response.
func shapeOf(m map[string]any) (shape, bool) {
	switch {
	case m["object"] == "chat.completion", isList(m["choices"]):
		return chat, true
	case m["object"] == "response", isList(m["output"]):
		return responses, true
	case isList(m["candidates"]), isList(m["parts"]), m["promptFeedback"] != nil:
		return gemini, true
	case m["type"] == "message", m["stop_reason"] != nil:
		return anthropic, true
	case isObject(m["output"]), m["stopReason"] != nil:
		return converse, true
	case m["tool_calls"] != nil:
		return chat, true // a Chat message
	case m["role"] == "model":
		return gemini, true // a Gemini content
	case m["role"] == "assistant" && isList(m["content"]):
		for _, b := range m["content"].([]any) {
			o, _ := b.(map[string]any)
			switch {
			case o["type"] == "tool_use":
				return anthropic, true
			case o["toolUse"] != nil:
				return converse, true
			}
		}
	}
	return shape{}, false
}

// Mismatch says which other provider's response m looks like. It is for
// the error of provider's parser when m is not of its own shape. It
// returns "" when m looks like no known provider's response. It returns ""
// when m looks like provider's own. Its text starts with "; ", to follow
// the parser's own message.
func Mismatch(provider string, m map[string]any) string {
	s, ok := shapeOf(m)
	if !ok || s.Provider == provider {
		return ""
	}
	return fmt.Sprintf("; this looks like %s response (%s), but the provider is %s: give provider %s", s.API, s.Keys, provider, s.Provider)
}

func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}

func isObject(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}
