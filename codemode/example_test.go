package codemode_test

import (
	"context"
	"fmt"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/codemode"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Code calls the tools of a hub; each call meets the hub's policy.
func ExampleExecute() {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	type args struct {
		Query string `json:"query"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "search", Description: "Search the notes."}, func(ctx context.Context, r *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "3 notes about " + a.Query}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "delete", Description: "Delete a note."}, func(ctx context.Context, r *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(ctx, st) }()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "notes", Transport: ct}}, &conduit.Options{
		Policy: conduit.NewPolicy(conduit.Allow("notes/search"))})
	if err != nil {
		panic(err)
	}
	defer hub.Close()
	all, _ := hub.ListTools(ctx) // delete is offered here, but the policy refuses it
	res, err := codemode.Execute(ctx, `
const found: string = await notes.search({query: "pasta"});
let deleted = "sent";
try { await notes.delete({query: "pasta"}); } catch (e) { deleted = "refused"; }
console.log(found);
return {deleted};`, &codemode.Run{Source: hub, ToolSet: all})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value), res.Logs, res.Taint)
	// Output: {"deleted":"refused"} [3 notes about pasta] [notes]
}
