package demo

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CatalogSize is how many tools the catalog server offers: with the notes
// and web servers' five, 45 tools, past adapters.DefaultSearchThreshold
// (40), so that a Conversation over the three searches by default.
const CatalogSize = 40

// NewCatalogServer returns the catalog server, for tests of tool search
// over a large catalog: CatalogSize tools that read the gauges of a boiler
// room, gauge_00 to gauge_39, each answering with its reading. Their
// words are not the notes' or the web's, so a search for those finds
// those. It is not part of the demo (ServerNames), but InProcess and
// NewServer start it by its name, "catalog".
func NewCatalogServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "conduit-demo-catalog", Version: "1.0.0"}, nil)
	for i := range CatalogSize {
		name := fmt.Sprintf("gauge_%02d", i)
		s.AddTool(&mcp.Tool{
			Name:        name,
			Description: fmt.Sprintf("Read gauge %d of the boiler room: its pressure in bar.", i),
			InputSchema: map[string]any{"type": "object"},
		}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(fmt.Sprintf("%s reads %.1f bar.", name, 1+float64(i)/10)), nil
		})
	}
	return s
}
