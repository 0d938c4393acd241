// Package gateway serves a governed conduit hub as an MCP server. Any MCP
// client (Claude Desktop, VS Code, an SDK's client) then gets conduit's
// policy, approval and taint rules. `conduit serve` is a thin command on
// it.
//
// # What a client sees
//
// Each session has its own MCP server. Its tools are the hub's tool set as
// offered to the session's principal and taint
// ([conduit.Hub.ListToolsFor]):
//
//   - server__tool names;
//   - descriptions cleaned of invisible characters (toolcall.Description);
//   - the servers' input and output schemas and annotations, as they are.
//
// Prompts are served as server__prompt. Resources and resource templates
// keep their own URIs. A URI two servers list is left out. Completion and
// logging are served too. The same server/name policy patterns govern
// them all. In transparent mode ([Options.Transparent]) one server's tools
// and prompts keep their own names. A server may go down, come back or
// change its lists. Then every session's lists change, and its client is
// told (notifications/tools/list_changed and the others).
//
// # Calls
//
// A tools/call runs through the hub's pipeline. It carries the client's
// progress token. Progress comes back as notifications/progress. It
// carries the client's _meta and its cancellation too. The _meta loses
// the progress token and the protocol's io.modelcontextprotocol/ keys:
// they describe the client's hop. Results are the server's, not shaped
// for a model, structuredContent included. Conduit may answer a call
// itself (a denial, a time-out, a server that is down). That answer is a
// tool result with isError and conduit's message. An unknown tool is a
// JSON-RPC error. So is a server's JSON-RPC error, passed on as it sent
// it.
//
// A client may receive a server's output: a tool's result, a prompt, a
// resource's contents, completion values, or the server's error message.
// Its principal is then tainted by that server. Every client of that
// principal has its later calls and listings decided with that taint. So
// "tainted" rules apply to them, and tools they deny leave their lists.
//
// Taint belongs to the principal, not to a transport session. A client
// keeps it across reconnections and new sessions. A client of protocol
// 2026-07-28 has no session, and has it too.
//
// A client that runs several conversations may name each in a request's
// _meta ([MetaConversation]). What the request receives taints that
// conversation and its principal. By default ([TaintPrincipal]) every
// request is decided and listed with all its principal has seen. A
// conversation id is the client's word, and a fresh one must not shed a
// taint. Otherwise a tainted model that starts a sub-agent would hand it
// the injected instructions, untainted. [TaintConversation]
// ([Options.TaintScope]) decides a request with its conversation's taint
// alone. It is for clients trusted to keep their conversations apart.
//
// Taint is kept in the hub's store (Options.Hub.Store) for
// [Options.TaintLifetime]. A taint that cannot be read refuses the
// request. One that cannot be recorded withholds the answer.
//
// A server of identity principal (conduit.IdentityPrincipal) serves each
// client's principal on their own session with it. It uses that
// principal's own credentials. What it keeps per session reaches that
// principal's clients only: resources, prompts, subscriptions, its list
// changes.
//
// # Approval and what servers ask
//
// A call the policy asks about becomes an elicitation request to the
// session's client. It names the tool and its arguments. Accept runs the
// call. Decline, cancel or no answer within [Options.ApprovalTimeout]
// deny it. A client that declared no elicitation cannot be asked. Its call
// is denied with a message that says so. When Options.Hub has an
// Approver, that Approver decides instead.
//
// A server may ask its client something during a call: elicitation,
// sampling, roots. The request goes to the client of the session that
// made the call, and the answer comes back. [conduit.Handlers] says how a
// request is attributed to a call. This holds for a JSON-RPC request of a
// server of protocol 2025-11-25 or before. It holds alike for the input
// requests of a multi-round-trip result of a server of 2026-07-28.
//
// What the client cannot answer is refused: it did not declare the
// capability. A server of 2026-07-28 cannot be told so. Its call ends with
// an error instead ([conduit.ErrInputNotGiven]).
//
// Log messages go with the call they belong to. The servers' log level is
// the most verbose one a session asked for. Subscriptions to resources
// are made on the server for each session. Its updates go to the sessions
// subscribed.
//
// # Clients of protocol 2026-07-28
//
// The gateway speaks 2026-07-28 to the clients that speak it. It speaks
// the older versions to the others. Over stdio ([Gateway.Serve]) such a
// client's requests are served on its one session, in rounds as below.
//
// Over Streamable HTTP, a request of 2026-07-28 has no session. Its
// MCP-Protocol-Version header or its _meta marks it. It is served on its
// own by a view of what the hub offers its principal with their taint
// (see [Options.TaintScope]). That view includes server/discover. Nothing
// of its client is kept between requests in the gateway's memory. So
// replicas behind a load balancer need no affinity. Its principal comes
// from its bearer token, as a session's does. A verified JWT is noted for
// token exchange alike.
//
// Such a client cannot be sent requests. So an "ask" rule is answered
// with an input-required result that carries the approval as an
// elicitation. The client retries with its answer and the requestState.
// The retry runs the call without asking again. Its answer is the call's
// conduit.CallOptions.Approval. What a server asks during a call reaches
// the client the same way:
//
//   - A server of 2026-07-28's input requests go as it wrote them. Its
//     requestState is carried inside the gateway's, through
//     conduit.CallOptions.Input.
//   - A server of 2025-11-25's request waits with the call. It waits in
//     the replica that runs the call, for ApprovalTimeout at most.
//
// The gateway seals every requestState it issues. It is encrypted and
// authenticated with AES-256-GCM under [Options.StateKeys], so the client
// reads nothing of it. It is bound to:
//
//   - the method;
//   - the tool, prompt or URI;
//   - a digest of the arguments;
//   - the principal;
//   - an expiry (ApprovalTimeout).
//
// A state that is altered or expired is refused with invalid params. So is
// one of another request or principal. Nothing is sent then.
//
// A state is used once. Its id is claimed in the hub's store before
// anything runs, and the answer is recorded. The same state may be sent
// again, by a retry or to another replica sharing the store. It then gets
// that answer instead of a second run.
//
// List results carry cache hints. Their ttlMs is [Options.ListTTL]. Their
// cacheScope is "private" when the policy has conditions
// ([conduit.Policy.Conditional]) or a server's identity is per principal.
// Then what is listed (and read) depends on who asks.
//
// # Transports and their security
//
// [Gateway.Serve] serves one session over a transport. That is stdio, for
// a client that starts conduit serve. [Gateway.Handler] serves Streamable
// HTTP, a session per client. A client of 2026-07-28 gets no session.
// Every request passes these checks, in order:
//
//   - The Host header must name loopback or one of [HTTPOptions.Hosts].
//   - An Origin header, when there is one, must be an allowed origin.
//     This stops DNS rebinding.
//   - The body is bounded ([HTTPOptions.MaxBodyBytes], 413).
//   - A bearer token must map to a principal ([HTTPOptions.Tokens]). It is
//     compared in constant time.
//   - Or it must be a JWT access token of [HTTPOptions.OAuth]'s issuer for
//     the gateway's resource URL. It is verified against the issuer's
//     keys (see [OAuthOptions]).
//
// Otherwise the request is answered 401 with a Bearer challenge
// (RFC 6750). The challenge names the protected resource metadata of
// RFC 9728. Nothing is forwarded.
//
// A session stays with the principal whose token opened it. A principal is
// never empty: a session of nobody would be anyone's. So a token for "" is
// a configuration error. A JWT whose principal claim is empty gets a 401.
//
// A refusal (401, 403, 413) is answered at once. Its connection is closed
// and its body unread. A body must arrive within [HTTPOptions.BodyTimeout].
// ListenAndServe bounds the headers and idle keep-alive connections too
// ([HTTPOptions.HeaderTimeout], [HTTPOptions.IdleTimeout]). So slow
// clients hold no descriptors. Nothing bounds the writing of a response:
// an event stream lasts as long as its call.
//
// A server of identity principal may have an OAuth grant of token
// exchange. It exchanges a verified JWT for its own token
// (conduit.Options.SubjectToken). A static token is never sent anywhere.
// [HTTPOptions.NoAuth] serves without tokens, on a loopback listener only.
package gateway
