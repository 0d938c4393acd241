package openai_test

import (
	"fmt"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/openai"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ExampleResponsesDriver_toolSearch() {
	// A hub's tools: exposed as server__tool.
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true},
		conduit.ServerTools{Server: "crm", Tools: []*mcp.Tool{
			{Name: "get_customer_profile", Description: "Fetch a customer profile.", InputSchema: map[string]any{"type": "object",
				"properties": map[string]any{"customer_id": map[string]any{"type": "string"}}, "required": []any{"customer_id"}}},
		}})
	// Nothing loaded up front: tool_search, then the crm namespace.
	l, err := openai.ResponsesDriver().(driver.Searcher).SearchTools(conduit.ToolSetOf(), ts, &driver.ListOptions{})
	if err != nil {
		panic(err)
	}
	printJSON(l.Tools)
	// The model's call names the namespace and the function in it.
	raws, _ := adapters.OpenAIResponses.Parse(`{"output": [{"type": "function_call", "call_id": "call_1",
		"namespace": "crm", "name": "get_customer_profile", "arguments": "{\"customer_id\": \"c1\"}"}]}`)
	fmt.Println(toolcall.Resolve(raws, ts)[0].Name)
	// Output:
	// [
	//   {
	//     "type": "tool_search"
	//   },
	//   {
	//     "description": "The tool of the MCP server crm.",
	//     "name": "crm",
	//     "tools": [
	//       {
	//         "defer_loading": true,
	//         "description": "Fetch a customer profile.",
	//         "name": "get_customer_profile",
	//         "parameters": {
	//           "additionalProperties": false,
	//           "properties": {
	//             "customer_id": {
	//               "type": "string"
	//             }
	//           },
	//           "required": [
	//             "customer_id"
	//           ],
	//           "type": "object"
	//         },
	//         "strict": true,
	//         "type": "function"
	//       }
	//     ],
	//     "type": "namespace"
	//   }
	// ]
	// crm__get_customer_profile
}
