// The declarations: TypeScript the model reads to write code against the tools.
package codemode

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit"
)

// Mangle is the JavaScript name of a server id or a tool name. Each
// character outside [A-Za-z0-9_] becomes '_'. A name gets a leading '_'
// when it would not be an identifier. So does a word of the language or
// a global of the sandbox.
func Mangle(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r < 128 && (r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || s[0] >= '0' && s[0] <= '9' || reserved[s] {
		s = "_" + s
	}
	return s
}

// reserved are names a global cannot take. They are words of the
// language and the globals the sandbox keeps.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`break case catch class const continue debugger default delete do else enum export extends
false finally for function if import in instanceof new null return super switch this throw true try typeof var void while with
yield let static implements interface package private protected public await async arguments eval undefined NaN Infinity
globalThis console Object Function Array Number Boolean String Symbol BigInt Math JSON Date RegExp Promise Proxy Reflect Map Set
WeakMap WeakSet WeakRef Error EvalError RangeError ReferenceError SyntaxError TypeError URIError InternalError AggregateError
Iterator ArrayBuffer SharedArrayBuffer DataView Atomics FinalizationRegistry parseInt parseFloat isNaN isFinite decodeURI
decodeURIComponent encodeURI encodeURIComponent escape unescape Int8Array Uint8Array Uint8ClampedArray Int16Array Uint16Array
Int32Array Uint32Array Float16Array Float32Array Float64Array BigInt64Array BigUint64Array __proto__ constructor prototype
toString valueOf hasOwnProperty conduit`) {
		m[w] = true
	}
	return m
}()

// searchGlobal holds conduit.search_tools past the search threshold.
const searchGlobal = "conduit"

// binding is where a tool lives in the code: global.method.
type binding struct {
	global, method string
}

// bindings names each tool in the code. A name two tools would share
// goes to the first. The other is left out, and named in skipped.
func bindings(tools []*conduit.Tool) (map[binding]*conduit.Tool, map[string][]string, []*conduit.Tool) {
	by := map[binding]*conduit.Tool{}
	names := map[string][]string{}
	var skipped []*conduit.Tool
	for _, t := range tools {
		if t == nil || t.Tool == nil {
			continue
		}
		b := binding{Mangle(t.Server), Mangle(t.Name)}
		if _, dup := by[b]; dup {
			skipped = append(skipped, t)
			continue
		}
		by[b] = t
		names[b.global] = append(names[b.global], b.method)
	}
	return by, names, skipped
}

// Declarations returns the TypeScript that declares tools as the code
// sees them. Each server is a global object. Each tool is an async
// method taking its input schema. It resolves to its output schema's
// type (structuredContent). Without an output schema, it resolves to
// its text.
func Declarations(tools []*conduit.Tool) string {
	by, names, _ := bindings(tools)
	globals := make([]string, 0, len(names))
	for g := range names {
		globals = append(globals, g)
	}
	slices.Sort(globals)
	var b strings.Builder
	for _, g := range globals {
		fmt.Fprintf(&b, "declare const %s: {\n", g)
		ms := slices.Clone(names[g])
		slices.Sort(ms)
		for _, m := range ms {
			t := by[binding{g, m}]
			if d := oneLine(t.Description); d != "" {
				fmt.Fprintf(&b, "  /** %s */\n", d)
			}
			out := "string"
			if t.OutputSchema != nil {
				out = tsType(t.OutputSchema, 0)
			}
			fmt.Fprintf(&b, "  %s(args: %s): Promise<%s>;\n", m, tsType(t.InputSchema, 0), out)
		}
		b.WriteString("};\n")
	}
	return b.String()
}

var spaces = regexp.MustCompile(`\s+`)

// oneLine is a description on one line, short, unable to end the comment.
func oneLine(s string) string {
	s = strings.TrimSpace(spaces.ReplaceAllString(s, " "))
	s = strings.ReplaceAll(s, "*/", "* /")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}

// maxDepth bounds how deep a schema is declared; deeper is unknown.
const maxDepth = 6

var identifier = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// tsType is the TypeScript type of a JSON schema. The schema may be in
// any form the SDK keeps: a map, a *jsonschema.Schema, raw JSON.
func tsType(schema any, depth int) string {
	m, ok := schemaMap(schema)
	if !ok {
		return "unknown"
	}
	return typeOf(m, depth)
}

func schemaMap(schema any) (map[string]any, bool) {
	if m, ok := schema.(map[string]any); ok {
		return m, true
	}
	if schema == nil {
		return nil, false
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

func typeOf(m map[string]any, depth int) string {
	if depth > maxDepth {
		return "unknown"
	}
	if c, ok := m["const"]; ok {
		return literal(c)
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		parts := make([]string, 0, len(e))
		for _, v := range e {
			parts = append(parts, literal(v))
		}
		return union(parts)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[k].([]any); ok && len(alts) > 0 {
			parts := make([]string, 0, len(alts))
			for _, a := range alts {
				am, _ := a.(map[string]any)
				parts = append(parts, typeOf(am, depth+1))
			}
			return union(parts)
		}
	}
	switch t := m["type"].(type) {
	case string:
		return typeName(t, m, depth)
	case []any:
		parts := make([]string, 0, len(t))
		for _, x := range t {
			if s, ok := x.(string); ok {
				parts = append(parts, typeName(s, m, depth))
			}
		}
		if len(parts) > 0 {
			return union(parts)
		}
	}
	if _, ok := m["properties"]; ok {
		return typeName("object", m, depth)
	}
	return "unknown"
}

func typeName(t string, m map[string]any, depth int) string {
	switch t {
	case "string":
		return "string"
	case "number", "integer":
		return "number"
	case "boolean":
		return "boolean"
	case "null":
		return "null"
	case "array":
		items, _ := m["items"].(map[string]any)
		if items == nil {
			return "unknown[]"
		}
		it := typeOf(items, depth+1)
		if strings.ContainsAny(it, "|&") {
			it = "(" + it + ")"
		}
		return it + "[]"
	case "object":
		return objectType(m, depth)
	}
	return "unknown"
}

func objectType(m map[string]any, depth int) string {
	props, _ := m["properties"].(map[string]any)
	if len(props) == 0 {
		return "Record<string, unknown>"
	}
	req := map[string]bool{}
	if r, ok := m["required"].([]any); ok {
		for _, x := range r {
			if s, ok := x.(string); ok {
				req[s] = true
			}
		}
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("{ ")
	for _, k := range keys {
		pm, _ := props[k].(map[string]any)
		name := k
		if !identifier.MatchString(k) {
			q, _ := json.Marshal(k)
			name = string(q)
		}
		opt := "?"
		if req[k] {
			opt = ""
		}
		fmt.Fprintf(&b, "%s%s: %s; ", name, opt, typeOf(pm, depth+1))
	}
	b.WriteString("}")
	return b.String()
}

func literal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "unknown"
	}
	return string(b)
}

func union(parts []string) string {
	parts = slices.Compact(slices.Sorted(slices.Values(parts)))
	return strings.Join(parts, " | ")
}
