package adaptertest

// Streamed responses as each built-in provider's API streams them, for
// tests and benchmarks of streamed input.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// StreamOf returns a streamed response of the built-in provider named, as
// adapters.Provider.String names it. In it the model says text and makes
// calls, in order, as the API streams it. It is server-sent events. Each
// call's arguments come in two deltas where the API sends deltas. It is in
// parts:
//
//   - The first holds the head and the text.
//   - Part k (from 1) ends with the event that completes call k-1.
//   - The last ends the stream.
//
// A call's Args are JSON text (a string or json.RawMessage), or a value
// to encode. Bedrock's events are one JSON object per SSE data line.
func StreamOf(provider, text string, calls ...toolcall.Raw) ([][]byte, error) {
	w := &sseWriter{}
	args := make([]string, len(calls))
	for i, c := range calls {
		switch a := c.Args.(type) {
		case string:
			args[i] = a
		case json.RawMessage:
			args[i] = string(a)
		default:
			b, err := json.Marshal(a)
			if err != nil {
				return nil, err
			}
			args[i] = string(b)
		}
	}
	half := func(s string) (string, string) { return s[:len(s)/2], s[len(s)/2:] }
	words := strings.SplitAfter(text, " ")
	switch provider {
	case "anthropic":
		w.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_01", "type": "message", "role": "assistant",
			"model": "claude-sonnet-4-5", "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 472, "output_tokens": 2}}})
		w.event("ping", map[string]any{"type": "ping"})
		first := 0 // the first tool_use block's index
		if text != "" {
			w.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, t := range words {
				w.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": t}})
			}
			w.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
			first = 1
		}
		w.head()
		for i, c := range calls {
			w.event("content_block_start", map[string]any{"type": "content_block_start", "index": first + i, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
			a, b := half(args[i])
			for _, part := range []string{"", a, b} {
				w.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": first + i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
			w.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": first + i})
			w.cut()
		}
		stop := "end_turn"
		if len(calls) > 0 {
			stop = "tool_use"
		}
		w.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 89}})
		w.event("message_stop", map[string]any{"type": "message_stop"})
	case "openai-chat":
		chunk := func(delta map[string]any, finish any) map[string]any {
			return map[string]any{"id": "chatcmpl-123", "object": "chat.completion.chunk", "created": 1694268190, "model": "gpt-4.1-2025-04-14",
				"system_fingerprint": "fp_44709d6fcb", "choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		}
		w.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
		for _, t := range words {
			if t != "" {
				w.event("", chunk(map[string]any{"content": t}, nil))
			}
		}
		w.head()
		for i, c := range calls {
			w.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
			if i > 0 {
				// This first delta of the next call completes the one before.
				w.cut()
			}
			a, b := half(args[i])
			for _, part := range []string{a, b} {
				w.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": part}}}}, nil))
			}
		}
		finish := "stop"
		if len(calls) > 0 {
			finish = "tool_calls"
		}
		w.event("", chunk(map[string]any{}, finish))
		if len(calls) > 0 {
			w.cut()
		}
		w.raw("[DONE]")
	case "openai-responses":
		resp := func(status string, output []any) map[string]any {
			return map[string]any{"id": "resp_123", "object": "response", "created_at": 1741476542, "status": status, "model": "gpt-4.1-2025-04-14", "output": output}
		}
		w.event("response.created", map[string]any{"type": "response.created", "sequence_number": 0, "response": resp("in_progress", []any{})})
		var output []any
		n := 0
		if len(calls) > 0 {
			// A reasoning model's output starts with its reasoning.
			rs := map[string]any{"id": "rs_1", "type": "reasoning", "summary": []any{}}
			w.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": n, "item": rs})
			w.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": n, "item": rs})
			output = append(output, rs)
			n++
		}
		if text != "" {
			msg := map[string]any{"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}
			w.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": n, "item": msg})
			for _, t := range words {
				w.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": n, "content_index": 0, "delta": t})
			}
			done := map[string]any{"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
			w.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": n, "item": done})
			output = append(output, done)
			n++
		}
		w.head()
		for i, c := range calls {
			id := fmt.Sprintf("fc_%d", i)
			w.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": n + i,
				"item": map[string]any{"id": id, "type": "function_call", "status": "in_progress", "call_id": c.ID, "name": c.Name, "arguments": ""}})
			a, b := half(args[i])
			for _, part := range []string{a, b} {
				w.event("response.function_call_arguments.delta", map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": n + i, "delta": part})
			}
			w.event("response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done", "item_id": id, "output_index": n + i, "arguments": args[i]})
			item := map[string]any{"id": id, "type": "function_call", "status": "completed", "call_id": c.ID, "name": c.Name, "arguments": args[i]}
			w.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": n + i, "item": item})
			output = append(output, item)
			w.cut()
		}
		w.event("response.completed", map[string]any{"type": "response.completed", "response": resp("completed", output)})
	case "gemini":
		chunk := func(parts []any, finish string) map[string]any {
			cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
			if finish != "" {
				cand["finishReason"] = finish
			}
			return map[string]any{"candidates": []any{cand}, "usageMetadata": map[string]any{"promptTokenCount": 121, "totalTokenCount": 140}, "modelVersion": "gemini-2.5-flash"}
		}
		for _, t := range words {
			if t != "" {
				w.event("", chunk([]any{map[string]any{"text": t}}, ""))
			}
		}
		w.head()
		for i, c := range calls {
			var v any
			if err := json.Unmarshal([]byte(args[i]), &v); err != nil {
				return nil, fmt.Errorf("gemini sends arguments as an object: %w", err)
			}
			fc := map[string]any{"name": c.Name, "args": v}
			if c.ID != "" {
				fc["id"] = c.ID
			}
			finish := ""
			if i == len(calls)-1 {
				finish = "STOP"
			}
			w.event("", chunk([]any{map[string]any{"functionCall": fc}}, finish))
			if finish == "" {
				w.cut()
			}
		}
		if len(calls) == 0 {
			w.event("", chunk([]any{map[string]any{"text": ""}}, "STOP"))
		}
	case "bedrock":
		w.event("", map[string]any{"messageStart": map[string]any{"role": "assistant"}})
		first := 0
		if text != "" {
			for _, t := range words {
				if t != "" {
					w.event("", map[string]any{"contentBlockDelta": map[string]any{"delta": map[string]any{"text": t}, "contentBlockIndex": 0}})
				}
			}
			w.event("", map[string]any{"contentBlockStop": map[string]any{"contentBlockIndex": 0}})
			first = 1
		}
		w.head()
		for i, c := range calls {
			w.event("", map[string]any{"contentBlockStart": map[string]any{"start": map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name}}, "contentBlockIndex": first + i}})
			a, b := half(args[i])
			for _, part := range []string{a, b} {
				w.event("", map[string]any{"contentBlockDelta": map[string]any{"delta": map[string]any{"toolUse": map[string]any{"input": part}}, "contentBlockIndex": first + i}})
			}
			w.event("", map[string]any{"contentBlockStop": map[string]any{"contentBlockIndex": first + i}})
			w.cut()
		}
		stop := "end_turn"
		if len(calls) > 0 {
			stop = "tool_use"
		}
		w.event("", map[string]any{"messageStop": map[string]any{"stopReason": stop}})
		w.event("", map[string]any{"metadata": map[string]any{"usage": map[string]any{"inputTokens": 223, "outputTokens": 71, "totalTokens": 294}, "metrics": map[string]any{"latencyMs": 1590}}})
	default:
		return nil, fmt.Errorf("adaptertest: no stream for provider %q", provider)
	}
	w.cut()
	return w.parts, nil
}

// sseWriter writes events into parts.
type sseWriter struct {
	parts [][]byte
	cur   []byte
}

func (w *sseWriter) event(name string, v any) {
	b, _ := json.Marshal(v)
	if name != "" {
		w.cur = append(w.cur, "event: "+name+"\n"...)
	}
	w.cur = append(w.cur, "data: "...)
	w.cur = append(w.cur, b...)
	w.cur = append(w.cur, "\n\n"...)
}

func (w *sseWriter) raw(data string) {
	w.cur = append(w.cur, "data: "+data+"\n\n"...)
}

// head ends the first part, empty or not.
func (w *sseWriter) head() {
	w.parts = append(w.parts, w.cur)
	w.cur = nil
}

// cut ends a part after the last event.
func (w *sseWriter) cut() {
	if len(w.cur) > 0 {
		w.parts = append(w.parts, w.cur)
		w.cur = nil
	}
}
