// Package otelconduit turns conduit's Trace events into OpenTelemetry spans
// and metrics, following the OpenTelemetry semantic conventions for MCP
// and GenAI tool execution. It lives in a module of its own so that
// conduit's go.mod does not carry the OpenTelemetry SDK.
//
//	tel, err := otelconduit.New(nil) // the global tracer and meter providers and propagator
//	hub, err := conduit.NewHub(ctx, servers, &conduit.Options{
//		Policy: p, Trace: tel.Trace(),
//	})
//	conv, err := adapters.NewConversation(ctx, hub, adapters.OpenAIChat, &adapters.ConversationOptions{
//		TurnOptions: adapters.TurnOptions{Trace: tel.AdaptersTrace()},
//	})
//	// each turn: conv.Tools() into the request, conv.Execute(ctx, response) for the answers
//
// # Conventions followed
//
// The conventions are those of OpenTelemetry Semantic Conventions 1.41.0,
// "Semantic conventions for Model Context Protocol (MCP)" (status:
// Development; https://github.com/open-telemetry/semantic-conventions/blob/v1.41.0/docs/gen-ai/mcp.md),
// whose attribute names are those of go.opentelemetry.io/otel/semconv/v1.41.0,
// the schema URL of the instrumentation scope. (They have since moved to
// the repository open-telemetry/semantic-conventions-genai, which keeps
// the same span, attributes and metric.)
//
// Every governed call is one span, named "tools/call {gen_ai.tool.name}"
// ("tools/call" when the name did not resolve to a tool), of kind CLIENT,
// from the moment the call enters the pipeline to its answer: the
// conventions' MCP client span and, with gen_ai.operation.name
// "execute_tool", their GenAI execute_tool span in one, as they ask when
// the tool execution is traced once. Its attributes:
//
//	mcp.method.name           "tools/call"
//	gen_ai.operation.name     "execute_tool"
//	gen_ai.tool.name          the tool's own name on its server (what tools/call sends,
//	                          and so what the server's own span records)
//	conduit.tool.exposed      the name the model used (server__tool in a hub), when it differs
//	gen_ai.tool.call.id       the model's call id, when the call came from a model's response
//	jsonrpc.request.id        the request's JSON-RPC id, when known: over stdio, in-memory
//	                          and SSE transports, whose connections conduit wraps; not over
//	                          Streamable HTTP, whose connection the SDK keeps to itself
//	conduit.server            the server's id in the hub
//	error.type                when the call failed: the JSON-RPC error code of a
//	                          server's error ("-32602"), "tool_error" for a result
//	                          with isError, else conduit's ErrorKind ("denied",
//	                          "timeout", "unavailable", "invalid_arguments", ...)
//	rpc.response.status_code  the JSON-RPC error code, when the server sent one
//	mcp.session.id            the session's id, when its transport has one (Streamable HTTP)
//	mcp.protocol.version      the MCP version the session negotiated
//	network.transport         "tcp" for HTTP, "pipe" for stdio
//	network.protocol.name     "http" for HTTP
//	server.address, .port     the server's host and port, for HTTP; never the rest of its URL
//
// network.protocol.version is not recorded: which HTTP version a request
// went over is not known to conduit.
//
// A call of a local tool ([conduit.Hub.CallLocal]) sends no request: its
// span is the GenAI conventions' execute_tool span, named
// "execute_tool {gen_ai.tool.name}", of kind INTERNAL, without
// mcp.method.name and without the metric.
//
// The span's status is Error when error.type is set; its description is
// the server's JSON-RPC error message when there is one. The steps of the
// governed pipeline are span events:
//
//	conduit.policy.decision     conduit.policy.decision (allow, ask, deny),
//	                            conduit.policy.rule (the rule, as written), conduit.policy.matched
//	conduit.approval            conduit.approval.allowed, conduit.approval.halt,
//	                            conduit.approval.duration (seconds)
//	conduit.hook.denial         conduit.hook.name, conduit.hook.stage (before, after)
//	conduit.validation.failure
//	conduit.strict_fallback     conduit.tool.exposed, conduit.strict.reason,
//	                            on the span of the listing's context
//	conduit.result_budget       conduit.tool.exposed, conduit.result.tokens, conduit.result.kept_tokens,
//	                            conduit.result.budget, conduit.result.cut, for a result over the
//	                            budget's warning threshold or cut, on the span of the Execute's context
//	conduit.pin_drift           conduit.server, conduit.pin.tool, conduit.pin.drift (changed,
//	                            new, removed), conduit.pin.pinned, conduit.pin.listed (digests),
//	                            for a tool a listing leaves out because it differs from its pin,
//	                            on the span of the listing's context (a call's, when a call
//	                            listed); the diff itself goes to the Logger, not to telemetry
//
// A strict-mode fallback, result budget or pin drift whose context has no span gets a
// span of its own, named as the event, so that it is not lost (a span
// sampled out keeps it out).
//
// With RecordMessages, the approval, hook denial and validation failure
// events also carry conduit.reason: the approver's reason, the hook's
// error, what does not match the schema.
//
// Each listing request to a server (tools/list, prompts/list,
// resources/list, resources/templates/list; a listing answered from
// conduit's cache sends none) is a CLIENT span named as its method, with
// mcp.method.name, conduit.server, conduit.list.items (how many were
// listed), error.type and the session and server attributes above.
//
// prompts/get, resources/read, resources/subscribe, resources/unsubscribe
// and completion/complete are CLIENT spans too, from the moment the
// request enters the pipeline (its listing, policy decision and approval
// are within), named "prompts/get {gen_ai.prompt.name}" (likewise
// "completion/complete {gen_ai.prompt.name}" for a prompt's argument), or
// the method alone: a resource's URI is the attribute mcp.resource.uri,
// never part of the name, whose cardinality it would make unbounded. They
// carry the session, server and outcome attributes above.
//
// The metric is the conventions' mcp.client.operation.duration, a
// histogram in seconds with their bucket boundaries (0.01 s to 300 s),
// recorded for every request sent (calls, listings and the requests
// above), with mcp.method.name, gen_ai.tool.name and gen_ai.operation.name
// (tools/call), gen_ai.prompt.name (prompts/get), error.type,
// rpc.response.status_code, mcp.protocol.version, network.transport,
// network.protocol.name, server.address and server.port. Its duration
// is the request's, from sending to the answer: time spent on policy,
// approval and hooks is in the span, not in the metric. A call that was
// never sent (denied, no session) records no operation; its span says
// why.
//
// Trace context goes to servers in each request's params._meta, injected
// by the configured propagator (traceparent, tracestate, baggage for the
// W3C ones), as the conventions ask, through [conduit.Trace.RequestMeta].
// A server that does not know these keys ignores them.
//
// A call or request whose CallOptions.Meta carries a trace context (the
// params._meta a gateway's client sent, which conduit serve passes on)
// continues it: the extracted context is the span's parent, as the
// conventions ask of a server, and the span in the Go context, if any, is
// linked. What the server then receives is the span's own context, not
// the client's, so that its span is conduit's child.
//
// # The serving side
//
// [Telemetry.ServerMiddleware] is receiving middleware for an MCP server:
// conduit serve's sessions (gateway.Options.Middleware), or any Go SDK
// server. Each request it receives (notifications are not) is a span of
// kind SERVER named "{mcp.method.name} {target}" (the tool of tools/call,
// the prompt of prompts/get; the method alone otherwise), whose parent is
// the trace context in the request's params._meta, with mcp.method.name,
// gen_ai.tool.name and gen_ai.operation.name (tools/call),
// gen_ai.prompt.name, mcp.resource.uri, mcp.session.id,
// mcp.protocol.version, network.transport ("tcp" with network.protocol.name
// "http" for a request that came over HTTP, "pipe" otherwise), error.type
// (as on the client's side: "tool_error" for an isError result, the
// JSON-RPC code of an error answer, conduit's ErrorKind, "_OTHER") and
// rpc.response.status_code; and the conventions' mcp.server.operation.duration
// histogram, with the same attributes but the session's, and without the
// tool's or prompt's name when the request failed: that name is the
// client's own then (an unknown tool), and would make series without
// bound. A name in a span name is cut to 128 bytes. A call the handler makes in that context
// (the gateway's hub call) is the SERVER span's child: a CLIENT span whose
// context continues the same trace keeps its Go context's span as the
// parent, and the trace through a gateway reads client, conduit serve's
// SERVER span, conduit's CLIENT span, the server's own.
//
// # What is recorded, and what never is
//
// Without options a span holds names, ids, kinds, codes, counts and
// durations, and the server's JSON-RPC error message, which the
// conventions make the status description. Arguments and results are
// recorded only with RecordArguments and RecordResults (the conventions'
// opt-in gen_ai.tool.call.arguments and gen_ai.tool.call.result, as JSON
// text); the texts that may quote them or hold a person's words (the
// message a model is shown for a failed call, a validation failure's
// reason, a hook's error, an approver's reason) only with RecordMessages.
// Tokens, client secrets, header values and URLs are never recorded:
// conduit's Trace does not carry them.
//
// # The conduit command
//
// The conduit command built from otelconduit/cmd/conduit is the root
// module's CLI with OTLP export, configured by the standard OTEL_*
// environment variables; see that command's doc.
package otelconduit
