package gateway_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/apps"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAppsThroughGateway: an MCP App's tools and ui:// resource pass
// through conduit serve. A client that declares the Apps extension
// lists the app-only tool with its _meta.ui and may call it; one that
// does not (the careless default) never sees it, and its call of it is
// refused, nothing sent. Both read the app's resource, governed.
func TestAppsThroughGateway(t *testing.T) {
	const view = "ui://charts/view.html"
	charts := newUpstream(t, "charts")
	calls := 0
	ui := func(vis ...any) mcp.Meta {
		return mcp.Meta{"ui": map[string]any{"resourceUri": view, "visibility": vis}}
	}
	charts.AddTool(&mcp.Tool{Name: "show", InputSchema: json.RawMessage(`{"type":"object"}`), Meta: ui("model", "app")}, echo("shown"))
	charts.AddTool(&mcp.Tool{Name: "refresh", InputSchema: json.RawMessage(`{"type":"object"}`), Meta: ui("app")},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls++
			return text("refreshed"), nil
		})
	charts.AddResource(&mcp.Resource{Name: "view", URI: view, MIMEType: "text/html;profile=mcp-app"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: view, MIMEType: "text/html;profile=mcp-app", Text: "<html/>"}}}, nil
		})
	g := newGateway(t, []conduit.Server{charts.server("charts")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	ctx := context.Background()

	plain, _ := connect(t, g, "", nil)
	if names := toolNames(t, plain); !slices.Equal(names, []string{"charts__show"}) {
		t.Fatalf("a client that shows no apps lists %v", names)
	}
	if res, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: "charts__refresh", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Fatalf("a client that shows no apps called the app-only tool: %+v", res)
	}
	if calls != 0 {
		t.Fatalf("the app-only tool was called %d times", calls)
	}

	host := connectApps(t, g)
	lr, err := host.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var refresh *mcp.Tool
	for _, tl := range lr.Tools {
		if tl.Name == "charts__refresh" {
			refresh = tl
		}
	}
	if refresh == nil || !apps.AppOnly(refresh) || apps.Resource(refresh) != view {
		t.Fatalf("a host lists %+v", lr.Tools)
	}
	if res := callTool(t, host, "charts__refresh", map[string]any{}); resultText(res) != "refreshed" || calls != 1 {
		t.Fatalf("the host's app calls refresh: %+v (%d calls)", res, calls)
	}
	for _, cs := range []*mcp.ClientSession{plain, host} {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: view})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "<html/>" {
			t.Fatalf("the app's resource: %+v, %v", rr, err)
		}
	}
}

// connectApps opens a session of g as a host that shows MCP Apps.
func connectApps(t *testing.T, g *gateway.Gateway) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Extensions: map[string]any{apps.Extension: map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}}}},
	})
	return connectClientWith(t, g, c, nil)
}
