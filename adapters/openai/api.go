package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// The two APIs over HTTP, for loops that send their own requests (conduit
// sends none): where a request goes, how it is authenticated and built,
// and how a response and its answers join the conversation.

const (
	// BaseURL is the public API's base URL, with its version.
	BaseURL = "https://api.openai.com/v1"
	// KeyEnv is the environment variable that conventionally holds the
	// API key.
	KeyEnv = "OPENAI_API_KEY"
)

// Endpoint returns the URL of the API under base.
func (api API) Endpoint(base, _ string) string {
	base = strings.TrimRight(base, "/")
	if api == Responses {
		return base + "/responses"
	}
	return base + "/chat/completions"
}

// Authorize sets the bearer token that carries the key, when there is one.
func Authorize(h http.Header, key string) {
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}

// Prompt is a user message of text (a Chat message, or a Responses input
// item).
func (api API) Prompt(text string) map[string]any {
	return map[string]any{"role": "user", "content": text}
}

// Request is a request body: Chat "messages" or Responses "input", and the
// tools, left out when there are none (OpenAI rejects an empty list).
func (api API) Request(r toolcall.Request) map[string]any {
	key := "messages"
	if api == Responses {
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

// Conversation returns the messages (Chat) or input items (Responses) of
// a request body.
func (api API) Conversation(request map[string]any) []any {
	if api == Responses {
		return jsonv.List(request["input"])
	}
	return jsonv.List(request["messages"])
}

// Turn reads a response as the model's turn: for Chat, the first choice's
// message; for Responses, every output item (reasoning items included,
// which the API wants back); its text; and whether it called functions.
func (api API) Turn(response map[string]any) (toolcall.Turn, error) {
	if e := jsonv.Object(response["error"]); e != nil && jsonv.String(e["message"]) != "" {
		return toolcall.Turn{}, fmt.Errorf("openai: the API answered an error: %v", e["message"])
	}
	if api == Responses {
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

// Answers are a turn's tool messages (Chat) or function_call_output items
// (Responses) as they join the conversation: each on its own, in order.
func (api API) Answers(results []map[string]any) []any {
	out := make([]any, len(results))
	for i, r := range results {
		out[i] = r
	}
	return out
}

// Answered returns the answers that end a conversation: its trailing tool
// messages or function_call_output items. An answer is a failure when its
// text starts with toolcall.DefaultErrorPrefix.
func (api API) Answered(conversation []any) []toolcall.Answered {
	var out []toolcall.Answered
	for i := len(conversation) - 1; i >= 0; i-- {
		m := jsonv.Object(conversation[i])
		var a toolcall.Answered
		var text string
		switch {
		case api == Chat && m["role"] == "tool":
			a.ID, text = jsonv.String(m["tool_call_id"]), jsonv.String(m["content"])
		case api == Responses && m["type"] == "function_call_output":
			a.ID, text = jsonv.String(m["call_id"]), jsonv.String(m["output"])
			if items := jsonv.List(m["output"]); len(items) > 0 {
				text = jsonv.String(jsonv.Object(items[0])["text"])
			}
		default:
			return out
		}
		a.Error = strings.HasPrefix(text, toolcall.DefaultErrorPrefix)
		out = append([]toolcall.Answered{a}, out...)
	}
	return out
}

// Response is a response in which the model says text and calls
// functions, in order, as the API would send it (arguments as JSON
// strings): for fakes of the API in tests.
func (api API) Response(text string, calls ...toolcall.Raw) map[string]any {
	if api == Responses {
		var out []any
		if len(calls) > 0 {
			// A reasoning model's output starts with its reasoning.
			out = append(out, map[string]any{"type": "reasoning", "id": "rs_fake", "summary": []any{}})
		}
		if text != "" {
			out = append(out, map[string]any{"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}})
		}
		for i, c := range calls {
			fc := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", i), "call_id": c.ID,
				"name": c.Name, "arguments": argsText(c.Args), "status": "completed"}
			if c.Namespace != "" {
				fc["namespace"] = c.Namespace
			}
			out = append(out, fc)
		}
		if out == nil {
			out = []any{}
		}
		return map[string]any{"id": "resp_fake", "object": "response", "status": "completed", "output": out}
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if text != "" {
		msg["content"] = text
	}
	finish := "stop"
	if len(calls) > 0 {
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": argsText(c.Args)}})
		}
		msg["tool_calls"], finish = tcs, "tool_calls"
	}
	return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "choices": []any{map[string]any{
		"index": 0, "finish_reason": finish, "message": msg}}}
}

// argsText is arguments as the APIs send them: a JSON string.
func argsText(v any) string {
	switch a := v.(type) {
	case json.RawMessage:
		return string(a)
	case string:
		return a
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(data)
}
