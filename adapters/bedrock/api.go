package bedrock

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// Converse over HTTP, for loops that send their own requests. Conduit
// sends none. It authenticates with a Bedrock API key, sent as a bearer
// token. A loop that signs with SigV4 sets its own headers instead.

const (
	baseURL = "https://bedrock-runtime.us-east-1.amazonaws.com"
	keyEnv  = "AWS_BEARER_TOKEN_BEDROCK"
)

func (converse) API() driver.API {
	return driver.API{BaseURL: baseURL, KeyEnv: keyEnv, Endpoint: endpoint, Authorize: authorize,
		Prompt: prompt, Request: request, Turn: turn, Answers: answers, Stream: streamRequest}
}

// endpoint is the Converse URL of model under base. model is an id, an ARN
// or an inference profile, escaped as one path segment.
func endpoint(base, model string) string {
	return strings.TrimRight(base, "/") + "/model/" + url.PathEscape(model) + "/converse"
}

func authorize(h http.Header, key string) {
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}

func prompt(text string) map[string]any {
	return map[string]any{"role": "user", "content": []any{map[string]any{"text": text}}}
}

// request is a Converse body. The model is in the URL, the tools under
// toolConfig. toolConfig is left out when there are none. Converse
// refuses an empty list.
func request(r toolcall.Request) map[string]any {
	max := r.MaxTokens
	if max <= 0 {
		max = toolcall.DefaultMaxTokens
	}
	conv := r.Conversation
	if conv == nil {
		conv = []any{}
	}
	b := map[string]any{"messages": conv, "inferenceConfig": map[string]any{"maxTokens": max}}
	if len(r.Tools) > 0 {
		tools := make([]any, len(r.Tools))
		for i, t := range r.Tools {
			tools[i] = t
		}
		b["toolConfig"] = map[string]any{"tools": tools}
	}
	return b
}

// turn reads a response as the assistant's turn. It gives output.message
// as it came, its text, and whether it stopped for tool use.
func turn(response map[string]any) (toolcall.Turn, error) {
	msg := object(object(response["output"])["message"])
	blocks, ok := msg["content"].([]any)
	if !ok {
		return toolcall.Turn{}, fmt.Errorf("bedrock: the response has no output message%s", apiError(response))
	}
	var text []string
	for _, b := range blocks {
		if t, ok := object(b)["text"].(string); ok {
			text = append(text, t)
		}
	}
	return toolcall.Turn{
		Items:   []any{map[string]any{"role": "assistant", "content": blocks}},
		Text:    strings.Join(text, "\n"),
		ToolUse: response["stopReason"] == "tool_use",
	}, nil
}

// answers are a turn's toolResult blocks in one user message.
func answers(results []map[string]any) []any {
	content := make([]any, len(results))
	for i, r := range results {
		content[i] = r
	}
	return []any{map[string]any{"role": "user", "content": content}}
}
