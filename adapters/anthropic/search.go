package anthropic

import (
	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
)

// The tool search tool: Claude searches the definitions of deferred tools,
// and the API loads those it finds. Deferred tools are sent with
// "defer_loading": true and kept out of its context. The search runs on
// Anthropic's side, in one response:
//
//   - a server_tool_use block;
//   - a tool_search_tool_result block, with tool_reference blocks naming
//     what was found;
//   - tool_use blocks that call them, answered as any other.
//
// parse ignores the first two. turn keeps them in the assistant message,
// as the API wants them back.

// The tool search tool's two variants. BM25 takes a query in words. Regex
// takes a Python regular expression over names, descriptions and argument
// names.
const (
	searchBM25Type  = "tool_search_tool_bm25_20251119"
	searchBM25Name  = "tool_search_tool_bm25"
	searchRegexType = "tool_search_tool_regex_20251119"
	searchRegexName = "tool_search_tool_regex"
)

// searchTool returns the tool search tool's definition, the BM25 variant
// or with regex the regex one.
func searchTool(regex bool) map[string]any {
	if regex {
		return map[string]any{"type": searchRegexType, "name": searchRegexName}
	}
	return map[string]any{"type": searchBM25Type, "name": searchBM25Name}
}

// searchTools returns a tool list in which Claude searches for the tools
// it needs. It lists:
//
//   - loaded's tools as listTools lists them, offered from the start;
//   - the tool search tool;
//   - deferred's tools with "defer_loading": true. Claude sees them only
//     once a search found them.
//
// The definitions are shared as listTools shares them. A tool in both sets
// is listed once, loaded. SearchRegex offers the regex variant. CacheLast
// marks the search tool: the last definition Claude sees up front, since
// deferred tools are not part of the prompt. CacheTool is not used.
func searchTools(loaded, deferred *conduit.ToolSet, o *driver.ListOptions) []map[string]any {
	if o == nil {
		o = &driver.ListOptions{}
	}
	out := listTools(loaded, nil)
	search := searchTool(o.SearchRegex)
	if o.CacheLast {
		search["cache_control"] = cacheControl(o.CacheTTL)
	}
	out = append(out, search)
	for t := range deferred.All() {
		if _, ok := loaded.Lookup(t.Exposed); ok {
			continue
		}
		def := t.Memo(defKey{}, func() any { return definition(t) }).(map[string]any)
		cp := make(map[string]any, len(def)+1)
		for k, v := range def {
			cp[k] = v
		}
		cp["defer_loading"] = true
		out = append(out, cp)
	}
	return out
}
