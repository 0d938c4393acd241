package apps_test

import (
	"fmt"

	"github.com/conduitmcp/conduit/apps"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool only its MCP App may call is left out of every listing for a
// model; AppOnly says which tools those are.
func ExampleAppOnly() {
	refresh := &mcp.Tool{Name: "refresh_chart", Meta: mcp.Meta{"ui": map[string]any{
		"resourceUri": "ui://charts/view.html",
		"visibility":  []any{"app"},
	}}}
	show := &mcp.Tool{Name: "show_chart", Meta: mcp.Meta{"ui": map[string]any{
		"resourceUri": "ui://charts/view.html",
	}}}
	fmt.Println(apps.AppOnly(refresh), apps.Resource(refresh))
	fmt.Println(apps.AppOnly(show), apps.Resource(show))
	// Output:
	// true ui://charts/view.html
	// false ui://charts/view.html
}
