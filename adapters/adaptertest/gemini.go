package adaptertest

import (
	"encoding/json"

	"github.com/conduitmcp/conduit/adapters/internal/render"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// geminiFake fakes generateContent.
type geminiFake struct{}

func (geminiFake) Response(text string, calls ...toolcall.Raw) map[string]any {
	parts := []any{}
	if text != "" {
		parts = append(parts, map[string]any{"text": text})
	}
	for _, c := range calls {
		fc := map[string]any{"name": c.Name, "args": c.Args}
		if c.ID != "" {
			fc["id"] = c.ID
		}
		parts = append(parts, map[string]any{"functionCall": fc})
	}
	return map[string]any{"candidates": []any{map[string]any{
		"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}}}
}

func (geminiFake) Conversation(request map[string]any) []any { return jsonv.List(request["contents"]) }

// Answered reads the functionResponse parts of the last content, when it
// is the user's. An answer without an id reads as its function's name.
func (geminiFake) Answered(conversation []any) []Answered {
	var out []Answered
	for _, p := range render.LastOf(conversation, "user", "parts") {
		fr := jsonv.Object(jsonv.Object(p)["functionResponse"])
		if fr == nil {
			continue
		}
		id := jsonv.String(fr["id"])
		if id == "" {
			id = jsonv.String(fr["name"])
		}
		resp := jsonv.Object(fr["response"])
		a := Answered{ID: id, Error: resp["error"] != nil, Text: jsonv.String(resp["error"])}
		if !a.Error {
			a.Text = jsonv.String(resp["output"])
			if _, isText := resp["output"].(string); !isText {
				data, _ := json.Marshal(resp["output"])
				a.Text = string(data)
			}
			if n := jsonv.String(resp["notice"]); n != "" {
				a.Text += "\n" + n
			}
		}
		out = append(out, a)
	}
	return out
}
