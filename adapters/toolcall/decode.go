package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Decode turns a provider response, given as []byte, json.RawMessage, a
// string of JSON, a decoded map[string]any, or any value that marshals to
// the provider's JSON (an official SDK's response struct), into a decoded
// JSON object. A map is used as it is, not copied; anything else is
// decoded afresh, so the result shares nothing with the caller
// (ExecuteToolCalls relies on it to copy arguments only from a map).
func Decode(response any) (map[string]any, error) {
	var data []byte
	switch r := response.(type) {
	case nil:
		return nil, fmt.Errorf("the response is nil")
	case map[string]any:
		return r, nil
	case []byte:
		data = r
	case json.RawMessage:
		data = r
	case string:
		data = []byte(r)
	case *json.RawMessage:
		if r == nil {
			return nil, fmt.Errorf("the response is nil")
		}
		data = *r
	case rawJSONer:
		// Official SDKs' response structs keep the exact body; marshaling
		// them instead gives zero-valued structs for absent fields and
		// union types that encoding/json cannot render.
		if raw := r.RawJSON(); raw != "" {
			data = []byte(raw)
			break
		}
		var err error
		if data, err = json.Marshal(r); err != nil {
			return nil, fmt.Errorf("the response does not marshal to JSON: %w", err)
		}
	default:
		var err error
		if data, err = json.Marshal(r); err != nil {
			return nil, fmt.Errorf("the response does not marshal to JSON: %w", err)
		}
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("the response is not a JSON object: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("the response is not a JSON object")
	}
	return m, nil
}

// rawJSONer is the method the Anthropic and OpenAI Go SDKs' response types
// have, returning the JSON they were decoded from.
type rawJSONer interface{ RawJSON() string }

// Object returns v as a JSON object, or nil.
func Object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// List returns v as a JSON array, or nil.
func List(v any) []any {
	l, _ := v.([]any)
	return l
}

// String returns v as a string, or "".
func String(v any) string {
	s, _ := v.(string)
	return s
}
