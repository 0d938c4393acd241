package adaptertest

import (
	"strings"

	"github.com/conduitmcp/conduit/adapters/internal/render"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// bedrockFake fakes Bedrock's Converse API.
type bedrockFake struct{}

func (bedrockFake) Response(text string, calls ...toolcall.Raw) map[string]any {
	content := []any{}
	if text != "" {
		content = append(content, map[string]any{"text": text})
	}
	for _, c := range calls {
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name, "input": c.Args}})
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	return map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": stop,
		"usage":      map[string]any{"inputTokens": 30, "outputTokens": 20, "totalTokens": 50},
		"metrics":    map[string]any{"latencyMs": 420},
	}
}

func (bedrockFake) Conversation(request map[string]any) []any {
	return jsonv.List(request["messages"])
}

// Answered reads the toolResult blocks of the last message, when it is a
// user message. "status": "error" reports a failure.
func (bedrockFake) Answered(conversation []any) []Answered {
	var out []Answered
	for _, b := range render.LastOf(conversation, "user", "content") {
		tr := jsonv.Object(jsonv.Object(b)["toolResult"])
		if tr == nil {
			continue
		}
		var texts []string
		for _, c := range jsonv.List(tr["content"]) {
			if t, ok := jsonv.Object(c)["text"].(string); ok {
				texts = append(texts, t)
			}
		}
		out = append(out, Answered{ID: jsonv.String(tr["toolUseId"]), Error: tr["status"] == "error", Text: strings.Join(texts, "\n")})
	}
	return out
}
