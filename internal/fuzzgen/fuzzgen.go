// Package fuzzgen derives a model turn (text and valid tool calls) from a
// fuzzer's bytes, for the provider packages' round-trip fuzz targets: a
// response each provider's test builds from the turn, in the shape of the
// provider's documented examples, must parse back to exactly its calls.
// That is the oracle the plain "must not panic" targets lack: a Parse that
// found no calls, or the wrong ones, fails.
package fuzzgen

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// Call is one generated tool call. Strings are valid UTF-8, since a JSON
// encoder would replace invalid bytes and the round trip could not hold.
type Call struct {
	ID   string
	Name string
	Args map[string]any
}

// Turn is what the model said and called.
type Turn struct {
	Text  string
	Calls []Call
	// NoIDs is set, when ids are optional, for calls without ids (as
	// Gemini 2.x sends them): the calls' ID fields are then empty.
	NoIDs bool
	// Noise asks the builder to add the items a real response carries
	// around the calls (reasoning, thinking, server tools' blocks).
	Noise bool
}

// MaxCalls bounds the calls of one Turn.
const MaxCalls = 6

// New derives a Turn from data. Every input gives a Turn; names are
// non-empty, and ids distinct and non-empty unless idsOptional lets the
// input ask for none.
func New(data []byte, idsOptional bool) Turn {
	r := reader{data: data}
	flags := r.byte()
	t := Turn{NoIDs: idsOptional && flags&1 != 0, Noise: flags&2 != 0}
	n := int(flags>>2) % (MaxCalls + 1)
	t.Text = r.text()
	for i := range n {
		c := Call{Name: "t" + r.text(), Args: args(r.chunk())}
		if !t.NoIDs {
			c.ID = fmt.Sprintf("call_%d_%s", i, r.text())
		}
		t.Calls = append(t.Calls, c)
	}
	return t
}

// args reads chunk as a JSON object when it is one, and otherwise wraps
// its text in one.
func args(chunk []byte) map[string]any {
	var m map[string]any
	if json.Unmarshal(chunk, &m) == nil && m != nil {
		return m
	}
	return map[string]any{"s": strings.ToValidUTF8(string(chunk), "\uFFFD")}
}

type reader struct {
	data []byte
	off  int
}

func (r *reader) byte() byte {
	if r.off >= len(r.data) {
		return 0
	}
	b := r.data[r.off]
	r.off++
	return b
}

// chunk reads a length byte and that many bytes.
func (r *reader) chunk() []byte {
	n := min(int(r.byte()), len(r.data)-r.off)
	c := r.data[r.off : r.off+n]
	r.off += n
	return c
}

func (r *reader) text() string { return strings.ToValidUTF8(string(r.chunk()), "\uFFFD") }

// Check reports how raws, a Parse of a response built from t, differ from
// t's calls: "" when they are the same calls in the same order.
func Check(t Turn, raws []toolcall.Raw) string {
	if len(raws) != len(t.Calls) {
		return fmt.Sprintf("parsed %d calls, want %d", len(raws), len(t.Calls))
	}
	for i, c := range t.Calls {
		r := raws[i]
		if r.Err != nil {
			return fmt.Sprintf("call %d: rejected: %v", i, r.Err)
		}
		if r.ID != c.ID || r.Name != c.Name {
			return fmt.Sprintf("call %d: got id %q name %q, want %q %q", i, r.ID, r.Name, c.ID, c.Name)
		}
		got, err := Normalize(r.Args)
		if err != nil {
			return fmt.Sprintf("call %d: arguments: %v", i, err)
		}
		want, _ := Normalize(c.Args)
		if !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("call %d: arguments %v, want %v", i, got, want)
		}
	}
	return ""
}

// RoundTrip checks that parse finds exactly t's calls in resp, a response
// built from t, from its bytes and from the decoded value alike.
func RoundTrip(tb testing.TB, t Turn, resp map[string]any, parse func(any) ([]toolcall.Raw, error)) {
	tb.Helper()
	b, err := json.Marshal(resp)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range []any{b, resp} {
		raws, err := parse(r)
		if err != nil {
			tb.Fatalf("a valid response does not parse: %v\n%s", err, b)
		}
		if d := Check(t, raws); d != "" {
			tb.Fatalf("%s\n%s", d, b)
		}
	}
}

// Normalize decodes args, a decoded value or JSON text, to the value a
// plain json.Unmarshal gives, so that arguments compare whatever form the
// parser left them in.
func Normalize(args any) (any, error) {
	var b []byte
	switch a := args.(type) {
	case json.RawMessage:
		b = a
	case string:
		b = []byte(a)
	default:
		var err error
		if b, err = json.Marshal(a); err != nil {
			return nil, err
		}
	}
	var v any
	err := json.Unmarshal(b, &v)
	return v, err
}
