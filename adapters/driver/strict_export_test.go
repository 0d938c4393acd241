package driver

// Exported to package openai_test: the null-path trie, to test that it
// agrees with StripNulls and to benchmark stripping with it.

// WouldStrip reports whether StripNulls(v, paths) would change v, as the
// conversion's conflict check works it out.
func WouldStrip(paths []NullPath, v any) bool { return compile(paths).wouldStrip(v) }

// CompiledStrip compiles paths into a trie once and returns a func that
// strips them in one walk: what StripNulls would cost with a trie.
func CompiledStrip(paths []NullPath) func(map[string]any) map[string]any {
	t := compile(paths)
	return func(args map[string]any) map[string]any {
		if args != nil {
			t.strip(args)
		}
		return args
	}
}

// strip removes the nulls at t's paths from v in one walk, sharing common
// prefixes.
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
