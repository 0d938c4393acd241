package conduit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func docs() mcp.Transport {
	return startServer("docs", func(s *mcp.Server) {
		s.AddPrompt(&mcp.Prompt{Name: "summarize", Description: "Summarize a topic.", Arguments: []*mcp.PromptArgument{{Name: "topic"}}},
			func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
					Content: &mcp.TextContent{Text: "Summarize " + req.Params.Arguments["topic"] + "."}}}}, nil
			})
		read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "the text of " + req.Params.URI}}}, nil
		}
		s.AddResource(&mcp.Resource{Name: "readme", URI: "docs://readme"}, read)
		s.AddResource(&mcp.Resource{Name: "secrets", URI: "docs://secrets"}, read)
		s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "page", URITemplate: "docs://pages/{n}"}, read)
	})
}

func ExampleHub_GetPrompt() {
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "docs", Transport: docs()}},
		&conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	ps, err := hub.ListPromptsFor(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for p := range ps.All() {
		fmt.Println(p.Exposed, "-", p.Description)
	}
	res, err := hub.GetPrompt(ctx, "docs__summarize", map[string]string{"topic": "MCP"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Messages[0].Content.(*mcp.TextContent).Text)
	// Output:
	// docs__summarize - Summarize a topic.
	// Summarize MCP.
}

func ExampleHub_ReadResource() {
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "docs", Transport: docs()}},
		&conduit.Options{Policy: conduit.NewPolicy(conduit.Deny("docs/docs://secrets"), conduit.Allow("docs"))})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	rs, err := hub.ListResourcesFor(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for r := range rs.Resources() {
		fmt.Println("resource", r.URI)
	}
	for t := range rs.Templates() {
		fmt.Println("template", t.URITemplate)
	}
	res, err := hub.ReadResource(ctx, "docs://pages/3", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Contents[0].Text)
	_, err = hub.ReadResource(ctx, "docs://secrets", nil)
	fmt.Println(err)
	// Output:
	// resource docs://readme
	// template docs://pages/{n}
	// the text of docs://pages/3
	// conduit: denied (docs/docs://secrets): The policy does not allow calling docs://secrets.
}

// A server's elicitation during a call goes to that call's Handlers: a
// program serving several users answers each with its own user.
func ExampleHandlers() {
	ctx := context.Background()
	survey := startServer("survey", func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				// On protocol 2026-07-28 a server asks through its result.
				if r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("hello ", r.Content["name"])}}}, nil
				}
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
					Message: "Your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}}}, nil
			})
	})
	user := func(name string) *conduit.Handlers {
		return &conduit.Handlers{Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		}}
	}
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "survey", Transport: survey}}, &conduit.Options{Policy: conduit.AllowAll(),
		// The hub's own declare elicitation; they answer what no call claims.
		Handlers: &conduit.Handlers{Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}}})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	for _, name := range []string{"ada", "grace"} {
		res, err := hub.CallTool(ctx, "survey__ask", nil, &conduit.CallOptions{Handlers: user(name)})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	}
	// Output:
	// hello ada
	// hello grace
}

// A caller that answers a server's questions itself, across requests (a
// gateway whose clients answer, or an application that keeps the
// question for a person), ends the request with the server's
// input-required result and makes the retry with the answers and the
// server's state.
func ExampleInput() {
	ctx := context.Background()
	survey := startServer("survey", func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if r, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok && req.Params.RequestState == "asked" {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("hello ", r.Content["name"])}}}, nil
				}
				return &mcp.CallToolResult{RequestState: "asked", InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
					Message: "Your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}}}, nil
			})
	})
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "survey", Transport: survey}}, &conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	res, err := hub.CallTool(ctx, "survey__ask", nil, &conduit.CallOptions{Input: &conduit.Input{Return: true}})
	if err != nil {
		log.Fatal(err)
	}
	state := res.RequestState
	fmt.Println(res.NeedsInput(), res.InputRequests["name"].(*mcp.ElicitParams).Message)
	// ... later, perhaps in another process, with the person's answer:
	answers := mcp.InputResponseMap{"name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}}
	res, err = hub.CallTool(ctx, "survey__ask", nil, &conduit.CallOptions{Input: &conduit.Input{Responses: answers, RequestState: state, Return: true}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// true Your name?
	// hello ada
}
