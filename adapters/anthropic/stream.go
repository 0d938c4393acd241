package anthropic

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// Reads the Messages API's streamed response (stream: true). Its events
// are message_start, content_block_start, content_block_delta,
// content_block_stop, message_delta and message_stop. A tool_use block's
// call is complete at its content_block_stop.

func (messages) Stream() driver.Stream { return &stream{blocks: map[int]*block{}} }

type stream struct {
	message map[string]any
	blocks  map[int]*block
	order   driver.CallOrder
}

// block is one content block as the events build it.
type block struct {
	m    map[string]any
	json strings.Builder // input_json_delta's partial_json, joined
	text strings.Builder // text_delta's text, or thinking_delta's
	slot int             // the call's slot, for a tool_use block
	open bool
}

func (s *stream) Event(e driver.Event) (driver.Step, error) {
	var step driver.Step
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil || m == nil {
		return step, fmt.Errorf("anthropic: a stream event is not a JSON object: %.80q", e.Data)
	}
	typ := jsonv.String(m["type"])
	if typ == "" {
		typ = e.Name
	}
	switch typ {
	case "message_start":
		msg := jsonv.Object(m["message"])
		if msg == nil {
			return step, fmt.Errorf("anthropic: message_start has no message")
		}
		s.message = msg
	case "content_block_start":
		i, ok := jsonv.Index(m["index"])
		cb := jsonv.Object(m["content_block"])
		if !ok || cb == nil {
			return step, fmt.Errorf("anthropic: content_block_start has no index or content_block")
		}
		if _, dup := s.blocks[i]; dup {
			return step, fmt.Errorf("anthropic: content block %d started twice", i)
		}
		b := &block{m: cb, open: true, slot: -1}
		if cb["type"] == "tool_use" {
			b.slot = s.order.Begin(jsonv.String(cb["id"]), jsonv.String(cb["name"]))
		}
		s.blocks[i] = b
	case "content_block_delta":
		b, err := s.block(m, typ)
		if err != nil {
			return step, err
		}
		d := jsonv.Object(m["delta"])
		switch d["type"] {
		case "input_json_delta":
			b.json.WriteString(jsonv.String(d["partial_json"]))
		case "text_delta":
			t := jsonv.String(d["text"])
			b.text.WriteString(t)
			step.Text = t
		case "thinking_delta":
			b.text.WriteString(jsonv.String(d["thinking"]))
		case "signature_delta":
			b.m["signature"] = d["signature"]
		case "citations_delta":
			b.m["citations"] = append(jsonv.List(b.m["citations"]), d["citation"])
		}
	case "content_block_stop":
		b, err := s.block(m, typ)
		if err != nil {
			return step, err
		}
		b.open = false
		if b.slot >= 0 {
			step.Calls = s.order.Complete(b.slot, callOf(b))
		}
	case "message_delta":
		if s.message == nil {
			s.message = map[string]any{}
		}
		for k, v := range jsonv.Object(m["delta"]) {
			s.message[k] = v
		}
		if u := jsonv.Object(m["usage"]); u != nil {
			// The counts so far, over message_start's.
			usage := map[string]any{}
			for k, v := range jsonv.Object(s.message["usage"]) {
				usage[k] = v
			}
			for k, v := range u {
				usage[k] = v
			}
			s.message["usage"] = usage
		}
	case "message_stop":
		step.Done = true
	case "error":
		return step, fmt.Errorf("anthropic: the stream reported an error%s", apiError(m))
	}
	// ping, and events added later, carry nothing conduit reads.
	return step, nil
}

// block returns the open block an event names.
func (s *stream) block(m map[string]any, typ string) (*block, error) {
	i, ok := jsonv.Index(m["index"])
	b := s.blocks[i]
	if !ok || b == nil {
		return nil, fmt.Errorf("anthropic: %s names no started content block", typ)
	}
	if !b.open {
		return nil, fmt.Errorf("anthropic: %s for content block %d after its content_block_stop", typ, i)
	}
	return b, nil
}

// content is the block as the whole response holds it.
func (b *block) content() map[string]any {
	out := make(map[string]any, len(b.m))
	maps.Copy(out, b.m)
	switch b.m["type"] {
	case "text":
		out["text"] = jsonv.String(b.m["text"]) + b.text.String()
	case "thinking":
		out["thinking"] = jsonv.String(b.m["thinking"]) + b.text.String()
	}
	if b.json.Len() > 0 {
		var v any
		if json.Unmarshal([]byte(b.json.String()), &v) == nil {
			out["input"] = v
		} else {
			out["input"] = b.json.String() // not JSON: refused as not an object
		}
	}
	return out
}

// callOf is the tool_use block's call, as Parse reads it.
func callOf(b *block) toolcall.Raw {
	raws, _ := parse(map[string]any{"content": []any{b.content()}})
	if len(raws) != 1 {
		return toolcall.Raw{ID: jsonv.String(b.m["id"]), Name: jsonv.String(b.m["name"]), Err: fmt.Errorf("the tool_use block cannot be read")}
	}
	r := raws[0]
	if b.json.Len() > 0 && !json.Valid([]byte(b.json.String())) {
		r.Args = json.RawMessage(b.json.String())
	}
	return r
}

func (s *stream) Response() map[string]any {
	out := map[string]any{"type": "message", "role": "assistant"}
	maps.Copy(out, s.message)
	keys := slices.Sorted(maps.Keys(s.blocks))
	content := make([]any, 0, len(keys))
	for _, i := range keys {
		content = append(content, s.blocks[i].content())
	}
	out["content"] = content
	return out
}

func (s *stream) Open() []toolcall.Raw { return s.order.Open() }

// streamRequest asks for the streamed response: "stream": true.
func streamRequest(url string, body map[string]any) string {
	body["stream"] = true
	return url
}
