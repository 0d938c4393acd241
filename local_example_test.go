package conduit_test

import (
	"context"
	"fmt"
	"log"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ExampleHub_CallLocal() {
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "github", Transport: github()}}, &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Deny("local/*").When(conduit.Principal("guest")),
		conduit.Allow("local/time", "github/get_*"),
	), LocalServers: []string{"local"}})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	// A tool the program answers itself, governed as server local's tool
	// time: the policy, approver and hooks see local/time.
	clock := &conduit.LocalTool{
		Tool: &conduit.Tool{Tool: &mcp.Tool{Name: "time", Description: "The time."}, Exposed: "time", Server: "local"},
		Answer: func(context.Context, *conduit.Call) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "12:00"}}}, nil
		},
	}
	fmt.Println(hub.OffersLocal(clock.Tool, &conduit.ListOptions{Principal: "alice"}),
		hub.OffersLocal(clock.Tool, &conduit.ListOptions{Principal: "guest"}))
	res, err := hub.CallLocal(ctx, clock, nil, &conduit.CallOptions{Principal: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	_, err = hub.CallLocal(ctx, clock, nil, &conduit.CallOptions{Principal: "guest"})
	fmt.Println(err)
	// Output:
	// true false
	// 12:00
	// conduit: denied (local/time): The policy does not allow calling time.
}

func ExampleToolSetOf() {
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true},
		conduit.ServerTools{Server: "github", Tools: []*mcp.Tool{{Name: "create_issue"}, {Name: "list_issues"}, {Name: "merge_pull_request"}}})
	// What a model was offered first, then what a search found.
	list, _ := ts.Lookup("github__list_issues")
	merge, _ := ts.Lookup("github__merge_pull_request")
	for t := range conduit.ToolSetOf(list, merge).All() {
		fmt.Println(t.Exposed)
	}
	// Output:
	// github__list_issues
	// github__merge_pull_request
}
