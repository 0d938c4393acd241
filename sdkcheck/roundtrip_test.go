package sdkcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The SDKs' param types accept unknown fields silently (the Anthropic and
// OpenAI SDKs' decoders drop them; genai's plain structs do too), so a
// decode alone proves little. Every check here decodes conduit's JSON into
// the SDK type, marshals the SDK value back, and compares the two as JSON
// values: a field the SDK does not know is lost on the way and fails the
// test, as does a field the SDK adds or a value it reads differently.

// reporter is the part of *testing.T the checks use, so that
// TestRoundTripCatchesMistakes can watch them fail.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

var _ reporter = (*testing.T)(nil)

// jsonValue is v as a decoded JSON value.
func jsonValue(t reporter, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("unmarshal %T's JSON: %v", v, err)
	}
	return out
}

// decodeInto decodes conduit's value into the SDK type T and checks the
// round trip. strict also refuses unknown fields, for SDK types that
// decode with encoding/json's plain struct rules (genai).
func decodeInto[T any](t reporter, what string, conduitValue any, strict bool) T {
	t.Helper()
	var sdk T
	data, err := json.Marshal(conduitValue)
	if err != nil {
		t.Fatalf("%s: marshal conduit's value: %v", what, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&sdk); err != nil {
		t.Errorf("%s: conduit's JSON does not decode into %T: %v\n%s", what, sdk, err, data)
		return sdk
	}
	sameJSON(t, fmt.Sprintf("%s: %T round trip", what, sdk), conduitValue, sdk)
	return sdk
}

// sameJSON reports every difference between conduit's value and the SDK
// value, as JSON.
func sameJSON(t reporter, what string, conduitValue, sdkValue any) bool {
	t.Helper()
	var diffs []string
	diffValues("$", jsonValue(t, conduitValue), jsonValue(t, sdkValue), &diffs)
	if len(diffs) == 0 {
		return true
	}
	t.Errorf("%s differs:\n\t%s\nconduit: %s\nSDK:     %s", what, strings.Join(diffs, "\n\t"),
		canon(conduitValue), canon(sdkValue))
	return false
}

func diffJSON(a, b string) string {
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		return err.Error()
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		return err.Error()
	}
	var diffs []string
	diffValues("$", va, vb, &diffs)
	if len(diffs) > 40 {
		diffs = append(diffs[:40], fmt.Sprintf("... and %d more", len(diffs)-40))
	}
	return "\t" + strings.Join(diffs, "\n\t")
}

// diffValues appends the differences between two decoded JSON values,
// one line per path: conduit's side is want, the SDK's got.
func diffValues(path string, want, got any, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: conduit sends %s, the SDK has %s", path, short(want), short(got)))
			return
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			wv, inW := w[k]
			gv, inG := g[k]
			p := path + "." + k
			switch {
			case !inG:
				*out = append(*out, fmt.Sprintf("%s: conduit sends %s; the SDK type has no such field (lost in the round trip)", p, short(wv)))
			case !inW:
				*out = append(*out, fmt.Sprintf("%s: conduit does not send it; the SDK adds %s", p, short(gv)))
			default:
				diffValues(p, wv, gv, out)
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*out = append(*out, fmt.Sprintf("%s: conduit sends %s, the SDK has %s", path, short(want), short(got)))
			return
		}
		for i := range w {
			diffValues(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], out)
		}
	default:
		if !reflect.DeepEqual(want, got) {
			*out = append(*out, fmt.Sprintf("%s: conduit sends %s, the SDK has %s", path, short(want), short(got)))
		}
	}
}

func short(v any) string {
	s := canon(v)
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// lookup returns the value at a path of keys in a decoded JSON value.
func lookup(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}
