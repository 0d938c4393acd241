package adapters_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logsHub is a hub of one server whose tool returns a long log.
func logsHub() *conduit.Hub {
	srv := mcp.NewServer(&mcp.Implementation{Name: "logs", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "tail", Description: "Returns the service's log.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var b strings.Builder
			for i := 1; i <= 5000; i++ {
				status := "ok"
				if i%1000 == 0 {
					status = "timeout talking to the database"
				}
				fmt.Fprintf(&b, "request %d: %s\n", i, status)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		log.Fatal(err)
	}
	hub, err := conduit.NewHub(context.Background(), []conduit.Server{{ID: "logs", Transport: ct}},
		&conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("logs/*", "conduit/read_result"))})
	if err != nil {
		log.Fatal(err)
	}
	return hub
}

// A result over its budget reaches the model cut, with a notice; with
// the read tool on, the whole is kept and the model reads the rest, here
// the lines that match a pattern.
func Example_resultBudget() {
	hub := logsHub()
	defer hub.Close()
	ctx := context.Background()
	o := &adapters.ConversationOptions{
		TurnOptions: adapters.TurnOptions{Budget: adapters.BudgetOptions{MaxTurnTokens: 50000}},
		Read:        adapters.ReadOptions{On: true},
	}
	o.Answers.MaxResultTokens = 150 // a small budget, for the example
	conv, err := adapters.NewConversation(ctx, hub, adapters.OpenAIChat, o)
	if err != nil {
		log.Fatal(err)
	}
	exec, err := conv.Execute(ctx, `{"choices": [{"message": {"role": "assistant", "tool_calls": [
	  {"id": "call_1", "type": "function", "function": {"name": "logs__tail", "arguments": "{}"}}]}}]}`)
	if err != nil {
		log.Fatal(err)
	}
	b := exec.Budgets[0]
	fmt.Printf("cut: %v, kept %d of about %d tokens\n", b.Cut, b.Kept, b.Tokens)
	// The reference is random: R- and eight letters or digits.
	fmt.Println(strings.ReplaceAll(exec.Results[0]["content"].(string), b.Ref, "R-XXXXXXXX"))

	exec, err = conv.Execute(ctx, `{"choices": [{"message": {"role": "assistant", "tool_calls": [
	  {"id": "call_2", "type": "function", "function": {"name": "read_result", "arguments": "{\"result\": \"`+b.Ref+`\", \"pattern\": \"timeout\"}"}}]}}]}`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(exec.Results[0]["content"])
	// Output:
	// cut: true, kept 147 of about 39036 tokens
	// request 1: ok
	// request 2: ok
	// request 3: ok
	// request 4: ok
	// request 5: ok
	// request 6: ok
	// request 7: ok
	// request 8: ok
	// request 9: ok
	// request 10: ok
	// request 11: ok
	// request 12: ok
	// request 13: ok
	// request 14: ok
	// request 15: ok
	// request 16: ok
	// request 17: ok
	// request 18: ok
	// request 19: ok
	// request 20: ok
	// request 21: ok
	//
	// [conduit: the result was cut to fit its budget of 150 tokens: kept the first 21 of 5000 lines (306 bytes of 82.1 KB, about 147 of 39036 tokens). The whole result is kept: call read_result with result "R-XXXXXXXX" to read the rest by range, or to find the lines that match a pattern.]
	// [read_result: 5 lines match "timeout" from line 1, to the end]
	// 1000: request 1000: timeout talking to the database
	// 2000: request 2000: timeout talking to the database
	// 3000: request 3000: timeout talking to the database
	// 4000: request 4000: timeout talking to the database
	// 5000: request 5000: timeout talking to the database
}

func ExampleNewMemoryKeeper() {
	// One keeper for every conversation of this process, 256 MiB in all,
	// the least recently used result dropped first: a conversation that
	// is saved and carried on in this process later reads what was cut.
	keeper := adapters.NewMemoryKeeper(256 << 20)
	o := &adapters.ConversationOptions{Read: adapters.ReadOptions{On: true, Keeper: keeper}}
	fmt.Println(o.Read.On)
	// Output: true
}
