package openai_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func printJSON(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func exampleToolSet() *conduit.ToolSet {
	return conduit.NewToolSet(nil, conduit.ServerTools{Server: "weather", Tools: []*mcp.Tool{{
		Name:        "get_weather",
		Description: "Get current temperature for a given location.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"location": map[string]any{"type": "string"},
			"units":    map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
		}, "required": []any{"location"}},
	}}})
}

func Example_tools() {
	l, err := adapters.ListToolSet(exampleToolSet(), adapters.OpenAIResponses, nil)
	if err != nil {
		panic(err)
	}
	printJSON(l.Tools)
	fmt.Println(l.NullPaths)
	// Output:
	// [
	//   {
	//     "description": "Get current temperature for a given location.",
	//     "name": "get_weather",
	//     "parameters": {
	//       "additionalProperties": false,
	//       "properties": {
	//         "location": {
	//           "type": "string"
	//         },
	//         "units": {
	//           "enum": [
	//             "celsius",
	//             "fahrenheit",
	//             null
	//           ],
	//           "type": [
	//             "string",
	//             "null"
	//           ]
	//         }
	//       },
	//       "required": [
	//         "location",
	//         "units"
	//       ],
	//       "type": "object"
	//     },
	//     "strict": true,
	//     "type": "function"
	//   }
	// ]
	// map[get_weather:[[units]]]
}

func Example_toolCalls() {
	response := `{
	  "output": [
	    {"type": "reasoning", "id": "rs_1", "summary": []},
	    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"location\":\"Paris, France\",\"units\":null}"},
	    {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "get_weather", "arguments": "{\"location\":"}
	  ]
	}`
	calls, rejected, err := adapters.OpenAIResponses.ToolCalls(response, exampleToolSet())
	if err != nil {
		fmt.Println(err)
		return
	}
	l, _ := adapters.ListToolSet(exampleToolSet(), adapters.OpenAIResponses, nil)
	for _, c := range calls {
		// Strict mode's nulls are removed before the call is sent.
		fmt.Println(c.ID, c.Tool, driver.StripNulls(c.Args, l.NullPaths[c.Name]))
	}
	printJSON(rejected)
	// Output:
	// call_1 get_weather map[location:Paris, France]
	// [
	//   {
	//     "call_id": "call_2",
	//     "output": "Error: Invalid arguments for get_weather: the arguments are not valid JSON (unexpected end of JSON input).",
	//     "type": "function_call_output"
	//   }
	// ]
}

func Example_answer() {
	calls, _, _ := adapters.OpenAIChat.ToolCalls(`{"choices": [{"message": {"role": "assistant", "tool_calls": [
	  {"id": "call_abc123", "type": "function", "function": {"name": "get_weather", "arguments": "{\"location\": \"Boston, MA\"}"}}]}}]}`,
		exampleToolSet())
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "12°C, light rain"}}}
	printJSON(adapters.OpenAIChat.Answer(calls[0], res, nil, nil))

	// OpenAI has no error flag: an isError result, or a failure, starts
	// with "Error: ".
	failed := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "station offline"}}}
	printJSON(adapters.OpenAIResponses.Answer(calls[0], failed, nil, nil))
	// Output:
	// {
	//   "content": "12°C, light rain",
	//   "role": "tool",
	//   "tool_call_id": "call_abc123"
	// }
	// {
	//   "call_id": "call_abc123",
	//   "output": "Error: station offline",
	//   "type": "function_call_output"
	// }
}
