package jsonv

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func deepJSON(depth int) string {
	return `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
}

func TestRawDepth(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{``, 0}, {`1`, 0}, {`"[{"`, 0}, {`{}`, 1}, {`[]`, 1}, {`{"a":[1,{"b":"]}"}]}`, 3},
		{`{"a\"[":"\\"}`, 1}, {`[[],[[]],[]]`, 3}, {deepJSON(5000), 5000},
	} {
		if got := RawDepth(c.in, 0); got != c.want {
			t.Errorf("RawDepth(%.40q) = %d, want %d", c.in, got, c.want)
		}
	}
	// It stops just past the limit.
	if got := RawDepth(deepJSON(5000), 64); got != 65 {
		t.Errorf("RawDepth with limit 64 = %d", got)
	}
}

// Values whose JSON Measure counts exactly: numbers as encoding/json
// formats them, booleans, null, empty containers.
func TestMeasureExact(t *testing.T) {
	for _, v := range []any{
		nil, true, false, "", "abc", 0.0, -0.0, 1.0, -1.5, 1e20, 1e21, 123456789.0, 1e-6, 1e-7, 1.5e-9, 5e-324,
		math.MaxFloat64, float32(1e-7), float32(3.4e38), float32(0.1), 42, int64(-7),
		map[string]any{}, []any{}, []any{1.0, "x", nil}, map[string]any{"a": []any{true}, "b": map[string]any{}},
		json.Number("12.50"), json.RawMessage(`{"x":[1,2]}`),
		struct {
			A int `json:"a"`
		}{3},
	} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m Measure
		m.Value(v, 0)
		if m.Size != len(want) {
			t.Errorf("%#v: measured %d, its JSON %s is %d", v, m.Size, want, len(want))
		}
	}
}

func TestMeasureLimits(t *testing.T) {
	v := map[string]any{"a": []any{[]any{[]any{}}}, "b": strings.Repeat("x", 100)}
	m := Measure{MaxDepth: 3}
	m.Value(v, 0)
	if !m.Over || m.Depth != 4 {
		t.Errorf("depth 4 under a limit of 3: %+v", m)
	}
	m = Measure{MaxDepth: 4}
	m.Value(v, 0)
	if m.Over {
		t.Errorf("depth 4 under a limit of 4: %+v", m)
	}
	m = Measure{MaxBytes: 50}
	m.Value(v, 0)
	if !m.Over {
		t.Errorf("100 bytes of string under a limit of 50: %+v", m)
	}
	// Raw JSON inside a value is as deep as its container makes it.
	m = Measure{MaxDepth: 2}
	m.Value(map[string]any{"r": json.RawMessage(`[[1]]`)}, 0)
	if !m.Over || m.Depth != 3 {
		t.Errorf("raw JSON of depth 2 in an object: %+v", m)
	}
}

// FuzzMeasure: on any decoded JSON value Measure never counts more than
// its JSON's length, and its depth is that JSON's.
func FuzzMeasure(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",{"b":null,"c":true}],"d":"\u00e9\ufffd"}`, `[1e21,1e-7,-0,123456789,0.1]`,
		`{"<&>":"\u2028"}`, `[[],[[]],{}]`, `"x"`, `12345678901234567890`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if len(data) > 1<<12 || json.Unmarshal(data, &v) != nil {
			return
		}
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m Measure
		m.Value(v, 0)
		if m.Size > len(enc) {
			t.Fatalf("measured %d, the JSON %s is %d", m.Size, enc, len(enc))
		}
		// The value's own text: of duplicate keys, decoding keeps one.
		if d := RawDepth(enc, 0); m.Depth != d {
			t.Fatalf("depth %d, its JSON's is %d", m.Depth, d)
		}
	})
}
