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
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// weatherHub starts a hub over an in-process MCP server, "weather", with
// two tools: get_forecast (allowed) and set_alert (asks for approval,
// which this hub's approver refuses).
func weatherHub() *conduit.Hub {
	return weatherHubWith(conduit.NewPolicy(conduit.Allow("weather/get_*"), conduit.Ask("weather/*")))
}

// weatherHubWith is weatherHub with another policy.
func weatherHubWith(policy *conduit.Policy) *conduit.Hub {
	return weatherHubApproving(policy, func(context.Context, conduit.ApprovalRequest) conduit.Approval {
		return conduit.Reject("alerts are set by the on-call team")
	})
}

// weatherHubApproving is weatherHub with another policy and approver.
func weatherHubApproving(policy *conduit.Policy, approver conduit.Approver) *conduit.Hub {
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
	hub, err := conduit.NewHub(context.Background(), []conduit.Server{{ID: "weather", Transport: clientEnd}}, &conduit.Options{Policy: policy,
		Approver: approver,
		// Claims of resumed states: this process's memory here; a SQLite
		// file (store/sqlitestore) for the processes of one machine, Redis
		// (store/redisstore) for several.
		Store: store.NewMemory()})
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
	listing, err := adapters.Tools(context.Background(), hub, adapters.Anthropic, &adapters.ToolsOptions{Listing: adapters.ListingOptions{CacheLast: true}})
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
	exec, err := adapters.ExecuteToolCalls(ctx, hub, adapters.OpenAIChat, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, NullPaths: listing.NullPaths, TurnOptions: adapters.TurnOptions{CallTimeout: 30 * time.Second}})
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

func ExampleReadToolCalls() {
	hub := weatherHub()
	defer hub.Close()
	ctx := context.Background()
	listing, err := adapters.Tools(ctx, hub, adapters.OpenAIChat, nil)
	if err != nil {
		log.Fatal(err)
	}
	response := []byte(`{"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
	  {"id": "call_1", "type": "function", "function": {"name": "weather__get_forecast", "arguments": "{\"city\":\"Oslo\",\"days\":null}"}},
	  {"id": "call_2", "type": "function", "function": {"name": "weather__delete_city", "arguments": "{}"}}]}}]}`)
	o := &adapters.ExecOptions{ToolSet: listing.ToolSet, NullPaths: listing.NullPaths}
	exec, err := adapters.ReadToolCalls(ctx, hub, adapters.OpenAIChat, response, o)
	if err != nil {
		log.Fatal(err)
	}
	// Nothing was sent. Each call to send is sent on the program's own
	// terms (here at once; a durable workflow would run an activity per
	// call) and answered at its place.
	for _, c := range exec.Calls {
		fmt.Println("to send:", c.Server, c.Tool, c.Args)
		res, err := hub.CallTool(ctx, c.Name, c.Args, &conduit.CallOptions{ToolSet: o.ToolSet, ID: c.ID})
		exec.Results[c.Index] = adapters.OpenAIChat.Answer(c, res, err, nil)
	}
	printJSON(exec.Results)
	// Output:
	// to send: weather get_forecast map[city:Oslo]
	// [
	//   {
	//     "content": "Sunny in Oslo, 22°C.",
	//     "role": "tool",
	//     "tool_call_id": "call_1"
	//   },
	//   {
	//     "content": "Error: Unknown tool \"weather__delete_city\": it is not among the tools offered.",
	//     "role": "tool",
	//     "tool_call_id": "call_2"
	//   }
	// ]
}

func ExampleParseProvider() {
	p, err := adapters.ParseProvider("openai-responses")
	fmt.Println(p, err, p == adapters.OpenAIResponses)
	// Output: openai-responses <nil> true
}

