package adapters_test

import (
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/bedrock"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A provider is made of a driver. A driver from another module is made a
// provider the same way, and works wherever the built-in ones do.
func ExampleNewProvider() {
	p := adapters.NewProvider(bedrock.Driver())
	fmt.Println(p, p == adapters.Bedrock)
	fmt.Println(p.Wire().Endpoint(p.Wire().BaseURL, "anthropic.claude-sonnet-4-5-v1:0"))
	// Output:
	// bedrock false
	// https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-sonnet-4-5-v1:0/converse
}

// A loop that runs each call on its own terms (a durable workflow's
// activity per call) shares a turn's budget itself: it measures each
// answer, then writes it once, within its share.
func ExampleProvider_Prepare() {
	c := toolcall.Call{ID: "toolu_1", Name: "logs__tail", Server: "logs", Tool: "tail"}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a line of the log\n", 200)}}}
	pend := adapters.Anthropic.Prepare(c, res, nil, nil)
	fmt.Println("tokens:", pend.Tokens(0))
	answer, b := pend.Write(toolcall.Budget{Tokens: 100})
	fmt.Println("cut:", b.Cut, "kept:", b.Kept, "answers:", answer["tool_use_id"])
	// Output:
	// tokens: 1200
	// cut: true kept: 96 answers: toolu_1
}
