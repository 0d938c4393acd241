package jsonv

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBound(t *testing.T) {
	m := map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Repeat("x", 100)}}}
	data, _ := json.Marshal(m)
	for _, r := range []any{data, json.RawMessage(data), string(data), m, struct{ C []any }{m["content"].([]any)}} {
		if _, n, over := Bound(r, 10); !over || n <= 10 {
			t.Errorf("%T over 10: %d %v", r, n, over)
		}
		if out, _, over := Bound(r, len(data)+20); over {
			t.Errorf("%T within the limit", r)
		} else if _, err := Decode(out); err != nil {
			t.Errorf("%T: %v", r, err)
		}
	}
	// A cycle of the caller's is bounded too.
	c := map[string]any{}
	c["c"] = c
	if _, _, over := Bound(c, 1000); !over {
		t.Error("a cycle is not over")
	}
}

// FuzzBound: a decoded value's measure is never more than its JSON's
// size, and text is measured by its length.
func FuzzBound(f *testing.F) {
	f.Add([]byte(`{"a":[1,"x",{"b":null,"c":true}],"d":"\u00e9\ufffd"}`), 10)
	f.Add([]byte(`{"content":[]}`), 0)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if _, n, over := Bound(data, max); n != len(data) || over != (len(data) > max) {
			t.Fatalf("bytes: %d %v", n, over)
		}
		var m map[string]any
		if json.Unmarshal(data, &m) != nil || m == nil || max < 0 {
			return
		}
		enc, _ := json.Marshal(m)
		_, n, over := Bound(m, max)
		if n > len(enc) && !over {
			t.Fatalf("measured %d, the JSON is %d", n, len(enc))
		}
		if over && len(enc) <= max {
			t.Fatalf("over %d, the JSON is %d", max, len(enc))
		}
	})
}

// FuzzValidValue: every string of the result is valid UTF-8, a valid
// value is returned as it is, and the input is never modified.
func FuzzValidValue(f *testing.F) {
	f.Add("ok", "k", "v")
	f.Add("bad \xff", "k\xfe", "\xc3")
	f.Fuzz(func(t *testing.T, a, k, v string) {
		in := map[string]any{"a": a, k: []any{v, map[string]any{v: a}, 1.0}}
		before := Clone(in)
		out := ValidValue(in)
		if !reflect.DeepEqual(any(in), before) {
			t.Fatal("the input was modified")
		}
		valid := utf8.ValidString(a) && utf8.ValidString(k) && utf8.ValidString(v)
		data, _ := json.Marshal(in)
		repaired, _ := json.Marshal(out)
		if valid && string(data) != string(repaired) {
			t.Fatalf("a valid value changed: %s -> %s", data, repaired)
		}
		var check func(v any)
		check = func(v any) {
			switch x := v.(type) {
			case string:
				if !utf8.ValidString(x) {
					t.Fatalf("invalid %q", x)
				}
			case map[string]any:
				for k, e := range x {
					check(k)
					check(e)
				}
			case []any:
				for _, e := range x {
					check(e)
				}
			}
		}
		check(out)
	})
}

// BenchmarkBound measures a decoded response of 10 calls against the
// default limit, beside decoding the same response from bytes.
func BenchmarkBound(b *testing.B) {
	var content []any
	for i := range 10 {
		content = append(content, map[string]any{"type": "tool_use", "id": "toolu_" + strings.Repeat("x", 20), "name": "github__search_issues",
			"input": map[string]any{"q": strings.Repeat("word ", 20), "n": float64(i), "labels": []any{"bug", "p1"}}})
	}
	m := map[string]any{"id": "msg_1", "role": "assistant", "content": content}
	data, _ := json.Marshal(m)
	b.Run("walk-map", func(b *testing.B) {
		for b.Loop() {
			Bound(m, 32<<20)
		}
	})
	b.Run("decode-bytes", func(b *testing.B) {
		for b.Loop() {
			_, _ = Decode(data)
		}
	})
}
