package gemini

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// Reads streamGenerateContent's response as server-sent events (alt=sse).
// Each event is a GenerateContentResponse holding the next parts of the
// first candidate. Gemini sends a functionCall part whole. So each call is
// complete in the chunk that carries it.

func (generateContent) Stream() driver.Stream { return &stream{} }

type stream struct {
	last   map[string]any // the last chunk, for its usage and finish
	role   string
	parts  []any
	tail   strings.Builder // the plain text after parts, joined
	finish any
	extra  map[string]any // the candidate's other fields, last seen
}

func (s *stream) Event(e driver.Event) (driver.Step, error) {
	var step driver.Step
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil || m == nil {
		return step, fmt.Errorf("gemini: a stream event is not a JSON object: %.80q", e.Data)
	}
	if e := jsonv.Object(m["error"]); e != nil {
		return step, fmt.Errorf("gemini: the stream reported an error: %v: %v", e["status"], e["message"])
	}
	s.last = m
	cands := jsonv.List(m["candidates"])
	if len(cands) == 0 {
		return step, nil
	}
	cand := jsonv.Object(cands[0])
	if cand == nil {
		return step, fmt.Errorf("gemini: a stream chunk's candidate is not an object")
	}
	content := jsonv.Object(cand["content"])
	if r := jsonv.String(content["role"]); r != "" {
		s.role = r
	}
	parts, ok := content["parts"].([]any)
	if !ok && content["parts"] != nil {
		return step, fmt.Errorf("gemini: a stream chunk's \"parts\" is not a list")
	}
	for _, p := range parts {
		pm := jsonv.Object(p)
		if pm == nil {
			continue
		}
		if fc := jsonv.Object(pm["functionCall"]); fc != nil {
			raws, err := parse(map[string]any{"parts": []any{pm}})
			if err != nil || len(raws) != 1 {
				return step, fmt.Errorf("gemini: a functionCall part cannot be read")
			}
			step.Calls = append(step.Calls, raws...)
		}
		if t, ok := pm["text"].(string); ok && pm["thought"] != true {
			step.Text += t
		}
		s.add(pm)
	}
	if s.extra == nil {
		s.extra = map[string]any{}
	}
	for k, v := range cand {
		if k != "content" {
			s.extra[k] = v
		}
	}
	if fr, ok := cand["finishReason"]; ok && fr != nil {
		s.finish = fr
		step.Done = true
	}
	return step, nil
}

// add appends a part, joining a plain text part to the plain text before
// it. So the response holds the text as one part, as generateContent's
// does.
func (s *stream) add(p map[string]any) {
	if plainText(p) {
		s.tail.WriteString(jsonv.String(p["text"]))
		return
	}
	s.flush()
	s.parts = append(s.parts, p)
}

// flush ends the run of plain text as one part.
func (s *stream) flush() {
	if s.tail.Len() > 0 {
		s.parts = append(s.parts, map[string]any{"text": s.tail.String()})
		s.tail.Reset()
	}
}

func plainText(p map[string]any) bool {
	_, ok := p["text"].(string)
	return ok && len(p) == 1
}

func (s *stream) Response() map[string]any {
	out := map[string]any{}
	for k, v := range s.last {
		if k != "candidates" {
			out[k] = v
		}
	}
	role := s.role
	if role == "" {
		role = "model"
	}
	cand := map[string]any{}
	for k, v := range s.extra {
		cand[k] = v
	}
	parts := append([]any{}, s.parts...)
	if s.tail.Len() > 0 {
		parts = append(parts, map[string]any{"text": s.tail.String()})
	}
	cand["content"] = map[string]any{"role": role, "parts": parts}
	if s.finish != nil {
		cand["finishReason"] = s.finish
	}
	out["candidates"] = []any{cand}
	return out
}

// Open is empty: a call is whole in the chunk that carries it.
func (s *stream) Open() []toolcall.Raw { return nil }

// streamRequest asks for the streamed response: streamGenerateContent,
// as server-sent events (alt=sse).
func streamRequest(url string, _ map[string]any) string {
	return strings.Replace(url, ":generateContent", ":streamGenerateContent", 1) + "?alt=sse"
}
