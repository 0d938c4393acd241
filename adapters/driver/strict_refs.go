package driver

import (
	"slices"
)

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

	// A $ref cycle may stay at one value location, through $refs and anyOf
	// branches only. It describes no value and makes validators loop.
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

// components returns the strongly connected components of a graph, in
// topological order of the condensation: sources first. It is Kosaraju's
// algorithm, iterative so a long $ref chain cannot exhaust the stack.
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
