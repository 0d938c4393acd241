// The example of ResolvedCaller.
package conduit_test

import (
	"context"
	"fmt"
	"log"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A program that resolves a model's call itself, to answer a name not
// offered without sending anything, runs the call on the tool it found.
func ExampleHub_ResolvedCaller() {
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "github", Transport: github()}},
		&conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	ts, err := hub.ListTools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	tool, args, err := ts.Resolve("github__get_issue", `{"number": 7}`)
	if err != nil {
		log.Fatal(err) // answer the model with err, and send nothing
	}
	call := hub.ResolvedCaller(hub) // nil for a type that wraps the hub
	res, err := call(ctx, tool, args, &conduit.CallOptions{ToolSet: ts})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(adapters.ShapeForModel(res).Content[0].(*mcp.TextContent).Text)
	// Output: Issue #7: It crashes
}
