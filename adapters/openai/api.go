package openai

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// The two APIs over HTTP, for loops that send their own requests. Conduit
// sends none. Here are where a request goes, and how it is authenticated
// and built. Here is how a response and its answers join the
// conversation.

const (
	// baseURL is the public API's base URL, with its version.
	baseURL = "https://api.openai.com/v1"
	// keyEnv is the environment variable that conventionally holds the
	// API key.
	keyEnv = "OPENAI_API_KEY"
)

// endpoint returns the URL of the API under base.
func (api apiKind) endpoint(base, _ string) string {
	base = strings.TrimRight(base, "/")
	if api == responsesAPI {
		return base + "/responses"
	}
	return base + "/chat/completions"
}

// authorize sets the bearer token that carries the key, when there is one.
func authorize(h http.Header, key string) {
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}

// prompt is a user message of text (a Chat message, or a Responses input
// item).
func (api apiKind) prompt(text string) map[string]any {
	return map[string]any{"role": "user", "content": text}
}

// request is a request body: Chat "messages" or Responses "input", and the
// tools. The tools are left out when there are none. OpenAI rejects an
// empty list.
func (api apiKind) request(r toolcall.Request) map[string]any {
	key := "messages"
	if api == responsesAPI {
		key = "input"
	}
	conv := r.Conversation
	if conv == nil {
		conv = []any{}
	}
	b := map[string]any{"model": r.Model, key: conv}
	if len(r.Tools) > 0 {
		b["tools"] = r.Tools
	}
	return b
}

// turn reads a response as the model's turn. For Chat, that is the first
// choice's message. For Responses, it is every output item. Reasoning
// items are included, since the API wants them back. turn also gives its
// text, and whether it called functions.
func (api apiKind) turn(response map[string]any) (toolcall.Turn, error) {
	if e := jsonv.Object(response["error"]); e != nil && jsonv.String(e["message"]) != "" {
		return toolcall.Turn{}, fmt.Errorf("openai: the API answered an error: %v", e["message"])
	}
	if api == responsesAPI {
		output, ok := response["output"].([]any)
		if !ok {
			return toolcall.Turn{}, fmt.Errorf("openai-responses: the response has no output list")
		}
		var text []string
		calls := false
		for _, it := range output {
			item := jsonv.Object(it)
			switch item["type"] {
			case "function_call":
				calls = true
			case "message":
				for _, c := range jsonv.List(item["content"]) {
					if part := jsonv.Object(c); part["type"] == "output_text" {
						text = append(text, jsonv.String(part["text"]))
					}
				}
			}
		}
		return toolcall.Turn{Items: output, Text: strings.Join(text, "\n"), ToolUse: calls}, nil
	}
	choices := jsonv.List(response["choices"])
	if len(choices) == 0 {
		return toolcall.Turn{}, fmt.Errorf("openai-chat: the response has no choices")
	}
	msg := jsonv.Object(jsonv.Object(choices[0])["message"])
	if msg == nil {
		return toolcall.Turn{}, fmt.Errorf("openai-chat: the first choice has no message")
	}
	return toolcall.Turn{Items: []any{msg}, Text: jsonv.String(msg["content"]), ToolUse: len(jsonv.List(msg["tool_calls"])) > 0}, nil
}

// answers are a turn's tool messages (Chat) or function_call_output items
// (Responses) as they join the conversation. Each goes on its own, in
// order.
func (api apiKind) answers(results []map[string]any) []any {
	out := make([]any, len(results))
	for i, r := range results {
		out[i] = r
	}
	return out
}
