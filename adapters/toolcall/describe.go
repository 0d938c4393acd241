package toolcall

import (
	"strings"
	"unicode/utf8"

	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/textsafe"
)

// MaxDescription is the longest description sent to a provider, in bytes.
const MaxDescription = 4 << 10

// Description cleans a tool description written by a server, which may be
// hostile. It removes the invisible characters that can hide instructions
// from a human reviewer while the model reads them. Conduit has one table
// of them:
//
//   - control characters other than tab, newline and carriage return;
//   - bidi controls, zero-width characters and tag characters;
//   - variation selectors and fillers;
//   - line separators and other format characters.
//
// It replaces invalid UTF-8. It caps the result at MaxDescription bytes on
// a character boundary. Ordinary whitespace is kept.
func Description(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), MaxDescription))
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if textsafe.Invisible(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > MaxDescription {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// clean is the fast path: short printable ASCII needs no work.
func clean(s string) bool {
	if len(s) > MaxDescription {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || (c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f {
			return false
		}
	}
	return true
}

// SchemaMap returns a tool's input schema as a decoded JSON object, as
// providers want it. A missing schema is the empty object schema. A schema
// without "type" gets "type": "object". MCP requires it and providers
// enforce it. The result is shared and must not be modified.
func SchemaMap(schema any) map[string]any {
	m := jsonv.ObjectOf(schema)
	if m == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	if _, ok := m["type"]; !ok {
		cp := make(map[string]any, len(m)+1)
		for k, v := range m {
			cp[k] = v
		}
		cp["type"] = "object"
		m = cp
	}
	return m
}
