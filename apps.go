// MCP Apps on the hub: the tools only an app may call are kept from the
// model.
package conduit

import "github.com/conduitmcp/conduit/apps"

// forModel is ts less the tools only an app may call.
func forModel(ts *ToolSet) *ToolSet {
	for t := range ts.All() {
		if apps.AppOnly(t.Tool) {
			return ts.filter(SkipAppOnly, func(t *Tool) (bool, string) {
				if apps.AppOnly(t.Tool) {
					return false, "only an MCP App may call it (_meta.ui.visibility)"
				}
				return true, ""
			})
		}
	}
	return ts
}
