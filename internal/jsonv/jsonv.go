// Package jsonv holds helpers over decoded JSON values (map[string]any,
// []any, ...) that conduit's packages share: reading a provider response
// whatever form it comes in, reading its fields without panics, and deep
// copies.
package jsonv

import (
	"encoding/json"
	"fmt"
)

// Decode turns a provider response, given as []byte, json.RawMessage, a
// string of JSON, a decoded map[string]any, or any value that marshals to
// the provider's JSON (an official SDK's response struct), into a decoded
// JSON object. A map is used as it is, not copied; anything else is
// decoded afresh, so the result shares nothing with the caller (Shared
// tells which).
func Decode(response any) (map[string]any, error) {
	var data []byte
	switch r := response.(type) {
	case nil:
		return nil, fmt.Errorf("the response is nil")
	case map[string]any:
		if r == nil {
			return nil, fmt.Errorf("the response is nil")
		}
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
	// A body is one JSON value: one with more after it ("{...}}", two
	// objects) is not run in part; json.Unmarshal refuses it.
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("the response is not a JSON object: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("the response is not a JSON object")
	}
	return m, nil
}

// ObjectOf returns v as a decoded JSON object, or nil when v is nil or not
// one: a map as it is (not copied), JSON text decoded, any other value
// (a *jsonschema.Schema, a struct) through encoding/json. It is how a
// tool's InputSchema or OutputSchema, which a server's listing decodes
// to a map but a program may give in any of these forms, is read.
func ObjectOf(v any) map[string]any {
	switch x := v.(type) {
	case nil:
		return nil
	case map[string]any:
		return x
	}
	m, err := Decode(v)
	if err != nil {
		return nil
	}
	return m
}

// NonNil returns s, or an empty slice when s is nil, so that it encodes
// as [] and not as null.
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Shared reports whether Decode(response) returns the caller's own map,
// whose values must then be copied before they are changed.
func Shared(response any) bool {
	_, ok := response.(map[string]any)
	return ok
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

// Index returns v as an index: a JSON number that is a whole number, not
// negative. ok is false for anything else.
func Index(v any) (i int, ok bool) {
	f, ok := v.(float64)
	if !ok || f < 0 || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

// Clone returns a deep copy of a decoded JSON value: maps and slices are
// copied all the way down, other values are shared (strings, numbers,
// booleans and nil are immutable; any other value is taken as it is).
func Clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return CloneObject(x)
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Clone(e)
		}
		return out
	default:
		return v
	}
}

// CloneObject returns a deep copy of a JSON object.
func CloneObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = Clone(e)
	}
	return out
}
