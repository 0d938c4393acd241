package driver

import (
	"slices"
	"strconv"
	"strings"
)

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
// that another part of the schema requires at the same location. That
// part is an anyOf branch or another use of a definition. It requires the
// null by a required property that accepts null. Or it has a null inside
// an enum or const value. at holds the schemas that may describe the
// value at t's location.
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
// $refs. These are all that may describe the same value.
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