func ExampleNewConversation() {
	hub := weatherHub()
	defer hub.Close()
	ctx := context.Background()

	// One conversation per chat: it lists the tools once and keeps the tool
	// set, strict mode's null paths, the principal and the taint.
	conv, err := adapters.NewConversation(ctx, hub, adapters.Anthropic, &adapters.ConversationOptions{Listing: adapters.ListingOptions{CacheLast: true}, TurnOptions: adapters.TurnOptions{Principal: "ada"}})
	if err != nil {
		log.Fatal(err)
	}
	// Each turn: send conv.Tools() with the messages (your HTTP client),
	// then answer the response's tool calls.
	fmt.Println(len(conv.Tools()), "tools")
	response := `{"role": "assistant", "stop_reason": "tool_use", "content": [
	  {"type": "text", "text": "Let me check."},
	  {"type": "tool_use", "id": "toolu_1", "name": "weather__get_forecast", "input": {"city": "Oslo"}},
	  {"type": "tool_use", "id": "toolu_2", "name": "weather__set_alert", "input": {"city": "Oslo"}}
	]}`
	exec, err := conv.Execute(ctx, response)
	if err != nil {
		log.Fatal(err)
	}
	// The tool_result blocks go first in the next user message.
	printJSON(exec.Results)
	// The forecast reached the model: weather taints the next turns. The
	// denied alert sent nothing, so it would have added nothing.
	fmt.Println("halted:", exec.Halted, "taint:", conv.Taint())
	// Output:
	// 2 tools
	// [
	//   {
	//     "content": [
	//       {
	//         "text": "Sunny in Oslo, 22°C.",
	//         "type": "text"
	//       }
	//     ],
	//     "tool_use_id": "toolu_1",
	//     "type": "tool_result"
	//   },
	//   {
	//     "content": [
	//       {
	//         "text": "The call to weather__set_alert was denied: alerts are set by the on-call team.",
	//         "type": "text"
	//       }
	//     ],
	//     "is_error": true,
	//     "tool_use_id": "toolu_2",
	//     "type": "tool_result"
	//   }
	// ]
	// halted: false taint: [weather]
}

func ExampleProvider_Wire() {
	// What a loop that sends its own requests needs, for any provider.
	for _, p := range adapters.Providers() {
		w := p.Wire()
		fmt.Println(p, w.Endpoint(w.BaseURL, "gemini-2.5-flash"), w.KeyEnv)
	}
	w := adapters.OpenAIChat.Wire()
	conv := []any{w.Prompt("What's the weather in Oslo?")}
	body := w.Request(toolcall.Request{Model: "gpt-4.1", Conversation: conv})
	printJSON(body)
	// Output:
	// anthropic https://api.anthropic.com/v1/messages ANTHROPIC_API_KEY
	// openai-chat https://api.openai.com/v1/chat/completions OPENAI_API_KEY
	// openai-responses https://api.openai.com/v1/responses OPENAI_API_KEY
	// gemini https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent GEMINI_API_KEY
	// bedrock https://bedrock-runtime.us-east-1.amazonaws.com/model/gemini-2.5-flash/converse AWS_BEARER_TOKEN_BEDROCK
	// {
	//   "messages": [
	//     {
	//       "content": "What's the weather in Oslo?",
	//       "role": "user"
	//     }
	//   ],
	//   "model": "gpt-4.1"
	// }
}

func ExampleProvider_ToolCalls() {
	hub := weatherHub()
	defer hub.Close()
	ts, err := hub.ListTools(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	// For programs that drive the pipeline themselves: the calls to send,
	// and the answers of those that must not be sent.
	calls, rejected, err := adapters.Gemini.ToolCalls(`{"candidates": [{"content": {"role": "model", "parts": [
	  {"functionCall": {"name": "weather__get_forecast", "args": {"city": "Rome"}}},
	  {"functionCall": {"name": "weather__get_forecast", "args": null}}
	]}}]}`, ts)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range calls {
		fmt.Println(c.Server, c.Tool, c.Args)
	}
	printJSON(rejected)
	// Output:
	// weather get_forecast map[city:Rome]
	// [
	//   {
	//     "functionResponse": {
	//       "name": "weather__get_forecast",
	//       "response": {
	//         "error": "Invalid arguments for weather__get_forecast: the arguments must be a JSON object."
	//       }
	//     }
	//   }
	// ]
}

func ExampleCallKeys() {
	keys := adapters.CallKeys([]toolcall.Call{{Index: 0, ID: "call_a"}, {Index: 1, ID: ""}, {Index: 2, ID: "x"}, {Index: 3, ID: "x"}})
	fmt.Println(keys[0], keys[1], keys[2], keys[3])
	// Output: call_a #2 x#3 x#4
}

func ExampleReached() {
	denied := &conduit.Error{Kind: conduit.ErrDenied, Message: "denied"}
	serverSaid := &conduit.Error{Kind: conduit.ErrServerError, Message: "no such page"}
	fmt.Println(adapters.Reached(nil), adapters.Reached(serverSaid), adapters.Reached(denied))
	// Output: true true false
}
