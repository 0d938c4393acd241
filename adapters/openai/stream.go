package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// Reads the two APIs' streamed responses (stream: true). Chat streams
// chat.completion.chunk objects. Their tool_calls deltas build each call
// by its index. A call is complete when a later index begins or the choice
// finishes. Responses streams typed events. A function_call item is
// complete at its response.output_item.done.

func (f functions) Stream() driver.Stream {
	if f.api == responsesAPI {
		return &responsesStream{items: map[int]*item{}}
	}
	return &chatStream{}
}

// decodeEvent decodes an event's data, which must be a JSON object.
func decodeEvent(e driver.Event) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil || m == nil {
		return nil, fmt.Errorf("openai: a stream event is not a JSON object: %.80q", e.Data)
	}
	if e := jsonv.Object(m["error"]); e != nil && (jsonv.String(e["message"]) != "" || jsonv.String(e["code"]) != "") {
		return nil, fmt.Errorf("openai: the stream reported an error: %v", e["message"])
	}
	return m, nil
}

type chatStream struct {
	head    map[string]any // id, created, model, usage, ... of the chunks
	role    string
	text    strings.Builder
	refusal strings.Builder
	calls   []*chatCall
	order   driver.CallOrder
	// released counts the calls complete, in index order.
	released int
	finish   any
}

type chatCall struct {
	id, typ string
	name    strings.Builder
	args    strings.Builder
}

func (s *chatStream) Event(e driver.Event) (driver.Step, error) {
	var step driver.Step
	if bytes.Equal(bytes.TrimSpace(e.Data), []byte("[DONE]")) {
		step.Calls = s.complete(len(s.calls))
		step.Done = true
		return step, nil
	}
	m, err := decodeEvent(e)
	if err != nil {
		return step, err
	}
	if s.head == nil {
		s.head = map[string]any{}
	}
	for _, k := range []string{"id", "created", "model", "system_fingerprint", "service_tier", "usage"} {
		if v, ok := m[k]; ok && v != nil {
			s.head[k] = v
		}
	}
	for _, c := range jsonv.List(m["choices"]) {
		ch := jsonv.Object(c)
		if n, _ := ch["index"].(float64); n != 0 {
			continue // conduit answers the first choice, as Parse reads
		}
		d := jsonv.Object(ch["delta"])
		if r := jsonv.String(d["role"]); r != "" {
			s.role = r
		}
		if t := jsonv.String(d["content"]); t != "" {
			s.text.WriteString(t)
			step.Text += t
		}
		s.refusal.WriteString(jsonv.String(d["refusal"]))
		for _, v := range jsonv.List(d["tool_calls"]) {
			tc := jsonv.Object(v)
			i, ok := jsonv.Index(tc["index"])
			if !ok || i > len(s.calls) {
				return step, fmt.Errorf("openai: a tool_calls delta has index %v; the next is %d", tc["index"], len(s.calls))
			}
			if i < s.released {
				return step, fmt.Errorf("openai: a tool_calls delta for call %d after a later call began", i)
			}
			if i == len(s.calls) {
				// A new call completes those before it: Chat streams one
				// call's arguments whole before the next begins.
				step.Calls = append(step.Calls, s.complete(i)...)
				s.calls = append(s.calls, &chatCall{})
				s.order.Begin("", "")
			}
			cc := s.calls[i]
			if id := jsonv.String(tc["id"]); id != "" {
				cc.id = id
			}
			if t := jsonv.String(tc["type"]); t != "" {
				cc.typ = t
			}
			fn := jsonv.Object(tc["function"])
			cc.name.WriteString(jsonv.String(fn["name"]))
			cc.args.WriteString(jsonv.String(fn["arguments"]))
		}
		if fr, ok := ch["finish_reason"]; ok && fr != nil {
			s.finish = fr
			step.Calls = append(step.Calls, s.complete(len(s.calls))...)
		}
	}
	return step, nil
}

// complete releases the calls before index n.
func (s *chatStream) complete(n int) []toolcall.Raw {
	var out []toolcall.Raw
	for ; s.released < n; s.released++ {
		out = append(out, s.order.Complete(s.released, s.raw(s.released))...)
	}
	return out
}

// raw is call i as Parse reads it from the whole response.
func (s *chatStream) raw(i int) toolcall.Raw {
	raws, err := parseChat(map[string]any{"role": "assistant", "tool_calls": []any{s.calls[i].message()}})
	if err != nil || len(raws) != 1 {
		return toolcall.Raw{ID: s.calls[i].id, Name: s.calls[i].name.String(), Err: fmt.Errorf("the tool call cannot be read")}
	}
	return raws[0]
}

func (c *chatCall) message() map[string]any {
	typ := c.typ
	if typ == "" {
		typ = "function"
	}
	return map[string]any{"id": c.id, "type": typ, "function": map[string]any{"name": c.name.String(), "arguments": c.args.String()}}
}

func (s *chatStream) Response() map[string]any {
	out := map[string]any{"object": "chat.completion"}
	for k, v := range s.head {
		out[k] = v
	}
	role := s.role
	if role == "" {
		role = "assistant"
	}
	msg := map[string]any{"role": role, "content": nil}
	if s.text.Len() > 0 {
		msg["content"] = s.text.String()
	}
	if s.refusal.Len() > 0 {
		msg["refusal"] = s.refusal.String()
	}
	if len(s.calls) > 0 {
		calls := make([]any, len(s.calls))
		for i, c := range s.calls {
			calls[i] = c.message()
		}
		msg["tool_calls"] = calls
	}
	out["choices"] = []any{map[string]any{"index": 0, "message": msg, "finish_reason": s.finish}}
	return out
}

