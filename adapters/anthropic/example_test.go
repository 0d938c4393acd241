package anthropic_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/anthropic"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func printJSON(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// The tool set a hub or client lists; here built by hand.
func exampleToolSet() *conduit.ToolSet {
	return conduit.NewToolSet(nil, conduit.ServerTools{Server: "weather", Tools: []*mcp.Tool{{
		Name:        "get_weather",
		Description: "Get the current weather in a given location",
		InputSchema: map[string]any{"type": "object",
			"properties": map[string]any{"location": map[string]any{"type": "string"}}, "required": []any{"location"}},
	}}})
}

func Example_tools() {
	printJSON(anthropic.Driver().Tools(exampleToolSet(), &driver.ListOptions{CacheLast: true}))
	// Output:
	// [
	//   {
	//     "cache_control": {
	//       "type": "ephemeral"
	//     },
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

func Example_toolCalls() {
	response := `{
	  "role": "assistant",
	  "stop_reason": "tool_use",
	  "content": [
	    {"type": "text", "text": "I'll check the weather."},
	    {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"location": "San Francisco, CA"}},
	    {"type": "tool_use", "id": "toolu_02", "name": "get_time", "input": {"timezone": "America/Los_Angeles"}}
	  ]
	}`
	calls, rejected, err := adapters.Anthropic.ToolCalls(response, exampleToolSet())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range calls {
		fmt.Println(c.ID, c.Server, c.Tool, c.Args)
	}
	// get_time was not offered: its answer is ready, and nothing is sent.
	printJSON(rejected)
	// Output:
	// toolu_01 weather get_weather map[location:San Francisco, CA]
	// [
	//   {
	//     "content": [
	//       {
	//         "text": "Unknown tool \"get_time\": it is not among the tools offered.",
	//         "type": "text"
	//       }
	//     ],
	//     "is_error": true,
	//     "tool_use_id": "toolu_02",
	//     "type": "tool_result"
	//   }
	// ]
}

func Example_answer() {
	calls, _, _ := adapters.Anthropic.ToolCalls(`{"content": [{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"location": "Paris"}}]}`, exampleToolSet())

	// The server's result, as the pipeline returns it.
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "15 degrees"}}}
	printJSON(adapters.Anthropic.Answer(calls[0], res, nil, nil))

	// A failure is answered with is_error.
	printJSON(adapters.Anthropic.Answer(calls[0], nil, &conduit.Error{Kind: conduit.ErrTimeout, Message: "The call timed out."}, nil))
	// Output:
	// {
	//   "content": [
	//     {
	//       "text": "15 degrees",
	//       "type": "text"
	//     }
	//   ],
	//   "tool_use_id": "toolu_01",
	//   "type": "tool_result"
	// }
	// {
	//   "content": [
	//     {
	//       "text": "The call timed out.",
	//       "type": "text"
	//     }
	//   ],
	//   "is_error": true,
	//   "tool_use_id": "toolu_01",
	//   "type": "tool_result"
	// }
}
