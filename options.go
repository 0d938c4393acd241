package conduit

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultCallTimeout bounds one governed call in all, approval and hooks
// included, when neither [CallOptions.CallTimeout] nor
// [Options.CallTimeout] is set.
const DefaultCallTimeout = 5 * time.Minute

// DefaultKeepAlive is how long a session with a server reached by URL may
// be idle before it is pinged, when [Options.KeepAlive] is zero.
const DefaultKeepAlive = 30 * time.Second

// Options are what a [Hub] and a [Client] have alike: the governance of
// every call and how sessions are kept. The zero value is valid (a hub
// still needs a Policy).
type Options struct {
	// Policy decides every call. A hub must have one; AllowAll() is an
	// explicit choice. A client with none of Policy, Approver, Hooks,
	// Filter or Validate is ungoverned: the model's calls are sent as
	// asked; with any of them but no Policy, every call is allowed and the
	// rest still applies. Configure a policy on any client you hand to a
	// model.
	Policy *Policy
	// StrictPolicy makes NewHub and NewClient fail when the policy names
	// a server that is not configured (see [Policy.Check]), instead of
	// logging a warning and reporting it by Warnings.
	StrictPolicy bool
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
	// Pins, when set, offers only the tools whose listed definition is the
	// pinned one (see [Pins]): a changed or new tool is left out of every
	// tool set and a call to it is refused, nothing sent.
	Pins *Pins

	// CallTimeout bounds each call in all, approval and hooks included,
	// when the call's own CallOptions.CallTimeout is zero (default
	// DefaultCallTimeout; negative: no bound beyond the call's context).
	CallTimeout time.Duration
	// RequestTimeout bounds the request to the server when the call's
	// CallOptions.Timeout is zero (zero: only the call's own bounds).
	RequestTimeout time.Duration
	// ConnectTimeout bounds each connection attempt (default 30s), except
	// an OAuth login under way in it, which a person may take longer over:
	// oauth.Config.AuthorizeTimeout bounds that.
	ConnectTimeout time.Duration
	// Reconnect configures reconnection after a server is lost.
	Reconnect Backoff
	// Limits bound each call's arguments and result (see [Limits]); the
	// zero value means their defaults.
	Limits Limits
	// KeepAlive is how long a session may go without an answer from its
	// server before conduit pings it. A server that fails the ping, or
	// does not answer it within KeepAlive (and at least 10s), is down, as
	// after any lost session: its tools leave the listings and it is
	// reconnected. Zero: DefaultKeepAlive for servers reached by URL, and
	// no pings to the others (a child that exits is noticed when its
	// pipes close); negative: no pings.
	KeepAlive time.Duration

	// Elicitation, when set, answers servers' elicitation requests and
	// makes the hub advertise the elicitation capability. It is the same
	// as Handlers.Elicitation, which wins when both are set.
	Elicitation func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// Handlers, when set, answer servers' requests (elicitation, sampling,
	// roots) and log messages, and declare the capabilities they cover;
	// with them, the calls' own CallOptions.Handlers take effect (see
	// [Handlers]).
	Handlers *Handlers
	// Implementation is sent to servers as the client's identity (default
	// conduit and its Version).
	Implementation *mcp.Implementation
	// Logger receives conduit's and the MCP SDK's logs; nil discards them.
	Logger *slog.Logger
	// Trace, when set, is told of server and call events.
	Trace *Trace
}

// HubOptions configure a [Hub]. Policy is required.
type HubOptions struct {
	Options
}

// ClientOptions configure a [Client].
type ClientOptions struct {
	Options
	// Prefix is put in front of every exposed name.
	Prefix string
}
