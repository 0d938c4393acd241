package conduit

import (
	"context"
	"errors"
	"slices"

	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hub is a governed source over many servers. Its tools are exposed as
// server__tool. A hub starts even when some servers are down: their tools
// are absent and reported, and they are reconnected with backoff. A Hub is
// safe for concurrent use.
type Hub struct{ governed }

var _ Source = (*Hub)(nil)

// NewHub connects to every server concurrently and returns when each has
// been tried once; ctx bounds that first attempt only.
//
// A hub mixes servers, so allowing all of their tools must be said: NewHub
// refuses opts without a Policy (conduit.AllowAll() is that choice). The
// field's meaning is the one [Options.Policy] gives it.
func NewHub(ctx context.Context, servers []Server, opts *Options) (*Hub, error) {
	if opts == nil || opts.Policy == nil {
		return nil, errors.New("conduit: a hub needs a Policy (conduit.AllowAll() allows every call)")
	}
	c, err := newCore(ctx, servers, opts, true)
	if err != nil {
		return nil, err
	}
	h := &Hub{governed{c}}
	c.owner = h
	return h, nil
}

// governed is what a Hub and a Client share: every method but Reconnect
// and the constructor. A Client is a hub of one server, so each method is
// written once, here, and documented for both.
type governed struct{ c *core }

// ListTools returns the tool set of every server that is up.
func (g *governed) ListTools(ctx context.Context) (*ToolSet, error) { return g.c.listTools(ctx) }

// ListToolsFor returns the tool set less what the policy denies outright
// for opts' principal and taint.
func (g *governed) ListToolsFor(ctx context.Context, opts *ListOptions) (*ToolSet, error) {
	return g.c.listToolsFor(ctx, opts)
}

// CallTool runs one call, named by its exposed name, through the governed
// pipeline. The error, if any, is an *Error.
func (g *governed) CallTool(ctx context.Context, name string, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	return g.c.call(ctx, name, args, opts)
}

// ResolvedCaller returns how to run a call whose name the caller
// resolved itself, with [ToolSet.Resolve]: t is the tool it returned, and
// args the object. Nothing is resolved again: t is only checked to be
// the tool set's own, and one that is not is answered ErrUnknownTool. It returns nil unless
// src is this hub or client itself. So a type that embeds a Hub to change
// its CallTool, and passes itself, gets nil, and its CallTool is used.
// Package adapters calls it with the Source it was given.
//
// The call is CallTool's in all else: one pipeline, bounded by the call's
// time limit, ended when ctx ends. args are copied before a hook or an
// approver could change them, so the caller's map stays as it was.
func (g *governed) ResolvedCaller(src Source) func(ctx context.Context, t *Tool, args map[string]any, opts *CallOptions) (*mcp.CallToolResult, error) {
	if src == nil || src != g.c.owner {
		return nil
	}
	return g.c.resolved
}

// Status reports each server's state, in configuration order.
func (g *governed) Status() []ServerStatus { return g.c.status() }

// Warnings reports what the hub accepted at its start but is likely a
// mistake, one line each: a policy that names a server that is not
// configured ([Policy.Check]). Each was logged as a warning too.
func (g *governed) Warnings() []string { return slices.Clone(g.c.warnings) }

// Reconnect asks the server with the given id to connect now: one that is
// down skips the rest of its backoff, and one that needs a login tries
// again, asking the user (its OAuth Authorize) once more if an earlier
// login failed or was declined; a hub otherwise waits for new tokens
// rather than ask again. It does nothing to a server that is up.
func (h *Hub) Reconnect(id string) error { return h.c.reconnect(id) }

// Close ends every session and stops every server process the hub started;
// no goroutine of the hub outlives it. Calls in flight are ended and
// answered with ErrUnavailable. Sessions close concurrently; a stdio
// server that does not exit when its stdin closes is sent SIGTERM after
// two seconds.
func (g *governed) Close() error { return g.c.close() }

// Store returns what the hub's processes share: Options.Store, or the
// in-memory store the hub made when it was given none.
func (g *governed) Store() store.Store { return g.c.Store }

// StoreGiven reports whether Options.Store was given. When it was not, the
// hub keeps what it shares in a store of its own memory, which holds
// within this process only; resuming a saved conversation state then
// needs a store given (see package adapters).
func (g *governed) StoreGiven() bool { return g.c.ownStore == nil }
