// Package demo holds conduit's built-in demonstration: two small but real MCP
// servers built with the Go MCP SDK (notes and web), a policy, and one
// recorded model turn per provider, played through the real adapters by
// `conduit demo` with no network and no API key.
//
// The servers also serve tests and examples: InProcess connects them in
// memory, and Serve runs one over any transport (stdio for `conduit
// demo-server NAME`), so a test gets a real MCP server without node.
package demo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var servers = map[string]func() *mcp.Server{
	"notes":   NewNotesServer,
	"web":     NewWebServer,
	"catalog": NewCatalogServer,
}

// ServerNames lists the demo servers, in the demo's order.
func ServerNames() []string { return []string{"notes", "web"} }

// NewServer returns a fresh demo server by name.
func NewServer(name string) (*mcp.Server, error) {
	f, ok := servers[name]
	if !ok {
		return nil, fmt.Errorf("no demo server %q (there are %v)", name, slices.Sorted(maps.Keys(servers)))
	}
	return f(), nil
}

// Serve runs a fresh demo server over t until the client disconnects or ctx
// ends.
func Serve(ctx context.Context, name string, t mcp.Transport) error {
	s, err := NewServer(name)
	if err != nil {
		return err
	}
	return s.Run(ctx, t)
}

// InProcess starts the named demo servers (all of them when names is empty)
// in this process, connected over in-memory transports, and returns them as
// conduit servers with those ids. stop ends the servers' sessions; call it
// after closing the hub or client.
func InProcess(ctx context.Context, names ...string) (srvs []conduit.Server, stop func(), err error) {
	if len(names) == 0 {
		names = ServerNames()
	}
	ctx, cancel := context.WithCancel(ctx)
	var sessions []*mcp.ServerSession
	var mu sync.Mutex
	stop = func() {
		cancel()
		mu.Lock()
		defer mu.Unlock()
		for _, s := range slices.Backward(sessions) {
			s.Close()
		}
		sessions = nil
	}
	for _, name := range names {
		s, err := NewServer(name)
		if err != nil {
			stop()
			return nil, nil, err
		}
		st, ct := mcp.NewInMemoryTransports()
		// A server must be connected before its client initializes.
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("demo server %s: %w", name, err)
		}
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
		srvs = append(srvs, conduit.Server{ID: name, Transport: ct})
	}
	return srvs, stop, nil
}

// SearchHub connects the notes, web and catalog servers in this process to
// a hub whose policy offers 43 of their 45 tools, past the 40 at which a
// Conversation searches, and allows conduit's own search_tools. closeAll
// closes the hub, then the servers. The examples' tests run a whole search
// loop (search, reveal, call) over it.
func SearchHub(ctx context.Context) (hub *conduit.Hub, closeAll func(), err error) {
	srvs, stop, err := InProcess(ctx, "notes", "web", "catalog")
	if err != nil {
		return nil, nil, err
	}
	hub, err = conduit.NewHub(ctx, srvs, &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Allow("web/*", "notes/search_*", "catalog/*", "conduit/search_tools"),
	)})
	if err != nil {
		stop()
		return nil, nil, err
	}
	return hub, func() { hub.Close(); stop() }, nil
}
