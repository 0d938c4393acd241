package driver

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// snode is one converted schema. out is what is emitted for it, not yet
// made nullable. The other fields keep what the analysis passes need.
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
	// A schema without "type" applies its type-specific keywords to its
	// enum or const values. With a type, keywords for other types have no
	// effect.
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
