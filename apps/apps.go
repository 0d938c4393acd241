// Package apps reads what the MCP Apps extension adds to a tool: whether
// only an app may call it, and the ui:// resource that shows its results.
// Hubs keep app-only tools from the model by it.
package apps

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Extension is the MCP Apps extension's name in capabilities. A
// client that declares it can show apps, and keeps app-only tools from
// its model itself.
const Extension = "io.modelcontextprotocol/ui"

// AppOnly reports whether t is a tool only an MCP App may call: its
// _meta.ui.visibility is there and does not name "model". A visibility
// that is not a list of strings is read as app-only, since no model
// should be offered what it cannot be sure of.
func AppOnly(t *mcp.Tool) bool {
	if t == nil {
		return false
	}
	ui, ok := t.Meta["ui"].(map[string]any)
	if !ok {
		return false
	}
	v, ok := ui["visibility"]
	if !ok || v == nil {
		return false
	}
	list, ok := v.([]any)
	if !ok {
		return true
	}
	for _, e := range list {
		if s, ok := e.(string); ok && s == "model" {
			return false
		}
	}
	return true
}

// Resource returns the ui:// resource that shows t's results, from
// _meta.ui.resourceUri (or the older flat "ui/resourceUri" key), or "".
func Resource(t *mcp.Tool) string {
	if t == nil {
		return ""
	}
	if ui, ok := t.Meta["ui"].(map[string]any); ok {
		if u, ok := ui["resourceUri"].(string); ok {
			return u
		}
	}
	u, _ := t.Meta["ui/resourceUri"].(string)
	return u
}
