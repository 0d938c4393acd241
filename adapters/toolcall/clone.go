package toolcall

// CloneJSON returns a deep copy of a decoded JSON value: maps and slices
// are copied all the way down, other values are shared (strings, numbers,
// booleans and nil are immutable; any other value is taken as it is).
func CloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return CloneArgs(x)
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = CloneJSON(e)
		}
		return out
	default:
		return v
	}
}

// CloneArgs returns a deep copy of a call's arguments, so that null
// stripping and hooks that rewrite them never reach the caller's response.
func CloneArgs(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = CloneJSON(e)
	}
	return out
}
