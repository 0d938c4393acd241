package anthropic

import (
	"github.com/conduitmcp/conduit"
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
// Parse ignores the first two. Turn keeps them in the assistant message,
// as the API wants them back.

// The tool search tool's two variants. BM25 takes a query in words. Regex
// takes a Python regular expression over names, descriptions and argument
// names.
const (
	searchBM25Type  = "tool_search_tool_bm25_20251119"
	SearchBM25Name  = "tool_search_tool_bm25"
	searchRegexType = "tool_search_tool_regex_20251119"
	SearchRegexName = "tool_search_tool_regex"
)

// SearchOptions are the options of SearchTools.
type SearchOptions struct {
	// ToolsOptions: CacheLast marks the tool search tool with
	// cache_control. It is the last definition Claude sees up front.
	// Deferred tools are not part of the prompt. CacheTool is not used.
	ToolsOptions
	// Regex offers the regex variant instead of BM25.
	Regex bool
}

// searchTool returns the tool search tool's definition, the BM25 variant
// or with regex the regex one.
func searchTool(regex bool) map[string]any {
	if regex {
		return map[string]any{"type": searchRegexType, "name": SearchRegexName}
	}
	return map[string]any{"type": searchBM25Type, "name": SearchBM25Name}
}

// SearchTools returns a tool list in which Claude searches for the tools
// it needs. It lists:
//
//   - loaded's tools as [Tools] lists them, offered from the start;
//   - the tool search tool;
//   - deferred's tools with "defer_loading": true. Claude sees them only
//     once a search found them.
//
// The definitions are shared as Tools shares them. A tool in both sets is
// listed once, loaded.
func SearchTools(loaded, deferred *conduit.ToolSet, o *SearchOptions) []map[string]any {
	if o == nil {
		o = &SearchOptions{}
	}
	out := Tools(loaded, &ToolsOptions{})
	search := searchTool(o.Regex)
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
