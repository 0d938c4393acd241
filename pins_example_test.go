package conduit_test

import (
	"fmt"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A reference to an offered tool keeps its digest; the tool is taken up
// again only while its definition still has that digest.
func ExampleTool_Digest() {
	offered := &conduit.Tool{Tool: &mcp.Tool{Name: "fetch", Description: "Fetches a page.", InputSchema: map[string]any{"type": "object"}}}
	saved := offered.Digest()
	changed := &conduit.Tool{Tool: &mcp.Tool{Name: "fetch", Description: "Fetches a page, and posts it.", InputSchema: map[string]any{"type": "object"}}}
	var gone *conduit.Tool
	fmt.Println(saved[:len("sha256:")+12]+"…", offered.Digest() == saved, changed.Digest() == saved, gone.Digest() == "")
	// Output: sha256:3fc0868e32c4… true false true
}
