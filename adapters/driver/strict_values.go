package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Reading schemas built in Go, not only by json.Unmarshal.

func hasKey(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// escape escapes a JSON pointer segment.
func escape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescape(s string) (string, bool) {
	if !strings.Contains(s, "~") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '~' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 >= len(s) || (s[i+1] != '0' && s[i+1] != '1') {
			return "", false
		}
		b.WriteByte("~/"[s[i+1]-'0'])
		i++
	}
	return b.String(), true
}

func asString(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case json.Number, nil:
		return "", false
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return rv.String(), true
	}
	return "", false
}

// asObject reads a JSON object. A map[string]any is taken as is. Another
// map with string keys is copied. A value encoding/json turns into an
// object (a struct, a json.Marshaler) goes through a round trip.
func asObject(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case nil, string, bool, float64, json.Number, []any:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Map && !isMarshaler(v) {
		if rv.IsNil() {
			return nil, false
		}
		kt := rv.Type().Key()
		if kt.Kind() != reflect.String && kt.Kind() != reflect.Interface {
			return nil, false
		}
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k, ok := asString(it.Key().Interface())
			if !ok {
				return nil, false
			}
			out[k] = it.Value().Interface()
		}
		return out, true
	}
	if rt, ok := roundTrip(v); ok {
		m, ok := rt.(map[string]any)
		return m, ok
	}
	return nil, false
}

// asArray reads a JSON array. An []any is taken as is. Another slice or
// array is copied. A value encoding/json turns into an array goes through
// a round trip.
func asArray(v any) ([]any, bool) {
	switch a := v.(type) {
	case []any:
		return a, true
	case nil, string, bool, float64, json.Number, map[string]any:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); (k == reflect.Slice || k == reflect.Array) && rv.Type().Elem().Kind() != reflect.Uint8 && !isMarshaler(v) {
		if k == reflect.Slice && rv.IsNil() {
			return nil, false
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).Interface()
		}
		return out, true
	}
	if rt, ok := roundTrip(v); ok {
		a, ok := rt.([]any)
		return a, ok
	}
	return nil, false
}

func isMarshaler(v any) bool {
	_, ok := v.(json.Marshaler)
	return ok
}

// roundTrip decodes what encoding/json makes of an unusual Go value. Plain
// scalars are not worth it.
func roundTrip(v any) (any, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Struct, reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Array:
	default:
		if !isMarshaler(v) {
			return nil, false
		}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, false
	}
	return out, true
}

// number reads a finite JSON number of any Go numeric type.
func number(v any) (any, float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, x, !math.IsInf(x, 0) && !math.IsNaN(x)
	case int:
		return x, float64(x), true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return x, f, err == nil && !math.IsInf(f, 0)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint(), float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		return f, f, !math.IsInf(f, 0) && !math.IsNaN(f)
	}
	return nil, 0, false
}

func nonNegInt(v any) (any, bool) {
	out, f, ok := number(v)
	return out, ok && f >= 0 && f == math.Trunc(f)
}

// jsonCopy deep-copies a JSON value into map[string]any, []any, strings,
// bools and numbers.
func jsonCopy(v any, depth int) (any, error) {
	if depth > maxValueDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxValueDepth)
	}
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := jsonCopy(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := jsonCopy(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	if !isMarshaler(v) {
		if n, _, ok := number(v); ok {
			return n, nil
		} else if n != nil {
			return nil, fmt.Errorf("%v is not a finite number", v)
		}
		if s, ok := asString(v); ok {
			return s, nil
		}
		rv := reflect.ValueOf(v)
		if rv.Kind() == reflect.Bool {
			return rv.Bool(), nil
		}
	}
	if m, ok := asObject(v); ok {
		return jsonCopy(m, depth)
	}
	if a, ok := asArray(v); ok {
		return jsonCopy(a, depth)
	}
	if rt, ok := roundTrip(v); ok {
		if _, isMap := rt.(map[string]any); !isMap {
			if _, isArr := rt.([]any); !isArr {
				return jsonCopy(rt, depth)
			}
		}
	}
	return nil, fmt.Errorf("%s is not a JSON value", describe(v))
}

// describe names a value's JSON kind, for error messages.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return quoteShort(x)
	case json.Number:
		return "the number " + string(x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	if n, _, ok := number(v); ok {
		return fmt.Sprintf("the number %v", n)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return quoteShort(rv.String())
	}
	return fmt.Sprintf("a Go %T", v)
}

// quoteShort quotes s, cut short: messages quote what an untrusted server sent.
func quoteShort(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(string([]rune(s)[:max])) + "..."
}
