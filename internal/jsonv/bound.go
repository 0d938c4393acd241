package jsonv

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Bound measures a provider response against max bytes of JSON before it
// is decoded, as cheaply as its form allows:
//
//   - text ([]byte, json.RawMessage, a string, an SDK struct's RawJSON) by
//     its length;
//   - a decoded map by walking it, counting the bytes its JSON would at
//     least take, until past max;
//   - any other value by marshaling it once. Then out is its JSON text, so
//     Decode need not marshal again.
//
// Otherwise out is response itself. n is the size measured. For a decoded
// map it is a lower bound, and no more than just past max. A value that
// does not marshal is not over: Decode reports it.
func Bound(response any, max int) (out any, n int, over bool) {
	switch r := response.(type) {
	case nil:
		return r, 0, false
	case map[string]any:
		n = walk(r, max)
		return r, n, n > max
	case []byte:
		return r, len(r), len(r) > max
	case json.RawMessage:
		return r, len(r), len(r) > max
	case *json.RawMessage:
		if r == nil {
			return r, 0, false
		}
		return r, len(*r), len(*r) > max
	case string:
		return r, len(r), len(r) > max
	case rawJSONer:
		if raw := r.RawJSON(); raw != "" {
			return raw, len(raw), len(raw) > max
		}
	}
	data, err := json.Marshal(response)
	if err != nil {
		return response, 0, false
	}
	return json.RawMessage(data), len(data), len(data) > max
}

// walk returns a lower bound of the size of v's JSON text, stopping as
// soon as it is past max.
func walk(v any, max int) int {
	m := Measure{MaxBytes: max}
	m.Value(v, 0)
	return m.Size
}

// ValidString returns s with every invalid UTF-8 sequence replaced by
// U+FFFD, and s itself, at no cost but a scan, when it is valid.
func ValidString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// ValidValue returns a decoded JSON value whose strings (object keys
// included) are valid UTF-8: v itself when they already are, otherwise a
// copy in which the invalid ones are repaired (see ValidString), sharing
// what needed no repair. v is never modified.
func ValidValue(v any) any {
	out, _ := valid(v)
	return out
}

// valid is ValidValue, reporting whether anything was repaired.
func valid(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if utf8.ValidString(x) {
			return x, false
		}
		return strings.ToValidUTF8(x, "\uFFFD"), true
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			ve, ch := valid(e)
			vk := ValidString(k)
			if !ch && vk == k {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(x))
				for k2, e2 := range x {
					out[k2] = e2
				}
			}
			delete(out, k)
			out[vk] = ve
		}
		if out == nil {
			return x, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range x {
			ve, ch := valid(e)
			if !ch {
				continue
			}
			if out == nil {
				out = make([]any, len(x))
				copy(out, x)
			}
			out[i] = ve
		}
		if out == nil {
			return x, false
		}
		return out, true
	}
	return v, false
}
