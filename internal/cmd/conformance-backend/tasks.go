package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools the tasks scenarios (SEP-2663) call. They are plain tools, some
// slow, some asking for input by multi-round-trip results. conduit serve's
// configuration chooses which of them run as tasks.

type greetArgs struct {
	Name string `json:"name"`
}

type computeArgs struct {
	Seconds float64 `json:"seconds"`
	Label   string  `json:"label,omitempty"`
}

type deleteArgs struct {
	Filename string `json:"filename"`
}

// sleep waits d, or until ctx ends (a cancelled call).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// accepted is the content of an accepted elicitation answered under key.
func accepted(responses mcp.InputResponseMap, key string) (map[string]any, bool) {
	r, ok := responses[key].(*mcp.ElicitResult)
	if !ok || r == nil || r.Action != "accept" {
		return nil, false
	}
	return r.Content, true
}

func elicit(msg string, props string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: msg, RequestedSchema: json.RawMessage(`{"type":"object","properties":` + props + `}`)}
}

func addTaskTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets name at once."},
		func(_ context.Context, _ *mcp.CallToolRequest, a greetArgs) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprintf("Hello, %s!", a.Name)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow_compute", Description: "Sleeps seconds, then answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a computeArgs) (*mcp.CallToolResult, any, error) {
			if err := sleep(ctx, time.Duration(a.Seconds*float64(time.Second))); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("computed %s after %gs", a.Label, a.Seconds)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "failing_job", Description: "Fails as a tool after about a second."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			if err := sleep(ctx, time.Second); err != nil {
				return nil, nil, err
			}
			res := text("the job failed")
			res.IsError = true
			return res, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "protocol_error_job", Description: "Fails with a JSON-RPC error after about a second."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			if err := sleep(ctx, time.Second); err != nil {
				return nil, nil, err
			}
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "protocol_error_job: internal failure"}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "confirm_delete", Description: "Asks to confirm, then deletes filename (pretend)."},
		func(_ context.Context, req *mcp.CallToolRequest, a deleteArgs) (*mcp.CallToolResult, any, error) {
			if _, ok := req.Params.InputResponses["confirm"]; !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"confirm": elicit("Delete "+a.Filename+"?", `{"confirm":{"type":"boolean"}}`),
				}}, nil, nil
			}
			if _, ok := accepted(req.Params.InputResponses, "confirm"); !ok {
				return text("Kept " + a.Filename), nil, nil
			}
			return text("Deleted " + a.Filename), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "multi_input", Description: "Asks two questions at once, then answers both."},
		func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			a, ok1 := accepted(req.Params.InputResponses, "first")
			b, ok2 := accepted(req.Params.InputResponses, "second")
			if !ok1 || !ok2 {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"first":  elicit("First name?", `{"name":{"type":"string"}}`),
					"second": elicit("Second name?", `{"name":{"type":"string"}}`),
				}}, nil, nil
			}
			return text(fmt.Sprintf("Got %v and %v", a["name"], b["name"])), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "test_tool_with_task", Description: "Asks for a name, then greets it after two seconds."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			c, ok := accepted(req.Params.InputResponses, "user_name")
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"user_name": elicit("What is your name?", `{"name":{"type":"string"}}`),
				}}, nil, nil
			}
			if err := sleep(ctx, 2*time.Second); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("Hello, %v!", c["name"])), nil, nil
		})
}
