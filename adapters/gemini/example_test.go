package gemini_test

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/gemini"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func printJSON(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func exampleToolSet() *conduit.ToolSet {
	return conduit.NewToolSet(nil, conduit.ServerTools{Server: "home", Tools: []*mcp.Tool{{
		Name: "set_light_values",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"brightness": map[string]any{"type": "integer"},
			"color_temp": map[string]any{"type": "string", "enum": []any{"daylight", "cool", "warm"}},
		}, "required": []any{"brightness", "color_temp"}},
	}}})
}

func Example_tools() {
	// Wrap the declarations as {"functionDeclarations": ...} in "tools".
	printJSON(map[string]any{"functionDeclarations": gemini.Driver().Tools(exampleToolSet(), nil)})
	// Output:
	// {
	//   "functionDeclarations": [
	//     {
	//       "description": "",
	//       "name": "set_light_values",
	//       "parametersJsonSchema": {
	//         "properties": {
	//           "brightness": {
	//             "type": "integer"
	//           },
	//           "color_temp": {
	//             "enum": [
	//               "daylight",
	//               "cool",
	//               "warm"
	//             ],
	//             "type": "string"
	//           }
	//         },
	//         "required": [
	//           "brightness",
	//           "color_temp"
	//         ],
	//         "type": "object"
	//       }
	//     }
	//   ]
	// }
}

func Example_functionCalls() {
	response := `{"candidates": [{"content": {"role": "model", "parts": [
	  {"functionCall": {"id": "8f2b1a3c", "name": "set_light_values", "args": {"brightness": 25, "color_temp": "warm"}}},
	  {"functionCall": {"name": "play_music", "args": {}}}
	]}}]}`
	calls, rejected, err := adapters.Gemini.ToolCalls(response, exampleToolSet())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range calls {
		fmt.Println(c.ID, c.Tool, c.Args)
	}
	printJSON(rejected)
	// Output:
	// 8f2b1a3c set_light_values map[brightness:25 color_temp:warm]
	// [
	//   {
	//     "functionResponse": {
	//       "name": "play_music",
	//       "response": {
	//         "error": "Unknown tool \"play_music\": it is not among the tools offered."
	//       }
	//     }
	//   }
	// ]
}

func Example_answer() {
	calls, _, _ := adapters.Gemini.ToolCalls(`{"candidates": [{"content": {"parts": [
	  {"functionCall": {"id": "8f2b1a3c", "name": "set_light_values", "args": {"brightness": 25, "color_temp": "warm"}}}]}}]}`,
		exampleToolSet())
	// A result with structuredContent answers with the object itself.
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: `{"brightness":25,"colorTemperature":"warm"}`}},
		StructuredContent: map[string]any{"brightness": 25, "colorTemperature": "warm"},
	}
	// Send the parts as {"role": "user", "parts": [...]}.
	printJSON(adapters.Gemini.Answer(calls[0], res, nil, nil))
	// Output:
	// {
	//   "functionResponse": {
	//     "id": "8f2b1a3c",
	//     "name": "set_light_values",
	//     "response": {
	//       "output": {
	//         "brightness": 25,
	//         "colorTemperature": "warm"
	//       }
	//     }
	//   }
	// }
}
