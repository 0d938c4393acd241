// Command conformance-client is an MCP client built on conduit for the MCP
// conformance suite's client scenarios: the suite runs it with the test
// server's URL as its last argument and the scenario's name in
// MCP_CONFORMANCE_SCENARIO. Every call goes through conduit's governed
// pipeline, so the suite checks conduit's sessions and transports, not the
// bare SDK's.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scenario is what the client does once connected: the tool it must call,
// with its arguments ("" to only list).
type scenario struct {
	tool string
	args map[string]any
}

var scenarios = map[string]scenario{
	"initialize":                          {},
	"tools_call":                          {tool: "add_numbers", args: map[string]any{"a": 5, "b": 3}},
	"sse-retry":                           {tool: "test_reconnection", args: map[string]any{}},
	"elicitation-sep1034-client-defaults": {tool: "test_client_elicitation_defaults", args: map[string]any{}},
}

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 {
		log.Fatalf("usage: %s <server-url> (with MCP_CONFORMANCE_SCENARIO set)", os.Args[0])
	}
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	sc, ok := scenarios[name]
	if !ok {
		log.Fatalf("unknown scenario %q", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[len(os.Args)-1], sc); err != nil {
		log.Fatalf("scenario %s: %v", name, err)
	}
}

func run(ctx context.Context, url string, sc scenario) error {
	cl, err := conduit.NewClient(ctx, conduit.Server{ID: "conformance", URL: url}, &conduit.ClientOptions{Options: conduit.Options{
		Policy: conduit.AllowAll(),
		// Accepting with no content lets the SDK fill the requested
		// schema's defaults, which is what SEP-1034 checks.
		Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		},
	}})
	if err != nil {
		return err
	}
	defer cl.Close()
	if st := cl.Status()[0]; st.State != conduit.StateUp {
		return fmt.Errorf("could not connect: %v", st.Err)
	}
	ts, err := cl.ListTools(ctx)
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	if sc.tool == "" {
		return nil
	}
	name, ok := ts.ExposedName("conformance", sc.tool)
	if !ok {
		return fmt.Errorf("the server does not list %q (skipped: %v)", sc.tool, ts.Skipped())
	}
	res, err := cl.CallTool(ctx, name, sc.args, &conduit.CallOptions{ToolSet: ts})
	if err != nil {
		return fmt.Errorf("calling %s: %w", sc.tool, err)
	}
	if res.IsError {
		return fmt.Errorf("%s answered isError", sc.tool)
	}
	return nil
}
