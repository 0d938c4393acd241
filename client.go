package conduit

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientOptions configures a [Client].
type ClientOptions struct {
	// Server is the one server.
	Server Server
	// Prefix is put in front of every exposed name.
	Prefix string

	// Policy decides every call. A client with none of Policy, Approver,
	// Hooks, Filter or Validate is ungoverned: the model's calls are sent
	// as asked. With any of them but no Policy, every call is allowed and
	// the rest still applies. Configure a policy on any client you hand to
	// a model.
	Policy *Policy
	// Approver decides the calls the policy asks about.
	Approver Approver
	// Hooks run around every call, in order.
	Hooks []Hook
	// Filter, when set, keeps only the tools for which it returns true.
	Filter func(server string, tool *mcp.Tool) bool
	// Validate checks arguments against the tool's input schema first.
	Validate bool

	// Implementation, Logger, Trace, Reconnect, ConnectTimeout,
	// RequestTimeout and Elicitation are as in [HubOptions].
	Implementation *mcp.Implementation
	Logger         *slog.Logger
	Trace          *Trace
	Reconnect      Backoff
	ConnectTimeout time.Duration
	RequestTimeout time.Duration
	Elicitation    func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
}

// Client is a source over one server, keeping one session for its life and
// reconnecting after the session is lost. Its tools keep their own
// sanitized names, after Prefix. A Client is safe for concurrent use.
type Client struct{ c *core }

var _ Source = (*Client)(nil)

// NewClient connects to the server. It fails when the first connection
// attempt fails; after that, a lost session is reconnected with backoff.
func NewClient(ctx context.Context, opts ClientOptions) (*Client, error) {
	c, err := newCore(ctx, []Server{opts.Server}, commonOptions{
		governance:     governance{Policy: opts.Policy, Approver: opts.Approver, Hooks: opts.Hooks, Filter: opts.Filter, Validate: opts.Validate},
		Implementation: opts.Implementation,
		Logger:         opts.Logger,
		Trace:          opts.Trace,
		Reconnect:      opts.Reconnect,
		ConnectTimeout: opts.ConnectTimeout,
		RequestTimeout: opts.RequestTimeout,
		Elicitation:    opts.Elicitation,
	}, false, opts.Prefix)
	if err != nil {
		return nil, err
	}
	if st := c.conns[0].status(); st.State != StateUp {
		c.close()
		return nil, &Error{Kind: KindUnavailable, Server: opts.Server.ID,
			Message: "could not connect to " + opts.Server.ID, Err: st.Err}
	}
	return &Client{c}, nil
}

// Governed reports whether the client applies any governance.
func (cl *Client) Governed() bool { return cl.c.governed() }

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

// Status reports the server's state.
func (cl *Client) Status() ServerStatus { return cl.c.status()[0] }

// Close ends the session and stops the server process, if one was started,
// as [Hub.Close] does.
func (cl *Client) Close() error { return cl.c.close() }
