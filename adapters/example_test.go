package adapters_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// weatherHub starts a hub over an in-process MCP server, "weather", with
// two tools: get_forecast (allowed) and set_alert (asks for approval,
// which this hub's approver refuses).
func weatherHub() *conduit.Hub {
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{
		Name:        "get_forecast",
		Description: "Gets the forecast for a city.",
		InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
			"required":   []any{"city"},
		},
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ City string }
		json.Unmarshal(req.Params.Arguments, &args)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Sunny in " + args.City + ", 22°C."}}}, nil
	})
	srv.AddTool(&mcp.Tool{
		Name:        "set_alert",
		Description: "Sets a weather alert.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "alert set"}}}, nil
	})
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), serverEnd, nil); err != nil {
		log.Fatal(err)
	}
	hub, err := conduit.NewHub(context.Background(), conduit.HubOptions{
		Servers: []conduit.Server{{ID: "weather", Transport: clientEnd}},
		Policy:  conduit.NewPolicy(conduit.Allow("weather/get_*"), conduit.Ask("weather/*")),
		Approver: func(context.Context, conduit.ApprovalRequest) conduit.Approval {
			return conduit.Reject("alerts are set by the on-call team")
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	return hub
}

func printJSON(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func ExampleTools() {
	hub := weatherHub()
	defer hub.Close()

	// The tool list of an Anthropic Messages request, the last tool marked
	// so that the whole list is cached as a prompt prefix.
	listing, err := adapters.Tools(context.Background(), hub, adapters.Anthropic, &adapters.ToolsOptions{CacheLast: true})
	if err != nil {
		log.Fatal(err)
	}
	printJSON(listing.Tools)

	// OpenAI strict mode made the optional "days" nullable; the listing's
	// NullPaths let ExecuteToolCalls remove the nulls the model sends.
	openaiListing, err := adapters.Tools(context.Background(), hub, adapters.OpenAIResponses, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(openaiListing.NullPaths)
	// Output:
	// [
	//   {
	//     "description": "Gets the forecast for a city.",
	//     "input_schema": {
	//       "properties": {
	//         "city": {
	//           "type": "string"
	//         },
	//         "days": {
	//           "type": "integer"
	//         }
	//       },
	//       "required": [
	//         "city"
	//       ],
	//       "type": "object"
	//     },
	//     "name": "weather__get_forecast"
	//   },
	//   {
	//     "cache_control": {
	//       "type": "ephemeral"
	//     },
	//     "description": "Sets a weather alert.",
	//     "input_schema": {
	//       "properties": {
	//         "city": {
	//           "type": "string"
	//         }
	//       },
	//       "type": "object"
	//     },
	//     "name": "weather__set_alert"
	//   }
	// ]
	// map[weather__get_forecast:[[days]] weather__set_alert:[[city]]]
}

func ExampleExecuteToolCalls() {
	hub := weatherHub()
	defer hub.Close()
	ctx := context.Background()
	listing, err := adapters.Tools(ctx, hub, adapters.OpenAIChat, nil)
	if err != nil {
		log.Fatal(err)
	}

	// The Chat Completions response, as the model wrote it: three calls at
	// once, one to a tool it was never offered.
	response := []byte(`{
	  "choices": [{
	    "index": 0,
	    "finish_reason": "tool_calls",
	    "message": {
	      "role": "assistant",
	      "content": null,
	      "tool_calls": [
	        {"id": "call_1", "type": "function", "function": {"name": "weather__get_forecast", "arguments": "{\"city\":\"Paris\",\"days\":null}"}},
	        {"id": "call_2", "type": "function", "function": {"name": "weather__set_alert", "arguments": "{\"city\":\"Paris\"}"}},
	        {"id": "call_3", "type": "function", "function": {"name": "weather__delete_city", "arguments": "{}"}}
	      ]
	    }
	  }]
	}`)
	exec, err := adapters.ExecuteToolCalls(ctx, hub, adapters.OpenAIChat, response, &adapters.ExecOptions{
		ToolSet:     listing.ToolSet,
		NullPaths:   listing.NullPaths,
		CallTimeout: 30 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	// One tool message per call, in the model's order: append them to the
	// conversation after the assistant message.
	printJSON(exec.Results)
	fmt.Println("halted:", exec.Halted, "taint:", exec.Taint(nil))
	// Output:
	// [
	//   {
	//     "content": "Sunny in Paris, 22°C.",
	//     "role": "tool",
	//     "tool_call_id": "call_1"
	//   },
	//   {
	//     "content": "Error: The call to weather__set_alert was denied: alerts are set by the on-call team.",
	//     "role": "tool",
	//     "tool_call_id": "call_2"
	//   },
	//   {
	//     "content": "Error: Unknown tool \"weather__delete_city\": it is not among the tools offered.",
	//     "role": "tool",
	//     "tool_call_id": "call_3"
	//   }
	// ]
	// halted: false taint: [weather]
}

func ExampleParseProvider() {
	p, err := adapters.ParseProvider("openai-responses")
	fmt.Println(p, err, p == adapters.OpenAIResponses)
	// Output: openai-responses <nil> true
}
