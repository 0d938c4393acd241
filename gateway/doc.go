// Package gateway serves a governed conduit hub as an MCP server, so that
// any MCP client (Claude Desktop, VS Code, an SDK's client) gets conduit's
// policy, approval and taint rules. `conduit serve` is a thin command on
// it.
//
// # What a client sees
//
// Each session has its own MCP server, whose tools are the hub's tool set
// as offered to the session's principal and taint ([conduit.Hub.ListToolsFor]):
// server__tool names, descriptions cleaned of invisible characters
// (toolcall.Description), the servers' input and output schemas and
// annotations as they are. Prompts are served as server__prompt,
// resources and resource templates under their own URIs (a URI two
// servers list is left out), completion and logging too, all governed by
// the same server/name policy patterns. In transparent mode
// ([Options.Transparent]) one server's tools and prompts keep their own
// names. A server that goes down, comes back or changes its lists makes
// every session's lists change, and its client is told
// (notifications/tools/list_changed and the others).
//
// # Calls
//
// A tools/call runs through the hub's pipeline, with the client's progress
// token (progress comes back as notifications/progress), its _meta (less
// the progress token and the protocol's io.modelcontextprotocol/ keys,
// which describe the client's hop) and its cancellation. Results are the
// server's, not shaped for a model, structuredContent included. A call
// conduit answers itself (a denial, a time-out, a server that is down) is
// a tool result with isError and conduit's message; an unknown tool and a
// server's JSON-RPC error are JSON-RPC errors, the server's passed on as
// it sent it.
//
// Once a client has received a server's output (a tool's result, a
// prompt, a resource's contents, completion values, or the server's error
// message), its principal is tainted by that server: the later calls and
// listings of every client of theirs are decided with that taint, so
// "tainted" rules apply to them, and tools they deny leave their lists.
// Taint belongs to the principal, not to a transport session: a client
// keeps it across reconnections and new sessions, and a client of
// protocol 2026-07-28, which has no session, has it too. A client that
// runs several conversations may name each in a request's _meta
// ([MetaConversation]): what the request receives taints that
// conversation and its principal. By default ([TaintPrincipal]) every
// request is decided (and listed) with all its principal has seen: a
// conversation id is the client's word, and a fresh one must not shed a
// taint (a tainted model that starts a sub-agent would otherwise hand it
// the injected instructions, untainted). [TaintConversation]
// ([Options.TaintScope]) decides a request with its conversation's taint
// alone, for clients trusted to keep their conversations apart. Taint is
// kept in the hub's store (Options.Hub.Store) for
// [Options.TaintLifetime]; a taint that cannot be read refuses the
// request, and one that cannot be recorded withholds the answer.
//
// A server of identity principal (conduit.IdentityPrincipal) serves each
// client's principal on their own session with it, with their own
// credentials; what it keeps per session (resources, prompts,
// subscriptions, its list changes) reaches that principal's clients only.
//
// # Approval and what servers ask
//
// A call the policy asks about becomes an elicitation request to the
// session's client, naming the tool and its arguments: accept runs the
// call, decline, cancel or no answer within [Options.ApprovalTimeout]
// deny it. A client that declared no elicitation cannot be asked: the
// call is denied with a message that says so (or Options.Hub's
// Approver decides, when one is set).
//
// What a server asks of its client during a call (elicitation, sampling,
// roots) goes to the client of the session that made the call, and its
// answer back (see [conduit.Handlers] for how a request is attributed to
// a call): a JSON-RPC request of a server of protocol 2025-11-25 or
// before, and the input requests of a multi-round-trip result of one of
// 2026-07-28 alike. What the client cannot answer (it did not declare the
// capability) is refused: a server of 2026-07-28 cannot be told so, and
// its call ends with an error instead ([conduit.ErrInputNotGiven]). Log
// messages go with the call they belong to; the servers' log
// level is the most verbose one a session asked for. Subscriptions to
// resources are made on the server for each session, and its updates go
// to the sessions subscribed.
//
// # Clients of protocol 2026-07-28
//
// The gateway speaks 2026-07-28 to the clients that speak it, and the
// older versions to the others. Over stdio ([Gateway.Serve]) such a
// client's requests are served on its one session, in rounds as below.
// Over Streamable HTTP, a request of 2026-07-28 (its MCP-Protocol-Version header, or its
// _meta) has no session: it is served on its own by a view of what the
// hub offers its principal with their taint (see [Options.TaintScope]),
// server/discover included, and nothing of its
// client is kept between requests in the gateway's memory, so that
// replicas behind a load balancer need no affinity. Its principal comes
// from its bearer token as a session's does, and a verified JWT is noted
// for token exchange alike. Such a client cannot be sent requests: an "ask" rule is
// answered with an input-required result carrying the approval as an
// elicitation, and the client's retry with its answer and the
// requestState runs the call without asking again (its answer is the
// call's conduit.CallOptions.Approval); what a server asks
// during a call reaches the client the same way (a server of 2026-07-28's
// input requests as it wrote them, its requestState carried inside the
// gateway's, through conduit.CallOptions.Input; a server of 2025-11-25's
// request while the call waits, in the replica that runs it, for
// ApprovalTimeout at most).
//
// The gateway seals every requestState it issues (encrypted and
// authenticated with AES-256-GCM under [Options.StateKeys], so the
// client reads nothing of it) and binds it to the method, the tool, prompt or
// URI, a digest of the arguments, the principal and an expiry
// (ApprovalTimeout): an altered, expired one, or one of another request or
// principal, is refused with invalid params and nothing sent. A state is
// used once: its id is claimed in the hub's store before anything runs,
// and the answer recorded, so the same state sent again (by a retry, or
// to another replica sharing the store) gets that answer instead of a
// second run. List results carry cache hints: ttlMs is
// [Options.ListTTL], and cacheScope "private" when the policy has
// conditions ([conduit.Policy.Conditional]) or a server's identity is per
// principal, since then what is listed (and read) depends on who asks.
//
// # Transports and their security
//
// [Gateway.Serve] serves one session over a transport (stdio, for a client
// that starts conduit serve). [Gateway.Handler] serves Streamable HTTP,
// a session per client (no session for a client of 2026-07-28); every
// request passes, in order: the Host header
// must name loopback or one of [HTTPOptions.Hosts], and an Origin header,
// when there is one, an allowed origin (against DNS rebinding); the body
// is bounded ([HTTPOptions.MaxBodyBytes], 413); and a bearer token must
// map to a principal ([HTTPOptions.Tokens], compared in constant time), or
// be a JWT access token of [HTTPOptions.OAuth]'s issuer for the gateway's
// resource URL (verified against the issuer's keys: see [OAuthOptions]),
// or the request is answered 401 with a Bearer challenge (RFC 6750, naming
// the protected resource metadata of RFC 9728) and nothing is forwarded.
// A session stays with the principal whose token opened it, and a
// principal is never empty (a token for "" is a configuration error, a
// JWT whose principal claim is empty a 401): a session of nobody would be
// anyone's. A refusal (401, 403, 413) is answered at once and its
// connection closed, its body unread; a body must arrive within
// [HTTPOptions.BodyTimeout], and ListenAndServe bounds the headers and
// idle keep-alive connections too ([HTTPOptions.HeaderTimeout],
// [HTTPOptions.IdleTimeout]), so that slow clients hold no descriptors.
// Nothing bounds the writing of a response: an event stream lasts as
// long as its call. A verified
// JWT is what a server of identity principal whose OAuth grant is token
// exchange exchanges for its own (conduit.Options.SubjectToken); a static
// token is never sent anywhere. [HTTPOptions.NoAuth] serves without
// tokens, on a loopback listener only.
package gateway
