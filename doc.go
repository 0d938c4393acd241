// Package conduit is a governed source of MCP tools for an LLM. A [Client]
// serves one MCP server; a [Hub] serves many. Both list their tools as a
// [ToolSet]. Each tool call runs through one pipeline of policy, approval,
// hooks, argument validation, timeouts and taint.
//
// The provider formats (Anthropic, OpenAI, Gemini) live in package
// adapters and its subpackages. This package knows nothing of them.
//
// Both are made with one [Options] (nil: the defaults). Each field means
// the same for a hub and a client:
//
//	hub, err := conduit.NewHub(ctx, servers, &conduit.Options{Policy: p, Approver: a})
//	defer hub.Close()
//	ts, err := hub.ListTools(ctx)
//	res, err := hub.CallTool(ctx, "github__get_issue", args, &conduit.CallOptions{ToolSet: ts})
//
// # The pipeline
//
// Every governed request goes through one pipeline. That covers a tool
// call, a prompt, a resource read and a completion. [Hub.CallTool] and
// [Client.CallTool] run these steps, in order:
//
//   - [ToolSet.Resolve]: the exposed name against the offered tool set,
//     and the arguments to a JSON object. An unknown name, or arguments
//     that are not an object, are answered without sending anything.
//   - the [Policy]: the first matching rule decides; no match denies.
//   - for "ask", the [Approver]. With none configured, the call is denied,
//     saying approval was needed.
//   - before-hooks, which may rewrite the arguments or deny.
//   - validation against the input schema, when enabled. Each schema is
//     compiled once per tool set.
//   - the request, with its timeout, _meta, progress and cancellation.
//   - after-hooks.
//
// The call's context and its CallTimeout (default 5 minutes)
// bound the whole pipeline. This holds even when an approver or hook
// ignores them. Every failure is an [*Error]. Its Kind tells a policy
// denial from a timeout, a lost server or a JSON-RPC error. A result with
// isError is a result.
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
// or an approver could change them. The caller's map stays as it was.
//
// The adapters add two steps around it. ExecuteToolCalls parses the
// provider's response. It resolves each call against the offered tool
// set. It strips strict mode's nulls. Then it runs each call through
// ResolvedCaller, which only checks that the tool is the set's own. A
// Source that is not conduit's own, or wraps a Hub, gets CallTool. The
// adapters bound that call. Once every call is done, the answers are
// written in the model's order, within the turn's budget.
//
// An approver that cannot decide now answers [Defer]. The call is not
// sent. It fails with [ErrDeferred], and its [Deferral] holds what it
// waits for. The decision taken later is passed as [CallOptions.Approval].
// The approver is not asked again.
//
// A handler may defer what a server asks during a call the same way
// ([DeferInput]). The question and what the call needs to go on are an
// [Input]. It comes back as [CallOptions.Input] with the answers. A caller
// may pass a server's questions on to its own client, as conduit serve
// does. It uses the same field to end a request with the questions, and
// to make the retry. The adapters' Conversation keeps such calls pending.
// It saves them with its state and resumes them in any process.
//
// Results are returned as the server sent them, never shaped. A program
// that hands them to a model itself calls adapters.ShapeForModel. The adapters
// render results for their provider, placeholders included.
//
// # Hubs and clients
//
// A [Client] is a hub of one server whose tools keep their own names. Both
// take the same [Options]. Both start with their servers down if they
// must; [Options.RequireServers] makes them fail instead. Both reconnect
// their servers. A nil Policy means no rules, every call allowed. NewHub
// asks for one all the same, since a hub mixes servers. [AllowAll] says it.
//
// # Names
//
// Exposed names match ^[A-Za-z_][A-Za-z0-9_-]{0,63}$ (see adapters.SanitizeName).
// A hub exposes server__tool; a client exposes the tool's own name. Either
// puts [Options.Prefix] in front. Two tools may want the same exposed
// name. Then both are left out and reported in [ToolSet.Skipped]. Neither
// ever shadows the other. Servers are listed in configuration order and
// tools by name. So a listing is byte-identical between turns.
//
// # Sessions
//
// Each server has one persistent session for the life of its hub or
// client. A server of IdentityPrincipal has one per principal. A hub
// starts with whatever servers answer. [Hub.Status] reports the others.
// They are left out of listings and reconnected with backoff. So is a
// server whose session is lost. A server's
// notifications/tools/list_changed makes the next listing ask it again.
// Otherwise a listing costs no round trip.
//
// A tool of a server that is down is missing from the listings. The
// listings say so ([ToolSet.Warnings]). The tool may have been offered
// before the server went down. A call of it is then answered
// ErrUnavailable ("try again later"), not as an unknown tool.
//
// A session is over in two cases:
//
//   - The SDK ends it, as when a stdio child exits. The error then carries
//     the child's exit status and the tail of its stderr.
//   - A failed request is followed by a failed ping. This catches an HTTP
//     server that went away. The SDK reports that per request without
//     ending the session.
//
// A stdio child may write a line to stdout that is not one JSON-RPC
// message. Examples are a debugger's banner, a stray print, or JSON nested
// deeper than 1000 levels. That line is dropped and logged as a warning.
// The warnings are capped at one a second per server. The session goes on.
// A response nested too deep answers its call with an error. A JSON-RPC
// batch is read as its messages.
//
// # Identity per principal
//
// A server's [Identity] says whose credentials its sessions carry. By
// default they are the server's own, shared by every caller. Under
// [IdentityPrincipal] they are each principal's ([CallOptions.Principal],
// [ListOptions.Principal]). Each principal then gets a session, opened
// with their [Server.Principals] entry or their OAuth tokens. These
// sessions are pooled per server ([Options.MaxPrincipalSessions],
// [Options.PrincipalIdleTimeout]).
//
// One place picks a request's session, and it picks the principal's. So
// no request ever goes out with another principal's credentials or the
// shared ones. A request may name no principal, or a principal without
// credentials. It is refused with nothing sent ([ErrNoPrincipal], a login
// needed). Their listings leave the server out.
//
// # Pins
//
// With [Options.Pins], a hub or client offers only pinned tools. A tool
// qualifies when its listed definition is the one pinned (see [pins.Pins]
// and [pins.CanonicalTool]). A changed or new tool is left out of every
// tool set. [ToolSet.Drift], [ServerStatus.Drift] and [Trace.PinDrift]
// report it with a diff. A call to it is refused with nothing sent.
//
// Before a call is sent, the server's current listing is checked. So a
// list_changed or a reconnection within a session cannot slip a changed
// definition past the pins. The lock file is mcp.lock.json beside the
// configuration. [pins.Load] reads it. [pins.Pins.Save] (and conduit pin)
// write it.
//
// # Prompts, resources and what servers send
//
// A hub's or client's prompts ([Hub.ListPromptsFor], [Hub.GetPrompt]) are
// named as its tools are. Its resources and resource templates
// ([Hub.ListResourcesFor], [Hub.ReadResource]) keep their URIs. A URI that
// two servers list is left out. The policy governs them by the same
// server/name patterns. [Call.Method] tells them apart. Their requests are
// made, and their failures told, as a tool call's are.
//
// A server also sends its client things besides results. These are
// elicitation, sampling and roots requests, and log messages. They go to
// the [Handlers] of the call they belong to, or else to the hub's.
//
// # Errors
//
// A request that fails is answered by kind:
//
//   - The caller's ctx ending is ErrTimeout or ErrCanceled. errors.Is
//     reaches context.DeadlineExceeded or context.Canceled.
//   - CallOptions.RequestTimeout is ErrTimeout.
//   - A JSON-RPC error from the server is ErrServerError.
//   - A lost session is ErrUnavailable. So is a transport that could not
//     deliver the request, or a hub closed during the call.
//   - An answer that cannot be decoded is ErrServerError, when the
//     session still answers pings.
package conduit
