// MCP Apps on the hub: which tools only an app may see, kept from the
// model, and the ui:// resources an app is made of.
package conduit

import "github.com/modelcontextprotocol/go-sdk/mcp"

// AppsExtension is the MCP Apps extension's name in capabilities. A
// client that declares it can show apps, and keeps app-only tools from
// its model itself.
const AppsExtension = "io.modelcontextprotocol/ui"

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

// AppResource returns the ui:// resource that shows t's results, from
// _meta.ui.resourceUri (or the older flat "ui/resourceUri" key), or "".
func AppResource(t *mcp.Tool) string {
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

// forModel is ts less the tools only an app may call.
func forModel(ts *ToolSet) *ToolSet {
	for t := range ts.All() {
		if AppOnly(t.Tool) {
			return ts.filter(SkipAppOnly, func(t *Tool) (bool, string) {
				if AppOnly(t.Tool) {
					return false, "only an MCP App may call it (_meta.ui.visibility)"
				}
				return true, ""
			})
		}
	}
	return ts
}
