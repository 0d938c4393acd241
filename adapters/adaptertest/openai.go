package adaptertest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// chatFake fakes Chat Completions.
type chatFake struct{}

func (chatFake) Response(text string, calls ...toolcall.Raw) map[string]any {
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

func (chatFake) Conversation(request map[string]any) []any { return jsonv.List(request["messages"]) }

// Answered reads the trailing tool messages.
func (chatFake) Answered(conversation []any) []Answered {
	return trailing(conversation, func(m map[string]any) (string, string, bool) {
		return jsonv.String(m["tool_call_id"]), jsonv.String(m["content"]), m["role"] == "tool"
	})
}

// responsesFake fakes the Responses API.
type responsesFake struct{}

func (responsesFake) Response(text string, calls ...toolcall.Raw) map[string]any {
	out := []any{}
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
	return map[string]any{"id": "resp_fake", "object": "response", "status": "completed", "output": out}
}

func (responsesFake) Conversation(request map[string]any) []any { return jsonv.List(request["input"]) }

// Answered reads the trailing function_call_output items. An output that
// is a list reads as its first item's text.
func (responsesFake) Answered(conversation []any) []Answered {
	return trailing(conversation, func(m map[string]any) (string, string, bool) {
		text := jsonv.String(m["output"])
		var texts []string
		for _, it := range jsonv.List(m["output"]) {
			if it := jsonv.Object(it); it["type"] == "input_text" {
				texts = append(texts, jsonv.String(it["text"]))
			}
		}
		if len(texts) > 0 {
			text = strings.Join(texts, "\n")
		}
		return jsonv.String(m["call_id"]), text, m["type"] == "function_call_output"
	})
}

// trailing reads the answers that end a conversation. answer recognizes
// each and reads it as its call's id and text. OpenAI has no error flag.
// An answer is a failure when its text starts with
// toolcall.DefaultErrorPrefix. The prefix is without its space when the
// text is that alone, before an image.
func trailing(conversation []any, answer func(map[string]any) (id, text string, ok bool)) []Answered {
	var out []Answered
	for i := len(conversation) - 1; i >= 0; i-- {
		id, text, ok := answer(jsonv.Object(conversation[i]))
		if !ok {
			break
		}
		failed := strings.HasPrefix(text, toolcall.DefaultErrorPrefix) || text == strings.TrimSpace(toolcall.DefaultErrorPrefix)
		out = append([]Answered{{ID: id, Error: failed, Text: text}}, out...)
	}
	return out
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
