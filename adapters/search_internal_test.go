package adapters

import (
	"context"
	"errors"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// failingSearch is a driver whose own search cannot list.
type failingSearch struct{ driver.Provider }

var errNoListing = errors.New("no listing")

func (failingSearch) SearchTools(_, _ *conduit.ToolSet, _ *driver.ListOptions) (*driver.SearchListing, error) {
	return nil, errNoListing
}

// A provider's own search that cannot be listed fails the listing with
// its reason, rather than offer the model no tools, and a provider without
// one is never listed for it: every driver either is a driver.Searcher
// that lists, or is asked for no search of its own.
func TestNativeSearchErrorIsReturned(t *testing.T) {
	ts := conduit.NewToolSet(nil, conduit.ServerTools{Server: "s", Tools: []*mcp.Tool{
		{Name: "a", InputSchema: map[string]any{"type": "object"}}, {Name: "b", InputSchema: map[string]any{"type": "object"}}}})
	for _, p := range Providers() {
		t.Run(p.String(), func(t *testing.T) {
			d := p.impl()
			c := &Conversation{p: p}
			err := c.listNative(context.Background(), ts, d, &ConversationOptions{}, nil, nil, nil)
			if _, ok := d.(driver.Searcher); ok {
				if err != nil || c.listing == nil || c.listing.SearchTool == "" || len(c.listing.Tools) == 0 {
					t.Fatalf("listing %+v, %v", c.listing, err)
				}
				c.listing = nil
				if err := c.listNative(context.Background(), ts, failingSearch{d}, &ConversationOptions{}, nil, nil, nil); !errors.Is(err, errNoListing) || c.listing != nil {
					t.Fatalf("a failing search: listing %+v, %v", c.listing, err)
				}
				return
			}
			if err == nil || c.listing != nil {
				t.Fatalf("a provider without search listed %+v", c.listing)
			}
		})
	}
}

// The strict-mode choices are passed to drivers as they are.
func TestStrictModes(t *testing.T) {
	for _, s := range []driver.StrictMode{driver.StrictAuto, driver.StrictOn, driver.StrictOff} {
		if got := (&ListingOptions{Strict: s}).toDriver().Strict; got != s {
			t.Errorf("%d is passed as %d", s, got)
		}
	}
}
