package conduit

import (
	"context"
	"slices"

	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client is a source over one server: a hub of one, whose tools keep their
// own sanitized names (after Options.Prefix) instead of server__tool, and
// which may go without a Policy (see [Options.Policy]). Like a hub, it starts even when its
// server is down, and keeps one session for its life, reconnecting with
// backoff after the session is lost. A Client is safe for concurrent use.
type Client struct{ c *core }

var _ Source = (*Client)(nil)

// NewClient connects to the server and returns once the first attempt is
// over, whatever its outcome: a server that could not be reached is
// reported by [Client.Status] and reconnected with backoff, and calls
// meanwhile are answered with KindUnavailable. ctx bounds the first
// attempt only. opts may be nil for the defaults.
func NewClient(ctx context.Context, server Server, opts *Options) (*Client, error) {
	c, err := newCore(ctx, []Server{server}, opts, false)
	if err != nil {
		return nil, err
	}
	return &Client{c}, nil
}

// ListTools returns the server's tools.
func (cl *Client) ListTools(ctx context.Context) (*ToolSet, error) { return cl.c.listTools(ctx) }

// ListToolsFor returns the tools less what the policy denies outright for
// opts' principal and taint.
func (cl *Client) ListToolsFor(ctx context.Context, opts *ListOptions) (*ToolSet, error) {
	return cl.c.listToolsFor(ctx, opts)
}

// CallTool runs one call through the pipeline. The error, if any, is an
// *Error.
func (cl *Client) CallTool(ctx context.Context, name string, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	return cl.c.call(ctx, name, args, opts)
}

// Status reports the server's state, as [Hub.Status] does for each of its
// servers.
func (cl *Client) Status() []ServerStatus { return cl.c.status() }

// Warnings reports what the client accepted at its start but is likely a
// mistake, as [Hub.Warnings] does.
func (cl *Client) Warnings() []string { return slices.Clone(cl.c.warnings) }

// Reconnect asks the server to connect now, as [Hub.Reconnect] does.
func (cl *Client) Reconnect() error { return cl.c.reconnect(cl.c.slots[0].srv.ID) }

// Close ends the session and stops the server process, if one was started,
// as [Hub.Close] does.
func (cl *Client) Close() error { return cl.c.close() }

// Store returns what the client's processes share, as [Hub.Store] does.
func (cl *Client) Store() store.Store { return cl.c.Store }

// StoreGiven reports whether Options.Store was given, as [Hub.StoreGiven]
// does.
func (cl *Client) StoreGiven() bool { return cl.c.ownStore == nil }
