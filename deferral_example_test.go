package conduit_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An approver that cannot decide now defers: the call is not sent, and its
// error carries what it waits for. The decision, taken later, is the
// call's approval.
func ExampleDefer() {
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "github", Transport: github()}}, &conduit.Options{
		Policy: conduit.NewPolicy(conduit.Ask("github/delete_repo"), conduit.Allow("github/*")),
		Approver: func(_ context.Context, req conduit.ApprovalRequest) conduit.Approval {
			return conduit.Defer("the repository's owner decides")
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()

	_, err = hub.CallTool(ctx, "github__delete_repo", map[string]any{}, &conduit.CallOptions{ID: "call_1"})
	var d *conduit.Deferral
	if errors.Is(err, conduit.ErrDeferred) && errors.As(err, &d) {
		fmt.Println("pending:", d.Rule, "-", d.Reason)
	}

	// Later: the owner said yes.
	yes := conduit.Approve()
	res, err := hub.CallTool(ctx, "github__delete_repo", d.Args, &conduit.CallOptions{ID: "call_1", Approval: &yes})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// pending: ask github/delete_repo - the repository's owner decides
	// deleted
}

// DeferAll is the approver of an application whose approvals come on a
// later request: every ask waits (adapters.Conversation keeps it).
func ExampleDeferAll() {
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "github", Transport: github()}}, &conduit.Options{
		Policy:   conduit.NewPolicy(conduit.Ask("github/*")),
		Approver: conduit.DeferAll("waiting for the user"),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	_, err = hub.CallTool(ctx, "github__get_issue", map[string]any{"number": 7}, nil)
	fmt.Println(err)
	// Output:
	// conduit: deferred (github/get_issue): The call to github__get_issue waits for a decision: waiting for the user.
}

// A handler that cannot answer a server's question now defers it: the
// call waits with the question, and goes on with the answer later.
func ExampleDeferInput() {
	ctx := context.Background()
	forms := startServer("forms", func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "book", InputSchema: map[string]any{"type": "object"}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if a, ok := req.Params.InputResponses["date"].(*mcp.ElicitResult); ok {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("booked for ", a.Content["date"])}}}, nil
				}
				// Protocol 2026-07-28: ask, by a multi-round-trip result.
				return &mcp.CallToolResult{RequestState: "s1", InputRequests: mcp.InputRequestMap{
					"date": &mcp.ElicitParams{Message: "Which date?", RequestedSchema: map[string]any{"type": "object"}}}}, nil
			})
	})
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "forms", Transport: forms}}, &conduit.Options{
		Policy: conduit.AllowAll(),
		Handlers: &conduit.Handlers{Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, conduit.DeferInput("the user fills in a form")
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()

	_, err = hub.CallTool(ctx, "forms__book", map[string]any{}, nil)
	var d *conduit.Deferral
	if !errors.As(err, &d) {
		log.Fatal(err)
	}
	fmt.Println(d.Input.Requests["date"].(*mcp.ElicitParams).Message, d.Input.Missing())

	// The answer comes.
	d.Input.Responses = mcp.InputResponseMap{"date": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"date": "May 3"}}}
	res, err := hub.CallTool(ctx, "forms__book", d.Args, &conduit.CallOptions{Input: d.Input})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// Which date? [date]
	// booked for May 3
}
