package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrNotStrict is wrapped by every error [StrictSchema] returns: the schema
// cannot be expressed in OpenAI strict mode, so the tool must be sent with
// "strict": false and its original schema (or left out).
var ErrNotStrict = errors.New("openai: schema not supported in strict mode")

// StrictError says why a schema cannot be converted to strict mode. It
// unwraps to [ErrNotStrict].
type StrictError struct {
	// Pointer is the JSON pointer (RFC 6901) into the input schema of the
	// offending keyword or schema; "" is the root.
	Pointer string
	// Keyword is the offending keyword, or "" when the schema as a whole is
	// at fault (for example an untyped schema).
	Keyword string
	// Reason says what is wrong, in words fit for a log line.
	Reason string
}

// Error returns ErrNotStrict's text, the reason and the pointer.
func (e *StrictError) Error() string {
	where := e.Pointer
	if where == "" {
		where = "the root"
	}
	return fmt.Sprintf("%v: %s (at %s)", ErrNotStrict, e.Reason, where)
}

// Unwrap returns ErrNotStrict.
func (e *StrictError) Unwrap() error { return ErrNotStrict }

// AnyItem is the [NullPath] element that stands for every item of an array.
const AnyItem = "[]"

// NullPath is the path, from the arguments root, of a property that strict
// mode made nullable. Elements are property names; the element [AnyItem]
// ("[]") stands for every item of an array, so the path of `tags[].note` is
// NullPath{"tags", "[]", "note"}.
//
// Paths are locations in the argument value, not in the schema: a property
// reached through a $ref has the path of every place the $ref is used, and
// anyOf branches are transparent (branches that share a location share its
// paths, listed once). The last element is always a property name. An
// element "[]" applied to an object names its property "[]" (JSON allows
// that name), so a path means the same thing to the value whatever branch
// of an anyOf the value took.
type NullPath []string

// OpenAI's documented strict-mode limits.
const (
	maxProperties      = 5000
	maxObjectDepth     = 10
	maxStringChars     = 120000
	maxEnumValues      = 1000
	largeEnumThreshold = 250
	maxLargeEnumChars  = 15000
)

// Bounds of our own, so an untrusted schema cannot make the conversion
// recurse or allocate without limit.
const (
	// maxSchemaDepth bounds the nesting of schemas (properties, items, anyOf
	// branches and $ref hops), far beyond what the object-nesting limit
	// leaves useful.
	maxSchemaDepth = 128
	// maxValueDepth bounds the nesting of enum and const values.
	maxValueDepth = 128
	// maxNullPaths bounds the null paths of one schema: a $ref'd definition
	// used in many places multiplies its paths.
	maxNullPaths = 10000
	// maxPathWork bounds the path elements built while collecting null paths.
	maxPathWork = 4 << 20
	// maxWalkDepth bounds recursion of the analysis passes through $ref
	// chains.
	maxWalkDepth = 4096
	// maxConflictWork bounds the schema visits of the null-path conflict
	// check (anyOf branches times paths).
	maxConflictWork = 50_000_000
)

// unsupportedKeywords fail the conversion: strict mode cannot express them,
// and dropping them would let the model send arguments the tool rejects.
var unsupportedKeywords = map[string]bool{
	"allOf": true, "not": true, "oneOf": true,
	"if": true, "then": true, "else": true,
	"dependentRequired": true, "dependentSchemas": true, "dependencies": true,
	"patternProperties": true, "unevaluatedProperties": true, "unevaluatedItems": true,
	"propertyNames": true, "prefixItems": true,
	"contains": true, "minContains": true, "maxContains": true,
	"$dynamicRef": true, "$recursiveRef": true,
}

// validatingKeywords are the kept keywords that constrain a value. A $ref or
// anyOf schema may not carry any other of them: keeping them would need
// allOf semantics, which strict mode lacks.
var validatingKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true, "$ref": true,
	"pattern": true, "minLength": true, "maxLength": true,
	"multipleOf": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true,
	"minItems": true, "maxItems": true,
}

// Every keyword in neither list above nor handled by the converter
// (description, title, $defs and definitions at the root, format) is
// dropped: default, examples, uniqueItems, minProperties, maxProperties,
// contentMediaType, contentEncoding, contentSchema, $schema, $id, $comment,
// $anchor, $dynamicAnchor, $vocabulary, readOnly, writeOnly, deprecated,
// additionalItems (tuple "items" fails, so it never applies), x-* and any
// unknown keyword. They only narrow or annotate, and the server still
// validates the arguments; failing on them would send many tools without
// strict mode for nothing.

// strictFormats are the "format" values strict mode accepts; other formats
// are dropped.
var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

var validTypes = map[string]bool{
	"integer": true, "number": true, "string": true, "boolean": true,
	"null": true, "object": true, "array": true,
}

