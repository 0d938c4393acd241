package adapters

import (
	"context"
	"errors"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/openai"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A provider's own search that cannot be listed fails the listing with
// its reason, rather than offer the model no tools: every row of the table
// either lists a search or says why not, and says it only when it has no
// search. (The Conversation asks only rows with hasSearch, so this is the
// guard against a row that disagrees with itself.)
func TestNativeSearchErrorIsReturned(t *testing.T) {
	ts := conduit.NewToolSet(nil, conduit.ServerTools{Server: "s", Tools: []*mcp.Tool{
		{Name: "a", InputSchema: map[string]any{"type": "object"}}, {Name: "b", InputSchema: map[string]any{"type": "object"}}}})
	for _, p := range Providers() {
		t.Run(p.String(), func(t *testing.T) {
			d := p.driver()
			c := &Conversation{p: p}
			err := c.listNative(context.Background(), ts, d, &ConversationOptions{}, nil)
			if d.hasSearch() {
				if err != nil || c.listing == nil || c.listing.SearchTool == "" || len(c.listing.Tools) == 0 {
					t.Fatalf("listing %+v, %v", c.listing, err)
				}
				return
			}
			if err == nil || c.listing != nil {
				t.Fatalf("a provider without search listed %+v", c.listing)
			}
			if p == OpenAIChat && !errors.Is(err, openai.ErrNoToolSearch) {
				t.Errorf("error %v, want %v", err, openai.ErrNoToolSearch)
			}
		})
	}
}
