package driver

import (
	"slices"
	"strings"
)

// StripNulls removes from args, in place, the null values that strict mode
// introduced. Such a property has the value JSON null, and its path is in
// nullPaths. Other nulls stay. A required property the original schema let
// be null keeps its null. A value whose shape differs from the schema is
// left alone. It returns args.
//
// It allocates nothing. Each path is walked on its own. Real tools'
// argument maps have a few paths, a few levels deep. On them, that beats
// compiling the paths into a trie on every call. BenchmarkStripNulls
// measures it.
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

// trie is a compiled set of null paths. The conversion asks it what
// StripNulls would strip, to find nulls the schema requires elsewhere.
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

// wouldStrip reports whether StripNulls with the paths of t would change v.
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