// StrictSchema converts an MCP tool input schema into an OpenAI strict-mode
// schema, and returns the paths of the properties it made nullable (sorted;
// nil when there are none), to give to [StripNulls] or [CompileNullPaths].
//
// Every object gets "additionalProperties": false and lists all its
// properties, sorted, in "required"; an optional property becomes nullable
// and its path is returned. Only local $refs to the root's "$defs" or
// "definitions" are followed; the definitions they reach are converted and
// emitted under the same key (unused ones are left out).
//
// Keywords strict mode cannot express (allOf, oneOf, not, if/then/else,
// dependent*, patternProperties, unevaluated*, propertyNames, prefixItems,
// contains, $dynamicRef, $recursiveRef), open maps, arrays without items,
// untyped schemas, other $refs (including "#"), recursion that reaches an
// optional property, and schemas over OpenAI's limits make it fail with a
// [*StrictError] that wraps [ErrNotStrict]. The limits are counted on the
// result: 5000 properties; 10 levels of objects (the root is the first;
// $refs count where they are used, a recursion once); 120000 characters of
// property names, definition names and string enum and const values; 1000
// enum values, nulls it adds included; 15000 characters of strings in an
// enum of more than 250 values. It also fails when a null it would strip
// is one the schema requires elsewhere at the same location (an anyOf
// branch where the property is required and nullable, a null inside an
// enum value), and beyond 10000 null paths.
//
// Keywords that only narrow or annotate are dropped: default, examples,
// uniqueItems, minProperties, maxProperties, contentMediaType,
// contentEncoding, contentSchema, $schema, $id, $comment, $anchor,
// $dynamicAnchor, $vocabulary, readOnly, writeOnly, deprecated,
// additionalItems, formats strict mode lacks, "$defs" below the root, x-*
// and every other unknown keyword (the server still validates the
// arguments). Type-specific keywords on a schema whose type cannot have
// them ("pattern" on an integer) are dropped too, since they have no effect.
//
// Schemas may come from json.Unmarshal or be built in Go: nested maps may
// be any map with string keys, arrays any slice, numbers any Go numeric type
// or json.Number; other values are read through encoding/json. The result
// holds only map[string]any, []any, strings, bools and numbers, shares
// nothing with schema, and is the same for the same input. schema is never
// modified.
func StrictSchema(schema map[string]any) (strict map[string]any, nullPaths []NullPath, err error) {
	c := &converter{root: schema, defs: map[string]*sdef{}, defMaps: map[string]map[string]any{}}
	root, err := c.convertRoot(schema)
	if err != nil {
		return nil, nil, err
	}
	if err := c.analyze(root); err != nil {
		return nil, nil, err
	}
	paths, err := c.nullPaths(root)
	if err != nil {
		return nil, nil, err
	}
	out := root.out
	for _, d := range c.order {
		cm, _ := out[d.container].(map[string]any)
		if cm == nil {
			cm = map[string]any{}
			out[d.container] = cm
		}
		cm[d.name] = d.node.out
	}
	return out, paths, nil
}

// snode is one converted schema. out is what is emitted for it (not yet made
// nullable); the other fields keep what the analysis passes need.
type snode struct {
	ptr      string
	out      map[string]any
	types    []string // nil: no "type"
	enum     []any    // nil: no "enum"
	hasConst bool
	constVal any
	props    []sprop // sorted by name
	items    *snode
	anyOf    []*snode
	ref      *sdef
	optMemo  int8 // 0 unknown, 1 no optional property reachable, 2 some
}

type sprop struct {
	name     string
	node     *snode
	optional bool
}

// sdef is a definition reached through a $ref.
type sdef struct {
	idx       int
	container string // "$defs" or "definitions"
	name      string
	ptr       string
	node      *snode
	refs      []int // definitions referenced anywhere in node
	top       []int // definitions referenced at node's own value location
	localOpt  bool  // node itself has an optional property
	comp      int   // strongly connected component in the $ref graph
	recursive bool
	hasOpt    bool // an optional property is reachable from node
	rel       []NullPath
	relDone   bool
}

type converter struct {
	root    map[string]any
	defs    map[string]*sdef // by container + "/" + name
	defMaps map[string]map[string]any
	order   []*sdef // in the order first reached

	props, chars, enums int
	work                int // path elements built
	conflictWork        int
}

func fail(ptr, keyword, format string, args ...any) error {
	return &StrictError{Pointer: ptr, Keyword: keyword, Reason: fmt.Sprintf(format, args...)}
}

func (c *converter) convertRoot(schema map[string]any) (*snode, error) {
	if _, ok := schema["anyOf"]; ok {
		return nil, fail("/anyOf", "anyOf", `the root must be "type": "object", not anyOf`)
	}
	if _, ok := schema["$ref"]; ok {
		return nil, fail("/$ref", "$ref", `the root must be "type": "object", not a $ref`)
	}
	tv, ok := schema["type"]
	if !ok {
		return nil, fail("", "type", `the root must be "type": "object"`)
	}
	if t, ok := asString(tv); !ok || t != "object" {
		return nil, fail("/type", "type", `the root must be "type": "object" (a single type, not %s)`, describe(tv))
	}
	return c.node(schema, "", 0, true)
}

