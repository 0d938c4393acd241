package conduit_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type requestIDKey struct{}

// A Trace that follows each call in its own context: CallStart gives the
// call a context carrying a request id, which the approver (and any hook)
// sees, RequestMeta sends to the server in the request's _meta, and
// CallDone reads back with what the request took. Package otelconduit does
// the same with OpenTelemetry spans and trace context.
func ExampleTrace() {
	ctx := context.Background()
	server := startServer("github", func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "get_issue"},
			func(_ context.Context, req *mcp.CallToolRequest, _ issueArgs) (*mcp.CallToolResult, any, error) {
				fmt.Println("server: _meta request_id =", req.Params.Meta["request_id"])
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "It crashes"}}}, nil, nil
			})
	})
	n := 0
	trace := &conduit.Trace{
		CallStart: func(i conduit.CallStartInfo) context.Context {
			n++ // calls here are one at a time; a real Trace must be safe for concurrent use
			return context.WithValue(i.Context, requestIDKey{}, fmt.Sprintf("req-%d", n))
		},
		RequestMeta: func(i conduit.RequestMetaInfo) map[string]any {
			if id, ok := i.Context.Value(requestIDKey{}).(string); ok && i.Method == "tools/call" {
				return map[string]any{"request_id": id}
			}
			return nil
		},
		CallDone: func(i conduit.CallDoneInfo) {
			sent := i.Request != nil && i.Request.Elapsed > 0 && i.Request.Elapsed < time.Minute
			fmt.Printf("done: %s %s, sent %v, err %v\n", i.Context.Value(requestIDKey{}), i.Call.Exposed, sent, i.Err != nil)
		},
	}
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "github", Transport: server}}, &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("github/*")),
		Approver: func(ctx context.Context, req conduit.ApprovalRequest) conduit.Approval {
			fmt.Println("approver:", ctx.Value(requestIDKey{}))
			return conduit.Approval{Allow: req.Call.Args["number"] == 1}
		},
		Trace: trace})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	hub.CallTool(ctx, "github__get_issue", map[string]any{"number": 1}, nil)
	hub.CallTool(ctx, "github__get_issue", map[string]any{"number": 2}, nil)
	// Output:
	// approver: req-1
	// server: _meta request_id = req-1
	// done: req-1 github__get_issue, sent true, err false
	// approver: req-2
	// done: req-2 github__get_issue, sent false, err true
}
