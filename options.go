package conduit

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit/pins"
	"github.com/conduitmcp/conduit/store"
)

// defaultKeepAlive is how long a session may be idle before it is pinged.
// It applies to servers reached by URL, when [Options.KeepAlive] is zero.
const defaultKeepAlive = 30 * time.Second

// defaultMaxPrincipalSessions bounds the sessions a server of
// [IdentityPrincipal] keeps open at once. There is one per principal. It
// applies when [Options.MaxPrincipalSessions] is zero.
const defaultMaxPrincipalSessions = 32

// defaultPrincipalIdleTimeout is how long a principal's session is kept
// without a request. It applies to servers of [IdentityPrincipal], when
// [Options.PrincipalIdleTimeout] is zero.
const defaultPrincipalIdleTimeout = 10 * time.Minute

// Options configure a [Hub] ([NewHub]) or a [Client] ([NewClient]). They
// set the governance of every call and how the servers' sessions are
// kept. A nil *Options means the defaults. So does the zero value of each
// field. Each field means the same for a hub and a client.
type Options struct {
	// Policy decides every call, and every prompt, resource and completion
	// request. Nil means no rules: every call is allowed (Approver, Hooks,
	// Filter, Validate and Pins still apply). NewHub requires a Policy;
	// conduit.AllowAll() says "no rules" explicitly. Configure a policy on
	// anything you hand to a model.
	Policy *Policy
	// LaxPolicy accepts a policy that names a server that is not
	// configured (see [Policy.Check]). NewHub and NewClient then log a
	// warning, reported by Warnings, instead of failing. By default such a
	// policy is refused. A misspelt deny rule would otherwise deny nothing.
	LaxPolicy bool
	// LocalServers are the Server ids of the program's own tools
	// ([LocalTool]) that are not configured servers. The policy may name
	// them as it names a configured server. Conduit's own ("conduit")
	// needs no entry.
	LocalServers []string
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
	// pinned one (see [pins.Pins]). A changed or new tool is left out of
	// every tool set. A call to it is refused, nothing sent.
	Pins *pins.Pins
	// Prefix is put in front of every exposed name of tools and prompts.
	// With "gh_", a client's get_issue is exposed as gh_get_issue. A hub's
	// github__get_issue is exposed as gh_github__get_issue.
	Prefix string

	// CallTimeout bounds each call in all, approval and hooks included.
	// A call's own CallOptions.CallTimeout takes its place when set. If
	// zero, 5 minutes; negative: no bound beyond the
	// call's context.
	CallTimeout time.Duration
	// RequestTimeout bounds each request to a server. A call's own
	// CallOptions.RequestTimeout takes its place when set. If zero, only
	// the call's own bounds apply.
	RequestTimeout time.Duration
	// ConnectTimeout bounds each connection attempt (default 30s). An
	// OAuth login under way in it is not bounded by it. A person may take
	// longer over that; oauth.Config.AuthorizeTimeout bounds it.
	ConnectTimeout time.Duration
	// RequireServers makes NewHub and NewClient fail fast. Every server
	// must be up within ConnectTimeout of the call. Meanwhile they retry
	// with the Reconnect backoff. Otherwise they return an error matching
	// ErrServersDown, and keep nothing running.
	//
	// Without it, they return with whatever servers answered the first
	// attempt. The others are down. Status and ToolSet.Warnings report
	// them, and they are reconnected.
	RequireServers bool
	// Reconnect configures reconnection after a server is lost.
	Reconnect Backoff
	// Limits bound each call's arguments and result (see [Limits]). The
	// zero value means their defaults.
	Limits Limits
	// KeepAlive is how long a session may go without an answer from its
	// server before conduit pings it. A server may fail the ping, or not
	// answer it within KeepAlive (and at least 10s). It is then down, as
	// after any lost session. Its tools leave the listings and it is
	// reconnected. Zero means 30s for servers reached by URL.
	// The others get no pings; a child that exits is noticed when its pipes
	// close. Negative means no pings.
	KeepAlive time.Duration

	// MaxPrincipalSessions bounds the sessions each server of
	// [IdentityPrincipal] keeps open at once. There is one per principal.
	// For a stdio server each is a child process. Zero means 32. A
	// principal's first request opens theirs. At the bound, the session
	// idle the longest is closed first. Idle means no request in flight. When every one is busy, the request
	// is refused with ErrUnavailable, saying to retry, nothing sent.
	MaxPrincipalSessions int
	// PrincipalIdleTimeout closes a principal's session that has had no
	// request for this long. Zero means 10 minutes.
	// Negative means only the bound closes sessions. Their next request
	// opens it again.
	PrincipalIdleTimeout time.Duration
	// SubjectToken returns a principal's own access token. It serves a
	// server of IdentityPrincipal whose OAuth grant is token exchange
	// (oauth.GrantTokenExchange). That server exchanges it for a token of
	// its own (RFC 8693). The server then sees the principal, never this
	// process. It is asked whenever a principal's session needs a token.
	// "" or an error means the principal has none. The principal then
	// needs a login for the server. conduit serve sets it to the verified
	// token its caller authenticated with.
	SubjectToken func(ctx context.Context, principal string) (string, error)

	// Handlers, when set, answer servers' requests (elicitation, sampling,
	// roots) and log messages. They declare the capabilities they cover.
	// With them, the calls' own CallOptions.Handlers take effect (see
	// [Handlers]).
	Handlers *Handlers
	// Implementation is sent to servers as the client's identity (default
	// conduit and its Version).
	Implementation *mcp.Implementation
	// Logger receives conduit's and the MCP SDK's logs. Nil discards them.
	Logger *slog.Logger
	// Trace, when set, is told of server and call events.
	Trace *Trace
	// Store holds what the processes of one deployment share (see package
	// store). It holds the claims that keep a resumed conversation's
	// decided calls from being sent twice. Under conduit serve, it also
	// holds taint, single-use marks and counters for limits.
	//
	// Nil means an in-memory store of the hub or client. Everything that
	// uses the hub or client shares it, within this process only.
	// Resuming a saved conversation state then fails (adapters.ErrNoStore).
	// A copy resumed by another process could send its calls again.
	//
	// store/sqlitestore is shared by the processes of one machine.
	// store/redisstore is shared by a fleet. store.NewMemory(), given here,
	// is the explicit choice of one process. A store given here is the
	// caller's to close.
	Store store.Store
}
