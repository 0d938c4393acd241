package anthropic_test

import (
	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
)

func Example_searchTools() {
	// Nothing loaded up front: the BM25 tool search tool, marked for the
	// prompt cache, and the weather tool deferred.
	printJSON(searchTools(conduit.ToolSetOf(), exampleToolSet(), &driver.ListOptions{CacheLast: true}))
	// Output:
	// [
	//   {
	//     "cache_control": {
	//       "type": "ephemeral"
	//     },
	//     "name": "tool_search_tool_bm25",
	//     "type": "tool_search_tool_bm25_20251119"
	//   },
	//   {
	//     "defer_loading": true,
	//     "description": "Get the current weather in a given location",
	//     "input_schema": {
	//       "properties": {
	//         "location": {
	//           "type": "string"
	//         }
	//       },
	//       "required": [
	//         "location"
	//       ],
	//       "type": "object"
	//     },
	//     "name": "get_weather"
	//   }
	// ]
}