func (s *chatStream) Open() []toolcall.Raw {
	open := s.order.Open()
	for k := range open {
		c := s.calls[s.released+k]
		open[k].ID, open[k].Name = c.id, c.name.String()
	}
	return open
}

type responsesStream struct {
	response map[string]any // response.created's, then response.completed's
	items    map[int]*item
	order    driver.CallOrder
	final    bool
}

// item is one output item as the events build it.
type item struct {
	m    map[string]any
	args strings.Builder
	slot int
	done bool
}

func (s *responsesStream) Event(e driver.Event) (driver.Step, error) {
	var step driver.Step
	m, err := decodeEvent(e)
	if err != nil {
		return step, err
	}
	typ := jsonv.String(m["type"])
	if typ == "" {
		typ = e.Name
	}
	switch typ {
	case "response.created", "response.in_progress":
		if r := jsonv.Object(m["response"]); r != nil && !s.final {
			s.response = r
		}
	case "response.output_item.added":
		i, ok := jsonv.Index(m["output_index"])
		it := jsonv.Object(m["item"])
		if !ok || it == nil {
			return step, fmt.Errorf("openai: %s has no output_index or item", typ)
		}
		if _, dup := s.items[i]; dup {
			return step, fmt.Errorf("openai: output item %d added twice", i)
		}
		x := &item{m: it, slot: -1}
		if it["type"] == "function_call" {
			x.slot = s.order.Begin(jsonv.String(it["call_id"]), jsonv.String(it["name"]))
		}
		s.items[i] = x
	case "response.function_call_arguments.delta":
		x, err := s.item(m, typ)
		if err != nil {
			return step, err
		}
		x.args.WriteString(jsonv.String(m["delta"]))
	case "response.function_call_arguments.done":
		x, err := s.item(m, typ)
		if err != nil {
			return step, err
		}
		if a, ok := m["arguments"].(string); ok {
			x.args.Reset()
			x.args.WriteString(a)
		}
	case "response.output_text.delta":
		step.Text = jsonv.String(m["delta"])
	case "response.output_item.done":
		i, ok := jsonv.Index(m["output_index"])
		it := jsonv.Object(m["item"])
		x := s.items[i]
		if !ok || it == nil {
			return step, fmt.Errorf("openai: %s has no output_index or item", typ)
		}
		if x == nil {
			x = &item{slot: -1}
			if it["type"] == "function_call" {
				x.slot = s.order.Begin(jsonv.String(it["call_id"]), jsonv.String(it["name"]))
			}
			s.items[i] = x
		}
		if x.done {
			return step, fmt.Errorf("openai: output item %d done twice", i)
		}
		x.m, x.done = it, true
		x.args.Reset()
		if x.slot >= 0 {
			step.Calls = s.order.Complete(x.slot, responsesRaw(it))
		}
	case "response.completed", "response.incomplete":
		if r := jsonv.Object(m["response"]); r != nil {
			s.response, s.final = r, true
		}
		step.Done = true
	case "response.failed":
		r := jsonv.Object(m["response"])
		e := jsonv.Object(r["error"])
		return step, fmt.Errorf("openai: the response failed: %v: %v", e["code"], e["message"])
	case "error":
		return step, fmt.Errorf("openai: the stream reported an error: %v: %v", m["code"], m["message"])
	}
	return step, nil
}

// item returns the item an arguments event names, by output_index.
func (s *responsesStream) item(m map[string]any, typ string) (*item, error) {
	i, ok := jsonv.Index(m["output_index"])
	x := s.items[i]
	if !ok || x == nil {
		return nil, fmt.Errorf("openai: %s names no added output item", typ)
	}
	if x.done {
		return nil, fmt.Errorf("openai: %s for output item %d after it was done", typ, i)
	}
	return x, nil
}

// responsesRaw is a function_call item's call, as Parse reads it.
func responsesRaw(it map[string]any) toolcall.Raw {
	raws, err := parseResponses(map[string]any{"output": []any{it}})
	if err != nil || len(raws) != 1 {
		return toolcall.Raw{ID: jsonv.String(it["call_id"]), Name: jsonv.String(it["name"]), Err: fmt.Errorf("the function call cannot be read")}
	}
	return raws[0]
}

func (x *item) output() map[string]any {
	if x.done || x.m["type"] != "function_call" {
		return x.m
	}
	out := make(map[string]any, len(x.m))
	maps.Copy(out, x.m)
	out["arguments"] = x.args.String()
	return out
}

func (s *responsesStream) Response() map[string]any {
	out := map[string]any{"object": "response"}
	maps.Copy(out, s.response)
	if s.final {
		if _, ok := out["output"].([]any); ok {
			return out
		}
	}
	keys := slices.Sorted(maps.Keys(s.items))
	output := make([]any, 0, len(keys))
	for _, i := range keys {
		output = append(output, s.items[i].output())
	}
	out["output"] = output
	return out
}

func (s *responsesStream) Open() []toolcall.Raw { return s.order.Open() }

// streamRequest asks for the streamed response: "stream": true.
func streamRequest(url string, body map[string]any) string {
	body["stream"] = true
	return url
}
