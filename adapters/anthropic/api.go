package anthropic

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// The Messages API over HTTP, for loops that send their own requests.
// Conduit sends none. Here are where a request goes, and how it is
// authenticated and built. Here is how a response and its answers join
// the conversation.

const (
	// baseURL is the public API's base URL, without a version, as the
	// Anthropic SDKs take it.
	baseURL = "https://api.anthropic.com"
	// keyEnv is the environment variable that conventionally holds the
	// API key.
	keyEnv = "ANTHROPIC_API_KEY"
	// version is the anthropic-version header sent with every request.
	version = "2023-06-01"
)

// endpoint returns the URL of the Messages API under base.
func endpoint(base, _ string) string { return strings.TrimRight(base, "/") + "/v1/messages" }

// authorize sets the headers a request needs. They are the key, when
// there is one, and the API version.
func authorize(h http.Header, key string) {
	if key != "" {
		h.Set("x-api-key", key)
	}
	h.Set("anthropic-version", version)
}

// prompt is a user message of text.
func prompt(text string) map[string]any {
	return map[string]any{"role": "user", "content": text}
}

// request is a Messages API request body; tools are left out when there
// are none.
func request(r toolcall.Request) map[string]any {
	max := r.MaxTokens
	if max <= 0 {
		max = toolcall.DefaultMaxTokens
	}
	b := map[string]any{"model": r.Model, "max_tokens": max, "messages": jsonv.NonNil(r.Conversation)}
	if len(r.Tools) > 0 {
		b["tools"] = r.Tools
	}
	return b
}

// stopPause is the stop_reason of a turn the API paused. With server tools
// the API runs a loop of its own. The tool search tool is among them. The
// API pauses a long turn, or one past that loop's limit of iterations.
// The documentation's remedy is to send the response back as it came. It
// goes as the last assistant message, for Claude to continue. See
// https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools,
// "Server-side loop and pause_turn". This is known from the documentation
// and the SDKs' types only, not from a live response.
const stopPause = "pause_turn"

// turn reads a response as the assistant's turn. It gives:
//
//   - its message, whose content is kept whole, server tool blocks
//     included, since the API wants them back as they were;
//   - its text;
//   - whether it stopped for tool use;
//   - whether the API paused it (stopPause), to be sent back to continue.
func turn(response map[string]any) (toolcall.Turn, error) {
	content, ok := response["content"].([]any)
	if !ok {
		return toolcall.Turn{}, fmt.Errorf("anthropic: the response has no content list%s", apiError(response))
	}
	var text []string
	for _, b := range content {
		if blk := jsonv.Object(b); blk["type"] == "text" {
			text = append(text, jsonv.String(blk["text"]))
		}
	}
	return toolcall.Turn{
		Items:   []any{map[string]any{"role": "assistant", "content": content}},
		Text:    strings.Join(text, "\n"),
		ToolUse: response["stop_reason"] == "tool_use",
		Paused:  response["stop_reason"] == stopPause,
	}, nil
}

// answers are a turn's tool_result blocks as they join the conversation:
// first in one user message.
func answers(results []map[string]any) []any {
	return []any{map[string]any{"role": "user", "content": anys(results)}}
}

func anys(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}
