package bedrock

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// Reads ConverseStream's events. Over HTTP Bedrock frames them in AWS's
// binary event stream. Conduit reads each event as the AWS SDKs marshal
// it. That is one JSON object whose one key names the event. An example
// is {"contentBlockDelta": {"delta": {"toolUse": {"input": "..."}},
// "contentBlockIndex": 1}}. The objects come one per SSE data line, or
// one per line (JSON Lines). An SSE event named by its type may carry the
// bare payload. A toolUse block's call is complete at its
// contentBlockStop.

// streamEvents are the event types ConverseStream sends; the exceptions
// end the stream with their message.
var streamEvents = []string{"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata",
	"internalServerException", "modelStreamErrorException", "validationException", "throttlingException", "serviceUnavailableException"}

func (converse) Stream() driver.Stream { return &stream{blocks: map[int]*block{}} }

type stream struct {
	role   string
	blocks map[int]*block
	order  driver.CallOrder
	stop   map[string]any // messageStop's
	meta   map[string]any // metadata's usage and metrics
}

// block is one content block as the events build it.
type block struct {
	use       map[string]any // the toolUse start: toolUseId, name
	input     strings.Builder
	text      strings.Builder
	reasoning map[string]any
	slot      int
	open      bool
}

func (s *stream) Event(e driver.Event) (driver.Step, error) {
	var step driver.Step
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil || m == nil {
		return step, fmt.Errorf("bedrock: a stream event is not a JSON object: %.80q", e.Data)
	}
	typ, payload := "", map[string]any(nil)
	for _, t := range streamEvents {
		if v, ok := m[t]; ok {
			typ, payload = t, object(v)
			break
		}
	}
	if typ == "" && e.Name != "" {
		typ, payload = e.Name, m // the payload bare, named by the SSE event
	}
	if payload == nil {
		return step, fmt.Errorf("bedrock: a stream event of no known type: %.80q", e.Data)
	}
	switch typ {
	case "messageStart":
		s.role = str(payload["role"])
	case "contentBlockStart":
		i, ok := blockIndex(payload)
		if !ok {
			return step, fmt.Errorf("bedrock: contentBlockStart has no contentBlockIndex")
		}
		if _, dup := s.blocks[i]; dup {
			return step, fmt.Errorf("bedrock: content block %d started twice", i)
		}
		b := &block{slot: -1, open: true}
		if use := object(object(payload["start"])["toolUse"]); use != nil {
			b.use = use
			b.slot = s.order.Begin(str(use["toolUseId"]), str(use["name"]))
		}
		s.blocks[i] = b
	case "contentBlockDelta":
		i, ok := blockIndex(payload)
		if !ok {
			return step, fmt.Errorf("bedrock: contentBlockDelta has no contentBlockIndex")
		}
		b := s.blocks[i]
		if b == nil {
			// A text block begins with its first delta, without a start.
			b = &block{slot: -1, open: true}
			s.blocks[i] = b
		}
		if !b.open {
			return step, fmt.Errorf("bedrock: contentBlockDelta for content block %d after its contentBlockStop", i)
		}
		d := object(payload["delta"])
		if t, ok := d["text"].(string); ok {
			b.text.WriteString(t)
			step.Text = t
		}
		if use := object(d["toolUse"]); use != nil {
			if b.use == nil {
				return step, fmt.Errorf("bedrock: a toolUse delta for content block %d, which is not a toolUse", i)
			}
			b.input.WriteString(str(use["input"]))
		}
		if r := object(d["reasoningContent"]); r != nil {
			if b.reasoning == nil {
				b.reasoning = map[string]any{}
			}
			for k, v := range r {
				if t, ok := v.(string); ok && k == "text" {
					v = str(b.reasoning["text"]) + t
				}
				b.reasoning[k] = v
			}
		}
	case "contentBlockStop":
		i, ok := blockIndex(payload)
		b := s.blocks[i]
		if !ok || b == nil || !b.open {
			return step, fmt.Errorf("bedrock: contentBlockStop names no open content block")
		}
		b.open = false
		if b.slot >= 0 {
			step.Calls = s.order.Complete(b.slot, b.call())
		}
	case "messageStop":
		s.stop = payload
		step.Done = true
	case "metadata":
		s.meta = payload
	default:
		return step, fmt.Errorf("bedrock: the stream reported %s%s", typ, apiError(payload))
	}
	return step, nil
}

func blockIndex(m map[string]any) (int, bool) {
	f, ok := m["contentBlockIndex"].(float64)
	if !ok || f < 0 || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

// content is the block as the whole response holds it. A toolUse input
// that is not JSON is kept as its text, which the call refuses.
func (b *block) content() map[string]any {
	switch {
	case b.use != nil:
		use := map[string]any{"toolUseId": b.use["toolUseId"], "name": b.use["name"]}
		var v any = map[string]any{}
		if b.input.Len() > 0 {
			if err := json.Unmarshal([]byte(b.input.String()), &v); err != nil {
				v = b.input.String()
			}
		}
		use["input"] = v
		return map[string]any{"toolUse": use}
	case b.reasoning != nil:
		return map[string]any{"reasoningContent": map[string]any{"reasoningText": b.reasoning}}
	}
	return map[string]any{"text": b.text.String()}
}

// call is the toolUse block's call, as Parse reads it.
func (b *block) call() toolcall.Raw {
	raws, err := converse{}.Parse(map[string]any{"output": map[string]any{"message": map[string]any{"role": "assistant", "content": []any{b.content()}}}})
	if err != nil || len(raws) != 1 {
		return toolcall.Raw{ID: str(b.use["toolUseId"]), Name: str(b.use["name"]), Err: fmt.Errorf("the toolUse block cannot be read")}
	}
	r := raws[0]
	if b.input.Len() > 0 && !json.Valid([]byte(b.input.String())) {
		r.Args = json.RawMessage(b.input.String())
	}
	return r
}

func (s *stream) Response() map[string]any {
	keys := slices.Sorted(maps.Keys(s.blocks))
	content := make([]any, 0, len(keys))
	for _, i := range keys {
		content = append(content, s.blocks[i].content())
	}
	role := s.role
	if role == "" {
		role = "assistant"
	}
	out := map[string]any{"output": map[string]any{"message": map[string]any{"role": role, "content": content}}}
	if s.stop != nil {
		out["stopReason"] = s.stop["stopReason"]
		if f, ok := s.stop["additionalModelResponseFields"]; ok {
			out["additionalModelResponseFields"] = f
		}
	}
	for k, v := range s.meta {
		out[k] = v // usage, metrics
	}
	return out
}

func (s *stream) Open() []toolcall.Raw { return s.order.Open() }

// streamRequest asks for the streamed response: ConverseStream, at
// converse-stream. Its events come in AWS's binary event stream
// (application/vnd.amazon.eventstream). Each is a message whose
// :event-type header names it. Its payload is the bare event.
func streamRequest(url string, _ map[string]any) string {
	return strings.TrimSuffix(url, "/converse") + "/converse-stream"
}
