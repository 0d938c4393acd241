// Package conduit is a governed source of MCP tools for an LLM: a [Client]
// over one MCP server or a [Hub] over many, listing their tools as a
// [ToolSet] and running each tool call through one pipeline of policy,
// approval, hooks, argument validation, timeouts and taint.
//
// The provider formats (Anthropic, OpenAI, Gemini) live in package
// adapters and its subpackages; this package knows nothing of them.
//
// Both are made with one [Options] (nil: the defaults), each field meaning
// the same for a hub and a client:
//
//	hub, err := conduit.NewHub(ctx, servers, &conduit.Options{Policy: p, Approver: a})
//	defer hub.Close()
//	ts, err := hub.ListTools(ctx)
//	res, err := hub.CallTool(ctx, "github__get_issue", args, &conduit.CallOptions{ToolSet: ts})
//
// # The pipeline
//
// Every governed request (a tool call, a prompt, a resource read, a
// completion) goes through one pipeline. [Hub.CallTool] and
// [Client.CallTool] run, in order: [ToolSet.Resolve],
// the exposed name against the offered tool set and the arguments to a
// JSON object (an unknown name, or arguments that are not an object, are
// answered without sending anything); the [Policy] (first matching rule
// decides, no match denies); for "ask", the [Approver] (none configured:
// denied, saying approval was needed); before-hooks, which may rewrite the
// arguments or deny; validation against the input schema, when enabled,
// with each schema compiled once per tool set; the request, with its
// timeout, _meta, progress and cancellation; and after-hooks. The whole
// pipeline is bounded by the call's context and its CallTimeout (default
// [DefaultCallTimeout]), even when an approver or hook ignores them. Every
// failure is an [*Error] whose Kind tells a policy denial from a timeout, a
// lost server or a JSON-RPC error; a result with isError is a result.
//
// # The path of a call
//
// A call goes one way, from top to bottom, and never back:
//
//	Hub.CallTool(name, args)      Hub.ResolvedCaller(hub)(tool, args)
//	         \                              /
//	begin      Trace's start event; the call's time limit starts
//	resolve    the name to its tool, once; the arguments to an object
//	authorize  the policy decides
//	admit      "ask" goes to the approver; then the before-hooks
//	check      argument limits, schema validation, halt
//	send       the session; the request; what its failure means
//	after      the result limit; the after-hooks
//	done       Trace's end event
//
// A Client runs the same code: it is a hub of one server. The arguments
// are decoded once. They are copied once, deeply, and only when a hook
// or an approver could change them; the caller's map stays as it was.
//
// The adapters add two steps around it. ExecuteToolCalls parses the
// provider's response and resolves each call against the offered tool
// set. It strips strict mode's nulls, then runs each call through
// ResolvedCaller, which only checks that the tool is the set's own. A Source that
// is not conduit's own, or wraps a Hub, gets CallTool, bounded by the
// adapters. Once every call is done, the answers are written in the
// model's order, within the turn's budget.
//
// An approver that cannot decide now answers [Defer]: the call is not
// sent, and fails with [KindDeferred], its [Deferral] holding what it
// waits for; the decision taken later is passed as
// [CallOptions.Approval], and the approver is not asked again. A handler
// may defer what a server asks during a call the same way ([DeferInput]):
// the question and what the call needs to go on are an [Input], given
// back as [CallOptions.Input] with the answers, the same field by which a
// caller that passes a server's questions on to its own client (as
// conduit serve does) ends a request with them and makes the retry. The
// adapters' Conversation keeps such calls pending, saves them with its
// state, and resumes them in any process.
//
// Results are returned as the server sent them, never shaped: a program
// that hands them to a model itself calls [ShapeForModel]; the adapters
// render results for their provider, placeholders included.
//
// # Hubs and clients
//
// A [Client] is a hub of one server whose tools keep their own names:
// both take the same [Options], start with their servers down if they
// must ([Options.RequireServers] makes them fail instead), and reconnect
// them. A nil Policy means no rules, every call allowed; NewHub asks for
// one all the same, since a hub mixes servers ([AllowAll] says it).
//
// # Names
//
// Exposed names match ^[A-Za-z_][A-Za-z0-9_-]{0,63}$ (see [SanitizeName]).
// A hub exposes server__tool; a client the tool's own name; either puts
// [Options.Prefix] in front. Two tools that would share an exposed name are both left out and
// reported in [ToolSet.Skipped], never one shadowing the other. Servers are
// listed in configuration order and tools by name, so a listing is
// byte-identical between turns.
//
// # Sessions
//
// Each server has one persistent session (one per principal for a server
// of IdentityPrincipal) for the life of its hub or
// client. A hub starts with whatever servers answer; the others are
// reported by [Hub.Status], left out of listings, and reconnected with
// backoff, as is a server whose session is lost. A server's
// notifications/tools/list_changed makes the next listing ask it again;
// otherwise a listing costs no round trip.
//
// A tool of a server that is down is missing from the listings, which
// say so ([ToolSet.Warnings]); a call of it, offered before the server
// went down, is answered KindUnavailable ("try again later"), not as an
// unknown tool.
//
// A session is over when the SDK ends it (a stdio child that exits; the
// error then carries the child's exit status and the tail of its
// stderr), or when a failed request is followed by a failed ping (an HTTP
// server that went away, which the SDK reports per request without ending
// the session). A line a stdio child writes to stdout that is not one
// JSON-RPC message (a debugger's banner, a stray print, JSON nested deeper
// than 1000 levels) is dropped and logged as a warning, at most one a
// second per server, and the session goes on; a response nested too deep
// answers its call with an error. A JSON-RPC batch is read as its
// messages.
//
// # Identity per principal
//
// A server's [Identity] says whose credentials its sessions carry: the
// server's own, shared by every caller (the default), or, under
// [IdentityPrincipal], each principal's ([CallOptions.Principal],
// [ListOptions.Principal]): a session per principal, opened with their
// [Server.Principals] entry or their OAuth tokens, pooled per server
// ([Options.MaxPrincipalSessions], [Options.PrincipalIdleTimeout]). The one
// place that picks a request's session picks the principal's, so no
// request ever goes out with another principal's credentials or the
// shared ones; a request that names no principal, or of a principal
// without credentials, is refused with nothing sent ([ErrNoPrincipal], a
// login needed), and their listings leave the server out.
//
// # Pins
//
// With [Options.Pins], a hub or client offers only the tools whose listed
// definition is the one pinned (see [pins.Pins] and [pins.CanonicalTool]): a changed
// or new tool is left out of every tool set and reported by
// [ToolSet.Drift], [ServerStatus.Drift] and [Trace.PinDrift] with a diff,
// and a call to it is refused with nothing sent. Before a call is sent the
// server's current listing is checked, so a list_changed or a reconnection
// within a session cannot slip a changed definition past the pins. The
// lock file, mcp.lock.json beside the configuration, is read by [pins.Load]
// and written by [pins.Pins.Save] (and conduit pin).
//
// # Prompts, resources and what servers send
//
// A hub's or client's prompts ([Hub.ListPromptsFor], [Hub.GetPrompt]) are
// named as its tools are; its resources and resource templates
// ([Hub.ListResourcesFor], [Hub.ReadResource]) keep their URIs, a URI that
// two servers list being left out. The policy governs them by the same
// server/name patterns ([Call.Method] tells them apart), and their requests
// are made and their failures told as a tool call's are. What a server
// sends its client besides results (elicitation, sampling and roots
// requests, log messages) goes to the [Handlers] of the call it belongs
// to, or else to the hub's.
//
// # Errors
//
// A request that fails is answered by kind: the caller's ctx ending is
// KindTimeout or KindCanceled (errors.Is reaches context.DeadlineExceeded
// or context.Canceled); CallOptions.RequestTimeout is KindTimeout; a JSON-RPC
// error from the server is KindServerError; a lost session, a transport
// that could not deliver the request, or a hub closed during the call is
// KindUnavailable; an answer that cannot be decoded on a session that still
// answers pings is KindServerError.
package conduit
