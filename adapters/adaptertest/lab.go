package adaptertest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The suite's MCP server, in process over the SDK's in-memory transport,
// behind a hub. Its tools check every provider's answers.

// pngBytes is a real 1x1 PNG, which every provider's rules take as an
// image.
var pngBytes, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAAEElEQVR4nGL6z8AACAAA//8DCQECWLbVUAAAAABJRU5ErkJggg==")

// lab is the server "lab" and the hub over it.
type lab struct {
	hub *conduit.Hub

	mu       sync.Mutex
	sent     []string // the tools called, in arrival order
	requests int      // every tools/call request received, of a tool of the server's or not
}

// The lab's tools, by exposed name.
const (
	echoTool   = "lab__echo"   // answers "Echo: " and its message
	failTool   = "lab__fail"   // an isError result, "disk full"
	imageTool  = "lab__image"  // a PNG image
	deployTool = "lab__deploy" // the policy asks, and the approver halts
	bigTool    = "lab__big"    // "lines" lines of text, "as" a JSON text or structuredContent
)

// bigLine is line n of lab__big's text.
func bigLine(n int) string { return fmt.Sprintf("line %d of the report: everything is fine here", n) }

// newLab starts the lab for t. The policy asks about lab/deploy. It
// allows everything else, conduit's search included. The approver rejects
// and halts.
func newLab(t *testing.T) *lab {
	t.Helper()
	l := &lab{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "lab", Version: "1.0.0"}, nil)
	add := func(name, desc string, schema map[string]any, res func(args map[string]any) *mcp.CallToolResult) {
		srv.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: schema},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				l.mu.Lock()
				l.sent = append(l.sent, name)
				l.mu.Unlock()
				var args map[string]any
				if len(req.Params.Arguments) > 0 {
					if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
						return nil, err
					}
				}
				return res(args), nil
			})
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				l.mu.Lock()
				l.requests++
				l.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	empty := map[string]any{"type": "object", "properties": map[string]any{}}
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	add("echo", "Echoes the message back.", map[string]any{"type": "object",
		"properties": map[string]any{"message": map[string]any{"type": "string"}}, "required": []any{"message"}},
		func(a map[string]any) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: text(fmt.Sprint("Echo: ", a["message"]))}
		})
	add("fail", "Fails.", empty, func(map[string]any) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: text("disk full")}
	})
	add("image", "Draws a picture.", empty, func(map[string]any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: pngBytes}}}
	})
	add("deploy", "Deploys to production.", empty, func(map[string]any) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: text("deployed")}
	})
	add("big", "Reports at length.", map[string]any{"type": "object", "properties": map[string]any{
		"lines": map[string]any{"type": "integer"}, "as": map[string]any{"type": "string", "enum": []any{"text", "json", "structured"}}}},
		func(a map[string]any) *mcp.CallToolResult {
			n, _ := a["lines"].(float64)
			var b strings.Builder
			rows := make([]any, 0, int(n))
			for i := 1; i <= int(n); i++ {
				b.WriteString(bigLine(i) + "\n")
				rows = append(rows, map[string]any{"line": float64(i), "text": bigLine(i)})
			}
			switch a["as"] {
			case "json":
				data, _ := json.Marshal(map[string]any{"rows": rows})
				return &mcp.CallToolResult{Content: text(string(data))}
			case "structured":
				return &mcp.CallToolResult{StructuredContent: map[string]any{"rows": rows}}
			}
			return &mcp.CallToolResult{Content: text(b.String())}
		})

	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l.hub, err = conduit.NewHub(ctx, []conduit.Server{{ID: "lab", Transport: ct}}, &conduit.Options{
		Policy: conduit.NewPolicy(conduit.Ask("lab/deploy"), conduit.Allow("*")),
		Approver: func(context.Context, conduit.ApprovalRequest) conduit.Approval {
			return conduit.RejectAndHalt("The user stopped the agent.")
		},
		Reconnect: conduit.Backoff{Disabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.hub.Close() })
	return l
}

// sentSince returns the tools called after the first n, sorted, since
// calls run concurrently. It returns how many have been called in all.
func (l *lab) sentSince(n int) ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.sent[n:])
	slices.Sort(out)
	return out, len(l.sent)
}

// received counts the tools/call requests the server received.
func (l *lab) received() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests
}
