package openai

import (
	"slices"
	"strings"
)

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
