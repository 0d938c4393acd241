package conduit

// ToolSetOf returns a tool set of the given tools, in the order given, as
// they are: their exposed names and servers are kept, and their memos
// (definitions already built for a provider) shared. It composes what a
// model is offered from tool sets at hand, such as the tools a search
// revealed one turn after another, appended after those offered before.
// A tool given twice is kept once, a nil one (or one without its
// *mcp.Tool) is ignored; two tools with the same exposed name
// are both left out and reported as SkipCollision, as in [NewToolSet].
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
