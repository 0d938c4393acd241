package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResultBudget: results are served whole by default, the client
// having a budget of its own; a server's own maxResultTokens cuts its
// results; Options.MaxResultTokens cuts the others'. structuredContent is
// served as it came.
func TestResultBudget(t *testing.T) {
	long := strings.Repeat("a line of the report, with a few words\n", 5000)
	report := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: long}}, StructuredContent: map[string]any{"lines": 5000}}, nil
	}
	servers := func() []conduit.Server {
		own := newUpstream(t, "own").tool("report", "Reports.", report).server("own")
		own.MaxResultTokens = 500
		return []conduit.Server{newUpstream(t, "plain").tool("report", "Reports.", report).server("plain"), own}
	}
	for _, c := range []struct {
		name       string
		max        int
		plain, own int // 0: whole
	}{
		{"by default", 0, 0, 500},
		{"with a budget", 2000, 2000, 500},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGateway(t, servers(), &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}, MaxResultTokens: c.max})
			cs, _ := connect(t, g, "alice", nil)
			for name, budget := range map[string]int{"plain__report": c.plain, "own__report": c.own} {
				res := callTool(t, cs, name, map[string]any{})
				got := resultText(res)
				if res.StructuredContent == nil {
					t.Errorf("%s: structuredContent was dropped", name)
				}
				if budget == 0 {
					if got != long {
						t.Errorf("%s: cut (%d bytes) without a budget", name, len(got))
					}
					continue
				}
				notice := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
				if len(got) > budget*8 || !strings.HasPrefix(long, strings.TrimSuffix(got, notice)) ||
					!strings.Contains(notice, fmt.Sprintf("cut to fit its budget of %d tokens", budget)) {
					t.Errorf("%s: %d bytes, notice %q", name, len(got), notice)
				}
			}
		})
	}
}

// TestResultBudgetPerPrincipal: the budget of a server whose sessions are
// per principal applies to each principal's calls, whose tools are listed
// from their own session.
func TestResultBudgetPerPrincipal(t *testing.T) {
	servers := identityServers(t)[:1]
	servers[0].MaxResultTokens = 3
	g := newGateway(t, servers, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	for _, who := range []string{"alice", "bob"} {
		cs, _ := connect(t, g, who, nil)
		if got := resultText(callTool(t, cs, "gh__whoami", map[string]any{})); got != who {
			t.Errorf("%s's whoami: %q", who, got)
		}
		res := callTool(t, cs, "gh__note", map[string]any{"text": "a note"})
		if got := resultText(res); !strings.HasPrefix(got, "note://") || !strings.Contains(got, "cut to fit its budget of 3 tokens") {
			t.Errorf("%s's note, over its server's budget: %q", who, got)
		}
	}
}
