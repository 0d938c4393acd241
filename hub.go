package conduit

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HubOptions configures a [Hub]. Policy is required.
type HubOptions struct {
	// Servers, in the order their tools are listed.
	Servers []Server
	// Policy decides every call. A hub must have one; AllowAll() is an
	// explicit choice.
	Policy *Policy
	// Approver decides the calls the policy asks about. Without one, an
	// "ask" is answered as a denial saying that approval was needed.
	Approver Approver
	// Hooks run around every call, in order.
	Hooks []Hook
	// Filter, when set, keeps only the tools for which it returns true.
	Filter func(server string, tool *mcp.Tool) bool
	// Validate checks arguments against each tool's input schema before a
	// call is sent. Schemas are compiled once per tool set.
	Validate bool

	// Implementation is sent to servers as the client's identity.
	Implementation *mcp.Implementation
	// Logger receives conduit's and the MCP SDK's logs; nil discards them.
	Logger *slog.Logger
	// Trace, when set, is told of server and call events.
	Trace *Trace
	// Reconnect configures reconnection after a server is lost.
	Reconnect Backoff
	// ConnectTimeout bounds each connection attempt (default 30s).
	ConnectTimeout time.Duration
	// RequestTimeout is the default CallOptions.Timeout (zero: none beyond
	// the call's context).
	RequestTimeout time.Duration
	// Elicitation, when set, answers servers' elicitation requests and
	// makes the hub advertise the elicitation capability.
	Elicitation func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
}

// Hub is a governed source over many servers. Its tools are exposed as
// server__tool. A hub starts even when some servers are down: their tools
// are absent and reported, and they are reconnected with backoff. A Hub is
// safe for concurrent use.
type Hub struct{ c *core }

var _ Source = (*Hub)(nil)

// NewHub connects to every server concurrently and returns when each has
// been tried once. ctx bounds that first attempt only.
func NewHub(ctx context.Context, opts HubOptions) (*Hub, error) {
	if opts.Policy == nil {
		return nil, errors.New("conduit: a hub needs a Policy (conduit.AllowAll() allows every call)")
	}
	c, err := newCore(ctx, opts.Servers, commonOptions{
		governance:     governance{Policy: opts.Policy, Approver: opts.Approver, Hooks: opts.Hooks, Filter: opts.Filter, Validate: opts.Validate},
		Implementation: opts.Implementation,
		Logger:         opts.Logger,
		Trace:          opts.Trace,
		Reconnect:      opts.Reconnect,
		ConnectTimeout: opts.ConnectTimeout,
		RequestTimeout: opts.RequestTimeout,
		Elicitation:    opts.Elicitation,
	}, true, "")
	if err != nil {
		return nil, err
	}
	return &Hub{c}, nil
}

// ListTools returns the tool set of every server that is up.
func (h *Hub) ListTools(ctx context.Context) (*ToolSet, error) { return h.c.listTools(ctx) }

// ListToolsFor returns the tool set less what the policy denies outright
// for opts' principal and taint.
func (h *Hub) ListToolsFor(ctx context.Context, opts *ListOptions) (*ToolSet, error) {
	return h.c.listToolsFor(ctx, opts)
}

// CallTool runs one call, named by its exposed name, through the governed
// pipeline. The error, if any, is an *Error.
func (h *Hub) CallTool(ctx context.Context, name string, args any, opts *CallOptions) (*mcp.CallToolResult, error) {
	return h.c.call(ctx, name, args, opts)
}

// Status reports each server's state, in configuration order.
func (h *Hub) Status() []ServerStatus { return h.c.status() }

// Close ends every session and stops every server process the hub started;
// no goroutine of the hub outlives it. Calls in flight are ended and
// answered with KindUnavailable. Sessions close concurrently; a stdio
// server that does not exit when its stdin closes is sent SIGTERM after
// two seconds.
func (h *Hub) Close() error { return h.c.close() }
