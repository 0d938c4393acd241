package toolcall

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxDescription is the longest description sent to a provider, in bytes.
const MaxDescription = 4 << 10

// Description cleans a tool description written by a server, which may be
// hostile: it removes invisible characters that can hide instructions from
// a human reviewer while the model reads them (zero-width characters, bidi
// controls, tag characters U+E0000–U+E007F, variation selectors, the soft
// hyphen, other format characters, control characters other than tab, newline
// and carriage return), replaces invalid UTF-8, and caps the result at MaxDescription
// bytes on a character boundary. Ordinary whitespace is kept.
func Description(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), MaxDescription))
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if invisible(r) {
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

// Invisible reports whether r is one of the characters Description
// removes: a control character other than tab, newline and carriage
// return, or a character that shows as nothing (zero width, bidi
// controls, tags, variation selectors, fillers, other format characters).
func Invisible(r rune) bool { return invisible(r) }

func invisible(r rune) bool {
	switch {
	case r == '\n' || r == '\t' || r == '\r':
		return false
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return true
	case r == 0xad, // soft hyphen
		r >= 0xfe00 && r <= 0xfe0f,   // variation selectors
		r >= 0xe0100 && r <= 0xe01ef, // variation selectors supplement
		r >= 0xe0000 && r <= 0xe007f, // tags
		r == 0x34f,                   // combining grapheme joiner
		r >= 0x115f && r <= 0x1160,   // Hangul fillers
		r == 0x3164 || r == 0xffa0,   // Hangul fillers
		r >= 0x2028 && r <= 0x2029:   // line/paragraph separators
		return true
	}
	return unicode.Is(unicode.Cf, r) // format characters: zero width, bidi, BOM, ...
}

// SchemaMap returns a tool's input schema as a decoded JSON object, as
// providers want it. A missing schema is the empty object schema, and a
// schema without "type" gets "type": "object", which MCP requires and
// providers enforce. The result is shared and must not be modified.
func SchemaMap(schema any) map[string]any {
	var m map[string]any
	switch s := schema.(type) {
	case nil:
	case map[string]any:
		m = s
	default:
		data, err := json.Marshal(s)
		if err == nil {
			_ = json.Unmarshal(data, &m)
		}
	}
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