func (c *converter) node(v any, ptr string, depth int, root bool) (*snode, error) {
	if depth > maxSchemaDepth {
		return nil, fail(ptr, "", "schemas nested more than %d levels deep", maxSchemaDepth)
	}
	m, ok := asObject(v)
	if !ok {
		if b, isBool := v.(bool); isBool {
			return nil, fail(ptr, "", "boolean schema %t is not supported", b)
		}
		return nil, fail(ptr, "", "a schema must be a JSON object, not %s", describe(v))
	}
	keys := sortedKeys(m)
	for _, k := range keys {
		if unsupportedKeywords[k] {
			return nil, fail(ptr+"/"+escape(k), k, "keyword %q is not supported", k)
		}
	}
	n := &snode{ptr: ptr, out: make(map[string]any)}
	for _, k := range [...]string{"title", "description"} {
		if x, ok := m[k]; ok {
			s, ok := asString(x)
			if !ok {
				return nil, fail(ptr+"/"+k, k, "%q must be a string, not %s", k, describe(x))
			}
			n.out[k] = s
		}
	}
	var err error
	switch {
	case hasKey(m, "$ref"):
		if err = onlyAnnotations(m, keys, ptr, "$ref"); err == nil {
			err = c.ref(n, m["$ref"], ptr, depth)
		}
	case hasKey(m, "anyOf"):
		if err = onlyAnnotations(m, keys, ptr, "anyOf"); err == nil {
			err = c.anyOf(n, m["anyOf"], ptr, depth)
		}
	default:
		err = c.typed(n, m, ptr, depth, root)
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

func onlyAnnotations(m map[string]any, keys []string, ptr, self string) error {
	for _, k := range keys {
		if k != self && validatingKeywords[k] {
			return fail(ptr+"/"+escape(k), k, "%q cannot be combined with %q in strict mode", k, self)
		}
	}
	return nil
}

func (c *converter) ref(n *snode, r any, ptr string, depth int) error {
	kptr := ptr + "/$ref"
	s, ok := asString(r)
	if !ok {
		return fail(kptr, "$ref", `"$ref" must be a string, not %s`, describe(r))
	}
	container, name, ok := parseRef(s)
	if !ok {
		return fail(kptr, "$ref", "$ref %q is not supported: only local references to #/$defs/NAME or #/definitions/NAME are", s)
	}
	key := container + "/" + name
	d := c.defs[key]
	if d == nil {
		defs, ok := c.defMaps[container]
		if !ok {
			defs, _ = asObject(c.root[container])
			c.defMaps[container] = defs
		}
		dv, ok := defs[name]
		if !ok {
			return fail(kptr, "$ref", "$ref %q does not resolve", s)
		}
		d = &sdef{idx: len(c.order), container: container, name: name, ptr: "/" + container + "/" + escape(name)}
		c.defs[key] = d
		c.order = append(c.order, d)
		if err := c.addChars(d.ptr, container, utf8.RuneCountInString(name)); err != nil {
			return err
		}
		node, err := c.node(dv, d.ptr, depth+1, false)
		if err != nil {
			return err
		}
		d.node = node
	}
	n.ref = d
	n.out["$ref"] = s
	return nil
}

// parseRef accepts "#/$defs/NAME" and "#/definitions/NAME", with NAME
// percent- and JSON-pointer-escaped.
func parseRef(ref string) (container, name string, ok bool) {
	frag, found := strings.CutPrefix(ref, "#")
	if !found {
		return "", "", false
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return "", "", false
	}
	for _, c := range [...]string{"$defs", "definitions"} {
		if rest, found := strings.CutPrefix(frag, "/"+c+"/"); found && !strings.Contains(rest, "/") {
			if name, ok := unescape(rest); ok {
				return c, name, true
			}
		}
	}
	return "", "", false
}

func (c *converter) anyOf(n *snode, a any, ptr string, depth int) error {
	list, ok := asArray(a)
	if !ok || len(list) == 0 {
		return fail(ptr+"/anyOf", "anyOf", `"anyOf" must be a non-empty array`)
	}
	outs := make([]any, len(list))
	for i, b := range list {
		child, err := c.node(b, ptr+"/anyOf/"+strconv.Itoa(i), depth+1, false)
		if err != nil {
			return err
		}
		n.anyOf = append(n.anyOf, child)
		outs[i] = child.out
	}
	n.out["anyOf"] = outs
	return nil
}

func (c *converter) typed(n *snode, m map[string]any, ptr string, depth int, root bool) error {
	if tv, ok := m["type"]; ok {
		types, err := parseTypes(tv, ptr+"/type")
		if err != nil {
			return err
		}
		n.types = types
		if len(types) == 1 {
			n.out["type"] = types[0]
		} else {
			ts := make([]any, len(types))
			for i, t := range types {
				ts[i] = t
			}
			n.out["type"] = ts
		}
	}
	if ev, ok := m["enum"]; ok {
		kptr := ptr + "/enum"
		list, ok := asArray(ev)
		if !ok || len(list) == 0 {
			return fail(kptr, "enum", `"enum" must be a non-empty array`)
		}
		vals := make([]any, len(list))
		for i, x := range list {
			v, err := jsonCopy(x, 0)
			if err != nil {
				return fail(kptr+"/"+strconv.Itoa(i), "enum", "enum value: %v", err)
			}
			vals[i] = v
		}
		n.enum = vals
		n.out["enum"] = slices.Clone(vals)
		if err := c.countEnum(kptr, vals, false); err != nil {
			return err
		}
	}
	if cv, ok := m["const"]; ok {
		v, err := jsonCopy(cv, 0)
		if err != nil {
			return fail(ptr+"/const", "const", "const value: %v", err)
		}
		n.hasConst, n.constVal = true, v
		n.out["const"] = v
		if s, ok := v.(string); ok {
			if err := c.addChars(ptr+"/const", "const", utf8.RuneCountInString(s)); err != nil {
				return err
			}
		}
	}
	if n.types == nil && n.enum == nil && !n.hasConst {
		return fail(ptr, "", `schema has no "type" (nor "enum", "const", "anyOf" or "$ref")`)
	}
	// A schema without "type" applies its type-specific keywords to its enum
	// or const values; with a type, keywords for other types have no effect.
	applies := func(ts ...string) bool {
		if n.types == nil {
			return true
		}
		for _, t := range ts {
			if slices.Contains(n.types, t) {
				return true
			}
		}
		return false
	}

	if slices.Contains(n.types, "object") {
		if err := c.object(n, m, ptr, depth, root); err != nil {
			return err
		}
	} else if n.types == nil {
		for _, k := range [...]string{"additionalProperties", "properties", "required"} {
			if hasKey(m, k) {
				return fail(ptr+"/"+k, k, `%q needs "type": "object"`, k)
			}
		}
	}

	if slices.Contains(n.types, "array") {
		iv, ok := m["items"]
		if !ok {
			return fail(ptr, "items", `an array without "items" is not supported`)
		}
		if _, isArr := asArray(iv); isArr {
			return fail(ptr+"/items", "items", `"items" as an array (tuple validation) is not supported`)
		}
		child, err := c.node(iv, ptr+"/items", depth+1, false)
		if err != nil {
			return err
		}
		n.items = child
		n.out["items"] = child.out
	} else if n.types == nil && hasKey(m, "items") {
		return fail(ptr+"/items", "items", `"items" needs "type": "array"`)
	}

	var counts []string
	if applies("array") {
		counts = append(counts, "minItems", "maxItems")
	}
	if applies("string") {
		counts = append(counts, "minLength", "maxLength")
		if pv, ok := m["pattern"]; ok {
			// Kept as given: OpenAI and the server judge the dialect.
			s, ok := asString(pv)
			if !ok {
				return fail(ptr+"/pattern", "pattern", `"pattern" must be a string, not %s`, describe(pv))
			}
			n.out["pattern"] = s
		}
		if fv, ok := m["format"]; ok {
			if s, ok := asString(fv); ok && strictFormats[s] {
				n.out["format"] = s
			}
		}
	}
	for _, k := range counts {
		if x, ok := m[k]; ok {
			v, ok := nonNegInt(x)
			if !ok {
				return fail(ptr+"/"+k, k, "%q must be a non-negative integer, not %s", k, describe(x))
			}
			n.out[k] = v
		}
	}
	if applies("integer", "number") {
		if err := numberKeywords(n, m, ptr); err != nil {
			return err
		}
	}
	return nil
}

func numberKeywords(n *snode, m map[string]any, ptr string) error {
	for _, k := range [...]string{"multipleOf", "minimum", "maximum"} {
		if x, ok := m[k]; ok {
			v, f, ok := number(x)
			if !ok || (k == "multipleOf" && f <= 0) {
				return fail(ptr+"/"+k, k, "%q must be a finite number%s, not %s", k, map[bool]string{true: " above 0"}[k == "multipleOf"], describe(x))
			}
			n.out[k] = v
		}
	}
	for _, kb := range [...][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		k, bound := kb[0], kb[1]
		x, ok := m[k]
		if !ok {
			continue
		}
		if b, isBool := x.(bool); isBool {
			// Draft 4 spelling: a boolean that makes minimum/maximum exclusive.
			if bv, ok := n.out[bound]; ok && b {
				n.out[k] = bv
				delete(n.out, bound)
			}
			continue
		}
		v, _, ok := number(x)
		if !ok {
			return fail(ptr+"/"+k, k, "%q must be a finite number, not %s", k, describe(x))
		}
		n.out[k] = v
	}
	return nil
}

func parseTypes(tv any, ptr string) ([]string, error) {
	if s, ok := asString(tv); ok {
		if !validTypes[s] {
			return nil, fail(ptr, "type", "unknown type %q", s)
		}
		return []string{s}, nil
	}
	list, ok := asArray(tv)
	if !ok || len(list) == 0 {
		return nil, fail(ptr, "type", `"type" must be a type name or a non-empty array of them, not %s`, describe(tv))
	}
	var types []string
	for i, x := range list {
		s, ok := asString(x)
		if !ok || !validTypes[s] {
			return nil, fail(ptr+"/"+strconv.Itoa(i), "type", "unknown type %s", describe(x))
		}
		if !slices.Contains(types, s) {
			types = append(types, s)
		}
	}
	return types, nil
}

func (c *converter) object(n *snode, m map[string]any, ptr string, depth int, root bool) error {
	var pm map[string]any
	if pv, ok := m["properties"]; ok {
		if pm, ok = asObject(pv); !ok {
			return fail(ptr+"/properties", "properties", `"properties" must be an object, not %s`, describe(pv))
		}
	}
	closed := false
	if av, ok := m["additionalProperties"]; ok {
		kptr := ptr + "/additionalProperties"
		if b, isBool := av.(bool); isBool {
			if b {
				return fail(kptr, "additionalProperties", `an open map ("additionalProperties": true) is not supported`)
			}
			closed = true
		} else if _, isObj := asObject(av); isObj {
			return fail(kptr, "additionalProperties", `an open map ("additionalProperties" with a schema) is not supported`)
		} else {
			return fail(kptr, "additionalProperties", `"additionalProperties" must be a boolean or a schema, not %s`, describe(av))
		}
	}
	// Many tools take no arguments and say so with a bare object root.
	if len(pm) == 0 && !closed && !root {
		return fail(ptr, "properties", `an object without "properties" is an open map, which is not supported (an empty object needs "additionalProperties": false)`)
	}
	required := map[string]bool{}
	if rv, ok := m["required"]; ok {
		list, ok := asArray(rv)
		if !ok {
			return fail(ptr+"/required", "required", `"required" must be an array of names, not %s`, describe(rv))
		}
		for i, x := range list {
			kptr := ptr + "/required/" + strconv.Itoa(i)
			s, ok := asString(x)
			if !ok {
				return fail(kptr, "required", "a required name must be a string, not %s", describe(x))
			}
			if _, ok := pm[s]; !ok {
				return fail(kptr, "required", `required property %q is not in "properties"`, s)
			}
			required[s] = true
		}
	}
	names := sortedKeys(pm)
	c.props += len(names)
	if c.props > maxProperties {
		return fail(ptr+"/properties", "properties", "more than %d properties in total", maxProperties)
	}
	props := make(map[string]any, len(names))
	req := make([]any, len(names))
	n.props = make([]sprop, 0, len(names))
	for i, name := range names {
		pptr := ptr + "/properties/" + escape(name)
		if err := c.addChars(pptr, "properties", utf8.RuneCountInString(name)); err != nil {
			return err
		}
		child, err := c.node(pm[name], pptr, depth+1, false)
		if err != nil {
			return err
		}
		optional := !required[name]
		out := child.out
		if optional {
			if out, err = c.nullable(child); err != nil {
				return err
			}
		}
		props[name] = out
		req[i] = name
		n.props = append(n.props, sprop{name: name, node: child, optional: optional})
	}
	n.out["properties"] = props
	n.out["required"] = req
	n.out["additionalProperties"] = false
	return nil
}

// nullable makes n's emitted schema also accept null.
func (c *converter) nullable(n *snode) (map[string]any, error) {
	out := n.out
	if n.ref != nil || n.hasConst {
		w := map[string]any{}
		for _, k := range [...]string{"title", "description"} {
			if v, ok := out[k]; ok {
				w[k] = v
				delete(out, k)
			}
		}
		w["anyOf"] = []any{out, map[string]any{"type": "null"}}
		return w, nil
	}
	if n.anyOf != nil {
		for _, b := range n.anyOf {
			if localNull(b) {
				return out, nil
			}
		}
		branches := out["anyOf"].([]any)
		out["anyOf"] = append(branches[:len(branches):len(branches)], map[string]any{"type": "null"})
		return out, nil
	}
	if n.types != nil && !slices.Contains(n.types, "null") {
		ts := make([]any, 0, len(n.types)+1)
		for _, t := range n.types {
			ts = append(ts, t)
		}
		out["type"] = append(ts, "null")
	}
	if n.enum != nil && !slices.Contains(n.enum, nil) {
		e := out["enum"].([]any)
		out["enum"] = append(e[:len(e):len(e)], nil)
		if err := c.countEnum(n.ptr+"/enum", n.enum, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// countEnum counts the values of a new enum, or the null added to one, and
// checks the enum limits.
func (c *converter) countEnum(ptr string, vals []any, addedNull bool) error {
	n := len(vals)
	if addedNull {
		n++
		c.enums++
	} else {
		c.enums += n
	}
	if c.enums > maxEnumValues {
		return fail(ptr, "enum", "more than %d enum values in total", maxEnumValues)
	}
	strChars := 0
	for _, v := range vals {
		if s, ok := v.(string); ok {
			strChars += utf8.RuneCountInString(s)
		}
	}
	if !addedNull {
		if err := c.addChars(ptr, "enum", strChars); err != nil {
			return err
		}
	}
	if n > largeEnumThreshold && strChars > maxLargeEnumChars {
		return fail(ptr, "enum", "an enum of more than %d values has more than %d characters of strings", largeEnumThreshold, maxLargeEnumChars)
	}
	return nil
}

func (c *converter) addChars(ptr, keyword string, n int) error {
	c.chars += n
	if c.chars > maxStringChars {
		return fail(ptr, keyword, "more than %d characters of property names, definition names, enum and const values in total", maxStringChars)
	}
	return nil
}

// localNull reports whether a schema that is neither a $ref nor an anyOf
// accepts null by itself.
func localNull(n *snode) bool {
	return n.ref == nil && n.anyOf == nil &&
		(n.types == nil || slices.Contains(n.types, "null")) &&
		(n.enum == nil || slices.Contains(n.enum, nil)) &&
		(!n.hasConst || n.constVal == nil)
}

// analyze checks what needs the whole $ref graph: cycles, recursion with
// optional properties and object nesting.
func (c *converter) analyze(root *snode) error {
	nd := len(c.order)
	refs := make([][]int, nd)
	top := make([][]int, nd)
	for i, d := range c.order {
		lexRefs(d.node, true, d)
		refs[i], top[i] = d.refs, d.top
	}

	// A $ref cycle that stays at one value location (through $refs and anyOf
	// branches only) describes no value and makes validators loop.
	comp, comps := components(top)
	for i, d := range c.order {
		if len(comps[comp[i]]) > 1 || slices.Contains(top[i], i) {
			return fail(d.ptr, "$ref", "$ref cycle through %q never reaches a property or an item", d.name)
		}
	}

	comp, comps = components(refs)
	for i, d := range c.order {
		d.comp = comp[i]
		d.recursive = len(comps[comp[i]]) > 1 || slices.Contains(refs[i], i)
		d.hasOpt = d.localOpt
	}
	// Reachability of optional properties, against the $ref edges.
	radj := make([][]int, nd)
	var queue []int
	for i, d := range c.order {
		for _, j := range refs[i] {
			radj[j] = append(radj[j], i)
		}
		if d.hasOpt {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, p := range radj[v] {
			if !c.order[p].hasOpt {
				c.order[p].hasOpt = true
				queue = append(queue, p)
			}
		}
	}
	// The null paths of a recursive definition would repeat at every depth.
	for _, d := range c.order {
		if d.recursive && d.hasOpt {
			return fail(d.ptr, "$ref", "recursive definition %q reaches optional properties; strict mode allows recursion only when every property is required", d.name)
		}
	}

	// Object nesting, with $refs expanded; a $ref back into its own recursion
	// adds nothing. Components come sources first, so go backwards.
	hs := make([]height, len(comps))
	for ci := len(comps) - 1; ci >= 0; ci-- {
		for _, v := range comps[ci] {
			if h := heightOf(c.order[v].node, ci, hs); h.h > hs[ci].h {
				hs[ci] = h
			}
		}
	}
	if h := heightOf(root, -1, hs); h.h > maxObjectDepth {
		return fail(h.ptr, "", "objects nested %d levels deep, over the limit of %d", h.h, maxObjectDepth)
	}
	return nil
}

func lexRefs(n *snode, top bool, d *sdef) {
	if n.ref != nil {
		d.refs = append(d.refs, n.ref.idx)
		if top {
			d.top = append(d.top, n.ref.idx)
		}
	}
	for _, b := range n.anyOf {
		lexRefs(b, top, d)
	}
	for _, p := range n.props {
		d.localOpt = d.localOpt || p.optional
		lexRefs(p.node, false, d)
	}
	if n.items != nil {
		lexRefs(n.items, false, d)
	}
}

// components returns the strongly connected components of a graph
// (Kosaraju, iterative so a long $ref chain cannot exhaust the stack), in
// topological order of the condensation: sources first.
func components(adj [][]int) (comp []int, comps [][]int) {
	n := len(adj)
	visited := make([]bool, n)
	post := make([]int, 0, n)
	type frame struct{ v, i int }
	var stack []frame
	for s := range n {
		if visited[s] {
			continue
		}
		visited[s] = true
		stack = append(stack[:0], frame{s, 0})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.i < len(adj[f.v]) {
				w := adj[f.v][f.i]
				f.i++
				if !visited[w] {
					visited[w] = true
					stack = append(stack, frame{w, 0})
				}
				continue
			}
			post = append(post, f.v)
			stack = stack[:len(stack)-1]
		}
	}
	radj := make([][]int, n)
	for v, ws := range adj {
		for _, w := range ws {
			radj[w] = append(radj[w], v)
		}
	}
	comp = make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	for i := n - 1; i >= 0; i-- {
		s := post[i]
		if comp[s] >= 0 {
			continue
		}
		ci := len(comps)
		comps = append(comps, nil)
		comp[s] = ci
		work := []int{s}
		for len(work) > 0 {
			v := work[len(work)-1]
			work = work[:len(work)-1]
			comps[ci] = append(comps[ci], v)
			for _, w := range radj[v] {
				if comp[w] < 0 {
					comp[w] = ci
					work = append(work, w)
				}
			}
		}
	}
	return comp, comps
}

type height struct {
	h   int
	ptr string // the deepest object
}

func heightOf(n *snode, comp int, hs []height) height {
	var best height
	take := func(h height) {
		if h.h > best.h {
			best = h
		}
	}
	if n.ref != nil && n.ref.comp != comp {
		take(hs[n.ref.comp])
	}
	for _, b := range n.anyOf {
		take(heightOf(b, comp, hs))
	}
	if n.items != nil {
		take(heightOf(n.items, comp, hs))
	}
	for _, p := range n.props {
		take(heightOf(p.node, comp, hs))
	}
	if slices.Contains(n.types, "object") {
		if best.h == 0 {
			best.ptr = n.ptr
		}
		best.h++
	}
	return best
}

func (c *converter) optReachable(n *snode) bool {
	if n.optMemo == 0 {
		r := n.ref != nil && n.ref.hasOpt
		for _, p := range n.props {
			r = r || p.optional || c.optReachable(p.node)
		}
		if n.items != nil {
			r = c.optReachable(n.items) || r
		}
		for _, b := range n.anyOf {
			r = c.optReachable(b) || r
		}
		n.optMemo = 1 + int8(boolInt(r))
	}
	return n.optMemo == 2
}

func (c *converter) nullPaths(root *snode) ([]NullPath, error) {
	rel, err := c.rel(root, 0)
	if err != nil || len(rel) == 0 {
		return nil, err
	}
	paths := make([]NullPath, len(rel))
	for i, p := range rel {
		paths[i] = slices.Clone(p)
	}
	slices.SortFunc(paths, func(a, b NullPath) int { return slices.Compare(a, b) })
	if err := c.conflicts(compile(paths), []*snode{root}, nil); err != nil {
		return nil, err
	}
	return paths, nil
}

// rel returns the null paths below n, relative to n's value location.
// Recursive definitions have none (analyze made sure), so this terminates.
func (c *converter) rel(n *snode, depth int) ([]NullPath, error) {
	if depth > maxWalkDepth {
		return nil, fail(n.ptr, "$ref", "schemas nested too deeply through $ref")
	}
	if !c.optReachable(n) {
		return nil, nil
	}
	var list []NullPath
	var seen map[string]bool
	add := func(p NullPath) error {
		k := pathKey(p)
		if seen[k] {
			return nil
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[k] = true
		list = append(list, p)
		c.work += len(p)
		if len(list) > maxNullPaths || c.work > maxPathWork {
			return fail(n.ptr, "", "more than %d optional properties once $refs are expanded", maxNullPaths)
		}
		return nil
	}
	sub := func(child *snode, prefix string) error {
		ps, err := c.rel(child, depth+1)
		if err != nil {
			return err
		}
		for _, p := range ps {
			q := make(NullPath, 0, len(p)+1)
			if err := add(append(append(q, prefix), p...)); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range n.props {
		if p.optional {
			if err := add(NullPath{p.name}); err != nil {
				return nil, err
			}
		}
		if err := sub(p.node, p.name); err != nil {
			return nil, err
		}
	}
	if n.items != nil {
		if err := sub(n.items, AnyItem); err != nil {
			return nil, err
		}
	}
	same := func(ps []NullPath) error {
		for _, p := range ps {
			if err := add(p); err != nil {
				return err
			}
		}
		return nil
	}
	for _, b := range n.anyOf {
		ps, err := c.rel(b, depth+1)
		if err == nil {
			err = same(ps)
		}
		if err != nil {
			return nil, err
		}
	}
	if d := n.ref; d != nil {
		if !d.relDone {
			ps, err := c.rel(d.node, depth+1)
			if err != nil {
				return nil, err
			}
			d.rel, d.relDone = ps, true
		}
		if err := same(d.rel); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// pathKey is an injective encoding of a path, for deduplication.
func pathKey(p NullPath) string {
	var b strings.Builder
	for _, e := range p {
		b.WriteString(strconv.Itoa(len(e)))
		b.WriteByte(':')
		b.WriteString(e)
	}
	return b.String()
}

// conflicts fails when stripping a null at some path could remove a null
// that another part of the schema (an anyOf branch or another use of a
// definition) at the same location requires: a required property that
// accepts null, or a null inside an enum or const value. at holds the
// schemas that may describe the value at t's location.
func (c *converter) conflicts(t *trie, at []*snode, path NullPath) error {
	if len(path) > maxWalkDepth {
		return fail(at[0].ptr, "", "schemas nested too deeply")
	}
	cl := closure(at)
	c.conflictWork += len(cl) * (1 + len(t.kids))
	if c.conflictWork > maxConflictWork {
		return fail(at[0].ptr, "", "schema too complex to check its null paths (too many anyOf branches and optional properties)")
	}
	for _, n := range cl {
		for i, v := range n.enum {
			if t.wouldStrip(v) {
				return fail(n.ptr+"/enum/"+strconv.Itoa(i), "enum", "enum value holds a null that strict mode would strip, at a property it makes nullable elsewhere (%s)", formatPath(path))
			}
		}
		if n.hasConst && t.wouldStrip(n.constVal) {
			return fail(n.ptr+"/const", "const", "const value holds a null that strict mode would strip, at a property it makes nullable elsewhere (%s)", formatPath(path))
		}
	}
	for _, k := range t.kids {
		var next []*snode
		for _, n := range cl {
			if i, ok := slices.BinarySearchFunc(n.props, k.name, func(p sprop, name string) int { return strings.Compare(p.name, name) }); ok {
				p := n.props[i]
				if k.node.terminal && !p.optional && acceptsNull(p.node) {
					return fail(n.ptr+"/required", "required", "required property %q accepts null, but strict mode makes the same location (%s) nullable elsewhere and would strip the null", k.name, formatPath(append(slices.Clip(path), k.name)))
				}
				next = append(next, p.node)
			}
			if k.name == AnyItem && n.items != nil {
				next = append(next, n.items)
			}
		}
		if len(next) > 0 && len(k.node.kids) > 0 {
			if err := c.conflicts(k.node, next, append(slices.Clip(path), k.name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// closure returns the schemas reachable from at through anyOf branches and
// $refs: all that may describe the same value.
func closure(at []*snode) []*snode {
	seen := map[*snode]bool{}
	var out []*snode
	stack := slices.Clone(at)
	slices.Reverse(stack)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
		if n.ref != nil {
			stack = append(stack, n.ref.node)
		}
		for i := len(n.anyOf) - 1; i >= 0; i-- {
			stack = append(stack, n.anyOf[i])
		}
	}
	return out
}

func acceptsNull(n *snode) bool {
	for _, m := range closure([]*snode{n}) {
		if localNull(m) {
			return true
		}
	}
	return false
}

func formatPath(p NullPath) string {
	var b strings.Builder
	for i, e := range p {
		if e == AnyItem {
			b.WriteString(e)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e)
	}
	return b.String()
}

// StripNulls removes from args, in place, the null values that strict mode
// introduced: a property whose value is JSON null and whose path is in
// nullPaths. Other nulls stay (a required property the original schema let
// be null keeps its null), and a value whose shape differs from the schema
// is left alone. It returns args.
//
// It allocates nothing. With many paths, or for repeated calls, a
// [NullPaths] from [CompileNullPaths] shares the walk of common prefixes.
func StripNulls(args map[string]any, nullPaths []NullPath) map[string]any {
	for _, p := range nullPaths {
		if len(p) > 0 {
			stripPath(args, p)
		}
	}
	return args
}

func stripPath(v any, p NullPath) {
	for {
		switch x := v.(type) {
		case map[string]any:
			child, ok := x[p[0]]
			if !ok {
				return
			}
			if len(p) == 1 {
				if child == nil {
					delete(x, p[0])
				}
				return
			}
			v, p = child, p[1:]
		case []any:
			if p[0] != AnyItem || len(p) == 1 {
				return
			}
			for _, item := range x {
				stripPath(item, p[1:])
			}
			return
		default:
			return
		}
	}
}

// NullPaths is a compiled set of null paths: a trie that strips all of them
// in one walk of the arguments. Build it once per tool with
// [CompileNullPaths]; it is safe for concurrent use. A nil *NullPaths strips
// nothing.
type NullPaths struct {
	t *trie
}

// CompileNullPaths compiles paths (as returned by [StrictSchema]) for
// [NullPaths.Strip]. Empty paths are ignored.
func CompileNullPaths(paths []NullPath) *NullPaths {
	return &NullPaths{t: compile(paths)}
}

// Strip does what [StripNulls] does, with the compiled paths, and returns
// args.
func (np *NullPaths) Strip(args map[string]any) map[string]any {
	if np != nil && np.t != nil && args != nil {
		np.t.strip(args)
	}
	return args
}

type trie struct {
	terminal bool // a null here is removed
	kids     []trieKid
	item     *trie // the kid named AnyItem, for arrays
}

type trieKid struct {
	name string
	node *trie
}

func compile(paths []NullPath) *trie {
	root := &trie{}
	for _, p := range paths {
		if len(p) == 0 {
			continue
		}
		t := root
		for _, e := range p {
			i, ok := slices.BinarySearchFunc(t.kids, e, func(k trieKid, name string) int { return strings.Compare(k.name, name) })
			if !ok {
				t.kids = slices.Insert(t.kids, i, trieKid{name: e, node: &trie{}})
				if e == AnyItem {
					t.item = t.kids[i].node
				}
			}
			t = t.kids[i].node
		}
		t.terminal = true
	}
	return root
}

func (t *trie) strip(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range t.kids {
			cv, ok := x[k.name]
			if !ok {
				continue
			}
			if cv == nil {
				if k.node.terminal {
					delete(x, k.name)
				}
			} else if len(k.node.kids) > 0 {
				k.node.strip(cv)
			}
		}
	case []any:
		if it := t.item; it != nil && len(it.kids) > 0 {
			for _, e := range x {
				it.strip(e)
			}
		}
	}
}

// wouldStrip reports whether strip would change v.
func (t *trie) wouldStrip(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range t.kids {
			cv, ok := x[k.name]
			if ok && (cv == nil && k.node.terminal || cv != nil && k.node.wouldStrip(cv)) {
				return true
			}
		}
	case []any:
		if it := t.item; it != nil {
			for _, e := range x {
				if it.wouldStrip(e) {
					return true
				}
			}
		}
	}
	return false
}

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

// asObject reads a JSON object: a map[string]any as is, another map with
// string keys copied, and a value encoding/json turns into an object
// (a struct, a json.Marshaler) through a round trip.
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

// asArray reads a JSON array: []any as is, another slice or array copied,
// and a value encoding/json turns into an array through a round trip.
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
