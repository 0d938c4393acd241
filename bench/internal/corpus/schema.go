package corpus

import (
	"strings"
	"unicode"
)

// A small schema language for the synthetic servers, rendered in the
// dialects real servers emit: TypeScript/zod (draft-07, additionalProperties
// false), Python/pydantic (titles everywhere, optional values as anyOf with
// null, nested models hoisted to $defs) and Go (2020-12, additionalProperties
// false).

type node interface{ isNode() }

type prim struct {
	typ    string // string, integer, number, boolean
	enum   []string
	format string
	min    *float64
	max    *float64
	def    any
	desc   string
}

type object struct {
	name  string // model name, for $defs
	props []prop
	open  node // additionalProperties schema: an open map
	desc  string
}

type array struct {
	items    node
	minItems int
	desc     string
}

type union struct {
	kind string // anyOf or oneOf
	alts []node
	desc string
}

type prop struct {
	name string
	n    node
	req  bool
}

func (prim) isNode()    {}
func (*object) isNode() {}
func (array) isNode()   {}
func (union) isNode()   {}

func str(desc string) node                  { return prim{typ: "string", desc: desc} }
func strf(format, desc string) node         { return prim{typ: "string", format: format, desc: desc} }
func enum(desc string, vals ...string) node { return prim{typ: "string", enum: vals, desc: desc} }
func boolean(desc string) node              { return prim{typ: "boolean", desc: desc} }
func number(desc string) node               { return prim{typ: "number", desc: desc} }
func integer(desc string, lo, hi float64) node {
	return prim{typ: "integer", min: &lo, max: &hi, desc: desc}
}
func withDefault(n node, def any) node {
	p := n.(prim)
	p.def = def
	return p
}
func arr(items node, desc string) node { return array{items: items, desc: desc} }
func obj(name, desc string, props ...prop) *object {
	return &object{name: name, props: props, desc: desc}
}
func mapOf(values node, desc string) node  { return &object{open: values, desc: desc} }
func anyOf(desc string, alts ...node) node { return union{kind: "anyOf", alts: alts, desc: desc} }
func oneOf(desc string, alts ...node) node { return union{kind: "oneOf", alts: alts, desc: desc} }

// req is a required property, opt an optional one.
func req(name string, n node) prop { return prop{name, n, true} }
func opt(name string, n node) prop { return prop{name, n, false} }

type style int

const (
	styleZod style = iota
	stylePydantic
	styleGo
)

func (s style) String() string {
	return [...]string{"zod", "pydantic", "go"}[s]
}

type renderer struct {
	style style
	defs  map[string]any
}

// inputSchema renders a tool's argument object in the style.
func (s style) inputSchema(tool string, root *object) map[string]any {
	r := &renderer{style: s, defs: map[string]any{}}
	m := r.object(root, true)
	switch s {
	case styleZod:
		m["$schema"] = "http://json-schema.org/draft-07/schema#"
	case stylePydantic:
		m["title"] = pascal(tool) + "Arguments"
		if len(r.defs) > 0 {
			m["$defs"] = r.defs
		}
	case styleGo:
		m["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	}
	return m
}

func (r *renderer) node(n node) map[string]any {
	switch n := n.(type) {
	case prim:
		m := map[string]any{"type": n.typ}
		if len(n.enum) > 0 {
			vals := make([]any, len(n.enum))
			for i, v := range n.enum {
				vals[i] = v
			}
			m["enum"] = vals
		}
		if n.format != "" {
			m["format"] = n.format
		}
		if n.min != nil {
			m["minimum"] = *n.min
		}
		if n.max != nil {
			m["maximum"] = *n.max
		}
		if n.def != nil {
			m["default"] = n.def
		}
		desc(m, n.desc)
		return m
	case *object:
		if r.style == stylePydantic && n.name != "" {
			if _, ok := r.defs[n.name]; !ok {
				r.defs[n.name] = nil // reserve: recursion-safe
				d := r.object(n, false)
				d["title"] = n.name
				r.defs[n.name] = d
			}
			m := map[string]any{"$ref": "#/$defs/" + n.name}
			return m
		}
		return r.object(n, false)
	case array:
		m := map[string]any{"type": "array", "items": r.node(n.items)}
		if n.minItems > 0 {
			m["minItems"] = n.minItems
		}
		desc(m, n.desc)
		return m
	case union:
		alts := make([]any, len(n.alts))
		for i, a := range n.alts {
			alts[i] = r.node(a)
		}
		m := map[string]any{n.kind: alts}
		desc(m, n.desc)
		return m
	}
	panic("unknown node")
}

func (r *renderer) object(o *object, root bool) map[string]any {
	m := map[string]any{"type": "object"}
	if o.open != nil {
		m["additionalProperties"] = r.node(o.open)
		desc(m, o.desc)
		return m
	}
	props := map[string]any{}
	var required []any
	for _, p := range o.props {
		s := r.node(p.n)
		if r.style == stylePydantic {
			if !p.req {
				// Optional[X] = None
				d := s["description"]
				delete(s, "description")
				s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}, "default": nil}
				if d != nil {
					s["description"] = d
				}
			}
			s["title"] = title(p.name)
		}
		props[p.name] = s
		if p.req {
			required = append(required, p.name)
		}
	}
	m["properties"] = props
	if len(required) > 0 {
		m["required"] = required
	}
	if r.style != stylePydantic {
		m["additionalProperties"] = false
	}
	if !root {
		desc(m, o.desc)
	}
	return m
}

func desc(m map[string]any, d string) {
	if d != "" {
		m["description"] = d
	}
}

func title(name string) string {
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' })
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

func pascal(name string) string {
	t := title(name)
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, t)
}
