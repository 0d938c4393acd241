package jsonv

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestClone(t *testing.T) {
	in := map[string]any{"a": []any{map[string]any{"b": 1.0}, "x"}, "c": map[string]any{"d": nil}, "e": "s"}
	out := CloneObject(in)
	if !reflect.DeepEqual(in, out) {
		t.Fatal("not equal")
	}
	out["a"].([]any)[0].(map[string]any)["b"] = 2.0
	out["c"].(map[string]any)["z"] = true
	if in["a"].([]any)[0].(map[string]any)["b"] != 1.0 || len(in["c"].(map[string]any)) != 1 {
		t.Error("the copy shares with the original")
	}
	if CloneObject(nil) != nil {
		t.Error("nil")
	}
}

func TestDecode(t *testing.T) {
	want := map[string]any{"a": 1.0}
	type typed struct {
		A int `json:"a"`
	}
	raw := json.RawMessage(`{"a":1}`)
	for _, in := range []any{[]byte(`{"a":1}`), raw, &raw, `{"a":1}`, want, typed{1}, &typed{1}} {
		got, err := Decode(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%T: %v, %v", in, got, err)
		}
	}
	var nilRaw *json.RawMessage
	for _, in := range []any{nil, nilRaw, []byte("null"), []byte("[1]"), []byte("{"), "", make(chan int),
		[]byte(`{"a":1}}`), []byte(`{"a":1} {"a":2}`), []byte(`{"a":1} x`), `{"a":1}]`} {
		if _, err := Decode(in); err == nil {
			t.Errorf("%T %v: no error", in, in)
		}
	}
}

func TestShared(t *testing.T) {
	if !Shared(map[string]any{}) || Shared([]byte("{}")) || Shared(json.RawMessage("{}")) {
		t.Error("only a map is shared")
	}
}

func TestObjectOf(t *testing.T) {
	want := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}
	text := `{"type":"object","properties":{"a":{"type":"string"}}}`
	type schema struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
	}
	for _, in := range []any{want, []byte(text), json.RawMessage(text), text, &schema{"object", map[string]any{"a": map[string]any{"type": "string"}}}} {
		if got := ObjectOf(in); !reflect.DeepEqual(got, want) {
			t.Errorf("ObjectOf(%T) = %v", in, got)
		}
	}
	if m := map[string]any{}; reflect.ValueOf(ObjectOf(m)).Pointer() != reflect.ValueOf(m).Pointer() {
		t.Error("a map is copied")
	}
	for _, in := range []any{nil, (*schema)(nil), []byte("[1]"), json.RawMessage("null"), "x", 3, []byte("{} {}"), func() {}} {
		if got := ObjectOf(in); got != nil {
			t.Errorf("ObjectOf(%T %v) = %v, want nil", in, in, got)
		}
	}
}

func TestNonNil(t *testing.T) {
	if data, _ := json.Marshal(NonNil[string](nil)); string(data) != "[]" {
		t.Errorf("nil encodes as %s", data)
	}
	s := []any{1.0}
	if got := NonNil(s); &got[0] != &s[0] {
		t.Error("a slice is copied")
	}
}

// TestIndex: only a whole, non-negative JSON number is an index.
func TestIndex(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want int
		ok   bool
	}{
		{float64(0), 0, true},
		{float64(7), 7, true},
		{float64(-1), 0, false},
		{1.5, 0, false},
		{1e300, 0, false},
		{"1", 0, false},
		{nil, 0, false},
		{7, 0, false}, // an int is not what encoding/json decodes
	} {
		if got, ok := Index(tc.v); got != tc.want || ok != tc.ok {
			t.Errorf("Index(%#v) = %d, %v; want %d, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}
