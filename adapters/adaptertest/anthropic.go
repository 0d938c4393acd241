package adaptertest

import (
	"strings"

	"github.com/conduitmcp/conduit/adapters/internal/render"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// anthropicFake fakes the Messages API.
type anthropicFake struct{}

func (anthropicFake) Response(text string, calls ...toolcall.Raw) map[string]any {
	content := []any{}
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	for _, c := range calls {
		content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Args})
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	return message(content, stop)
}

// Paused is a turn of the tool search tool that the API paused. Its
// server_tool_use block, without a result, ends the content.
func (anthropicFake) Paused(text string) map[string]any {
	content := []any{}
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	content = append(content, map[string]any{"type": "server_tool_use", "id": "srvtoolu_fake",
		"name": "tool_search_tool_bm25", "input": map[string]any{"query": "weather"}})
	return message(content, "pause_turn")
}

func message(content []any, stop string) map[string]any {
	return map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
		"content": content, "stop_reason": stop}
}

func (anthropicFake) Conversation(request map[string]any) []any {
	return jsonv.List(request["messages"])
}

// Answered reads the tool_result blocks of the last message, when it is a
// user message.
func (anthropicFake) Answered(conversation []any) []Answered {
	var out []Answered
	for _, b := range render.LastOf(conversation, "user", "content") {
		blk := jsonv.Object(b)
		if blk["type"] == "tool_result" {
			var texts []string
			for _, c := range jsonv.List(blk["content"]) {
				if c := jsonv.Object(c); c["type"] == "text" {
					texts = append(texts, jsonv.String(c["text"]))
				}
			}
			out = append(out, Answered{ID: jsonv.String(blk["tool_use_id"]), Error: blk["is_error"] == true, Text: strings.Join(texts, "\n")})
		}
	}
	return out
}
