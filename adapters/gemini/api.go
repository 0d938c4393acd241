package gemini

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// generateContent over HTTP, for loops that send their own requests.
// Conduit sends none. Here are where a request goes, and how it is
// authenticated and built. Here is how a response and its answers join
// the conversation.

const (
	// baseURL is the public API's base URL, with its version.
	baseURL = "https://generativelanguage.googleapis.com/v1beta"
	// keyEnv is the environment variable that conventionally holds the
	// API key.
	keyEnv = "GEMINI_API_KEY"
)

// endpoint returns the generateContent URL of model under base.
func endpoint(base, model string) string {
	return strings.TrimRight(base, "/") + "/models/" + model + ":generateContent"
}

// authorize sets the header that carries the key, when there is one.
func authorize(h http.Header, key string) {
	if key != "" {
		h.Set("x-goog-api-key", key)
	}
}

// prompt is a user content of text.
func prompt(text string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}}
}

// request is a generateContent request body. The model is in the URL. The
// declarations are wrapped as {"functionDeclarations": tools}.
func request(r toolcall.Request) map[string]any {
	b := map[string]any{"contents": jsonv.NonNil(r.Conversation)}
	if len(r.Tools) > 0 {
		b["tools"] = []any{map[string]any{"functionDeclarations": r.Tools}}
	}
	return b
}

// turn reads a response as the model's turn. It gives its first
// candidate's content, its text (thoughts left out), and whether it called
// functions.
func turn(response map[string]any) (toolcall.Turn, error) {
	cands := jsonv.List(response["candidates"])
	if len(cands) == 0 {
		if fb := jsonv.Object(response["promptFeedback"]); fb != nil {
			return toolcall.Turn{}, fmt.Errorf("gemini: the prompt was blocked: %v", fb["blockReason"])
		}
		if e := jsonv.Object(response["error"]); e != nil {
			return toolcall.Turn{}, fmt.Errorf("gemini: the API answered an error: %v: %v", e["status"], e["message"])
		}
		return toolcall.Turn{}, fmt.Errorf("gemini: the response has no candidates")
	}
	cand := jsonv.Object(cands[0])
	content := jsonv.Object(cand["content"])
	if content == nil {
		return toolcall.Turn{}, fmt.Errorf("gemini: the candidate has no content (finishReason %v)", cand["finishReason"])
	}
	var text []string
	calls := false
	for _, p := range jsonv.List(content["parts"]) {
		part := jsonv.Object(p)
		if part["functionCall"] != nil {
			calls = true
		} else if t, ok := part["text"].(string); ok && part["thought"] != true {
			text = append(text, t)
		}
	}
	return toolcall.Turn{Items: []any{content}, Text: strings.Join(text, ""), ToolUse: calls}, nil
}

// answers are a turn's functionResponse parts as they join the
// conversation: one user content.
func answers(results []map[string]any) []any {
	parts := make([]any, len(results))
	for i, r := range results {
		parts[i] = r
	}
	return []any{map[string]any{"role": "user", "parts": parts}}
}
