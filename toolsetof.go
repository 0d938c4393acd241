package conduit

import (
	"maps"
	"slices"
)

// ToolSetOf returns a tool set of the given tools, in the order given, as
// they are. Their exposed names and servers are kept. Their memos are
// shared: definitions already built for a provider. It composes what a
// model is offered from tool sets at hand. An example is the tools a
// search revealed one turn after another, appended after those offered
// before. A tool given twice is kept once. A nil one, or one without its
// *mcp.Tool, is ignored. Two tools with the same exposed name are both
// left out and reported as SkipCollision, as in [NewToolSet].
func ToolSetOf(tools ...*Tool) *ToolSet {
	ts := &ToolSet{byName: make(map[string]*Tool, len(tools)), byOrig: make(map[serverTool]*Tool, len(tools))}
	seen := make(map[*Tool]bool, len(tools))
	count := make(map[string]int, len(tools))
	for _, t := range tools {
		if t == nil || t.Tool == nil || seen[t] {
			continue
		}
		seen[t] = true
		count[t.Exposed]++
	}
	clear(seen)
	for _, t := range tools {
		if t == nil || t.Tool == nil || seen[t] {
			continue
		}
		seen[t] = true
		if count[t.Exposed] > 1 {
			ts.skipped = append(ts.skipped, Skipped{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Reason: SkipCollision,
				Detail: "another tool of the set has the same exposed name; both are left out"})
			continue
		}
		ts.add(t)
	}
	return ts
}

// With returns ts with tools appended after its own, in the order given.
// It keeps the rest of ts: what it left out and why, its warnings, how
// its names were made. It offers a model tools the program answers itself
// (LocalTool) beside a hub's. A tool whose exposed name ts already offers
// is left out and reported as SkipCollision. So is a tool given twice. ts
// is not modified.
func (ts *ToolSet) With(tools ...*Tool) *ToolSet {
	if ts == nil {
		return ToolSetOf(tools...)
	}
	out := &ToolSet{
		tools:   slices.Clone(ts.tools),
		byName:  maps.Clone(ts.byName),
		byOrig:  maps.Clone(ts.byOrig),
		skipped: slices.Clone(ts.skipped),
		drift:   ts.drift,
		listed:  ts.listed,
		named:   ts.named, namespace: ts.namespace, prefix: ts.prefix,
	}
	for _, t := range tools {
		if t == nil || t.Tool == nil {
			continue
		}
		if _, taken := out.byName[t.Exposed]; taken {
			out.skipped = append(out.skipped, Skipped{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Reason: SkipCollision,
				Detail: "the tool set already offers a tool of this exposed name; this one is left out"})
			continue
		}
		out.add(t)
	}
	return out
}
