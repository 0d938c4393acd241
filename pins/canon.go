package pins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CanonicalTool returns the canonical JSON of a tool's definition, the
// bytes whose SHA-256 is its pin. The definition is the JSON object of
// the fields a model or a policy reads:
//
//	name          always
//	title         when not empty
//	description   when not empty
//	inputSchema   always (null when the tool has none)
//	outputSchema  when set
//	annotations   when set: readOnlyHint and idempotentHint always (false
//	              when absent, as the SDK decodes them), destructiveHint
//	              and openWorldHint when set, title when not empty
//
// _meta and icons are left out: no provider shows them to a model.
//
// The encoding is the JSON Canonicalization Scheme of RFC 8785:
//
//   - There is no insignificant whitespace.
//   - Object members are sorted by the UTF-16 code units of their names.
//   - Strings have only '"', '\\' and the control characters escaped.
//     \b \t \n \f \r take their short forms. The others are \u00xx in
//     lowercase hex.
//   - Everything else in a string is written as UTF-8, U+2028 and U+2029
//     included.
//   - Numbers are IEEE 754 doubles, written the way ECMAScript's
//     Number.prototype.toString writes them. So 1, 1.5, 1e+21, 1e-7; -0
//     is 0.
//
// Schemas are first encoded with encoding/json and decoded again. So a
// schema given as a struct, a map or raw JSON pins the same. Invalid UTF-8
// is replaced by U+FFFD, as encoding/json does. Numbers beyond a double's
// precision are rounded to one, as RFC 8785 requires.
func CanonicalTool(t *mcp.Tool) ([]byte, error) {
	if t == nil {
		return nil, errors.New("no tool")
	}
	def, err := toolDefinition(t)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	return CanonicalJSON(def)
}

// ToolDigest returns "sha256:" and the lowercase hex SHA-256 of
// [CanonicalTool].
func ToolDigest(t *mcp.Tool) (string, error) {
	b, err := CanonicalTool(t)
	if err != nil {
		return "", err
	}
	return digest.Of(b), nil
}

// toolDefinition is the definition of CanonicalTool as a decoded JSON
// object.
func toolDefinition(t *mcp.Tool) (map[string]any, error) {
	def := map[string]any{"name": t.Name}
	if t.Title != "" {
		def["title"] = t.Title
	}
	if t.Description != "" {
		def["description"] = t.Description
	}
	in, err := decodedJSON(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	def["inputSchema"] = in
	if t.OutputSchema != nil {
		out, err := decodedJSON(t.OutputSchema)
		if err != nil {
			return nil, fmt.Errorf("outputSchema: %w", err)
		}
		if out != nil {
			def["outputSchema"] = out
		}
	}
	if a := t.Annotations; a != nil {
		ann := map[string]any{"readOnlyHint": a.ReadOnlyHint, "idempotentHint": a.IdempotentHint}
		if a.DestructiveHint != nil {
			ann["destructiveHint"] = *a.DestructiveHint
		}
		if a.OpenWorldHint != nil {
			ann["openWorldHint"] = *a.OpenWorldHint
		}
		if a.Title != "" {
			ann["title"] = a.Title
		}
		def["annotations"] = ann
	}
	return def, nil
}

// decodedJSON returns a schema as the canonical encoder takes it. Raw JSON
// is decoded. Anything else is returned as it is. The encoder encodes and
// decodes again what encoding/json would not have decoded to.
func decodedJSON(v any) (any, error) {
	switch s := v.(type) {
	case json.RawMessage:
		return decodeJSON(s)
	case []byte:
		return decodeJSON(s)
	}
	return v, nil
}

func roundTrip(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(data)
}

func decodeJSON(data []byte) (any, error) {
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// CanonicalJSON encodes a decoded JSON value by RFC 8785 (JCS). Pins hold
// the digest of this encoding.
func CanonicalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := writeCanonical(&b, v, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// maxCanonicalDepth bounds the nesting of a value, so that a hostile
// schema cannot exhaust the stack.
const maxCanonicalDepth = 1000

func writeCanonical(b *bytes.Buffer, v any, depth int) error {
	if depth > maxCanonicalDepth {
		return errors.New("nested too deeply")
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case float64:
		s, err := canonicalNumber(x)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case string:
		writeCanonicalString(b, x)
	case []any:
		if x == nil {
			b.WriteString("null") // as encoding/json writes it
			return nil
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		if x == nil {
			b.WriteString("null")
			return nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonicalString(b, k)
			b.WriteByte(':')
			if err := writeCanonical(b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		// Something other than what encoding/json decodes (an int, a
		// struct, a []string): encoded and decoded again.
		d, err := roundTrip(v)
		if err != nil {
			return err
		}
		return writeCanonical(b, d, depth+1)
	}
	return nil
}

// canonicalNumber writes f as ECMAScript's Number.prototype.toString does,
// which is what encoding/json's float encoding follows too.
func canonicalNumber(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("number %v is not JSON", f)
	}
	if f == 0 {
		return "0", nil // -0 too
	}
	format := byte('f')
	if a := math.Abs(f); a < 1e-6 || a >= 1e21 {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if format == 'e' {
		// Go writes 1e-07 where ECMAScript writes 1e-7.
		if i := strings.IndexByte(s, 'e'); i >= 0 && len(s) >= i+4 && s[i+2] == '0' {
			s = s[:i+2] + s[i+3:]
		}
	}
	return s, nil
}

func writeCanonicalString(b *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\b':
				b.WriteString(`\b`)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\f':
				b.WriteString(`\f`)
			case c == '\r':
				b.WriteString(`\r`)
			case c < 0x20:
				b.WriteString(`\u00`)
				b.WriteByte(hexDigits[c>>4])
				b.WriteByte(hexDigits[c&0xf])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785
// sorts member names. It differs from byte order only between characters
// above U+FFFF and those from U+E000 to U+FFFF.
func compareUTF16(a, b string) int {
	if isASCII(a) && isASCII(b) {
		return strings.Compare(a, b)
	}
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
