// Package otelconduit turns conduit's Trace events into OpenTelemetry spans
// and metrics. It follows the OpenTelemetry semantic conventions for MCP and
// GenAI tool execution. It lives in a module of its own, so conduit's go.mod
// does not carry the OpenTelemetry SDK.
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
// Development;
// https://github.com/open-telemetry/semantic-conventions/blob/v1.41.0/docs/gen-ai/mcp.md).
// Their attribute names are those of
// go.opentelemetry.io/otel/semconv/v1.41.0, the schema URL of the
// instrumentation scope. The repository
// open-telemetry/semantic-conventions-genai now keeps them. It has the same
// span, attributes and metric.
//
// Every governed call is one span of kind CLIENT. It is named "tools/call
// {gen_ai.tool.name}", or "tools/call" when the name did not resolve to a
// tool. It lasts from the moment the call enters the pipeline to its answer.
// It is the conventions' MCP client span and their GenAI execute_tool span
// in one, with gen_ai.operation.name "execute_tool". The conventions ask for
// this when the tool execution is traced once. Its attributes:
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
//	                          with isError, else conduit's error kind ("denied",
//	                          "timeout", "unavailable", "invalid_arguments", ...)
//	rpc.response.status_code  the JSON-RPC error code, when the server sent one
//	mcp.session.id            the session's id, when its transport has one (Streamable HTTP)
//	mcp.protocol.version      the MCP version the session negotiated
//	network.transport         "tcp" for HTTP, "pipe" for stdio
//	network.protocol.name     "http" for HTTP
//	server.address, .port     the server's host and port, for HTTP; never the rest of its URL
//
// network.protocol.version is not recorded. Conduit does not know which HTTP
// version a request went over.
//
// A call of a local tool ([conduit.Hub.CallLocal]) sends no request. Its
// span is the GenAI conventions' execute_tool span, of kind INTERNAL. It is
// named "execute_tool {gen_ai.tool.name}". It has no mcp.method.name and no
// metric.
//
// The span's status is Error when error.type is set. Its description is the
// server's JSON-RPC error message when there is one. The steps of the
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
// A strict-mode fallback, result budget or pin drift may have no span in its
// context. Then it gets a span of its own, named as the event, so that it is
// not lost. A span sampled out keeps it out.
//
// With RecordMessages, three events also carry conduit.reason:
//
//   - the approval: the approver's reason;
//   - the hook denial: the hook's error;
//   - the validation failure: what does not match the schema.
//
// Each listing request to a server is a CLIENT span named as its method.
// These are tools/list, prompts/list, resources/list and
// resources/templates/list. A listing answered from conduit's cache sends
// none. The span has mcp.method.name, conduit.server, and conduit.list.items
// (how many were listed). It has error.type and the session and server
// attributes above.
//
// prompts/get, resources/read, resources/subscribe, resources/unsubscribe
// and completion/complete are CLIENT spans too. Each starts when the request
// enters the pipeline. Its listing, policy decision and approval are within.
// prompts/get is named "prompts/get {gen_ai.prompt.name}". Likewise,
// completion/complete for a prompt's argument is named "completion/complete
// {gen_ai.prompt.name}". Otherwise the name is the method alone. A
// resource's URI is the attribute mcp.resource.uri, never part of the name.
// In the name it would make the cardinality unbounded. These spans carry the
// session, server and outcome attributes above.
//
// The metric is the conventions' mcp.client.operation.duration. It is a
// histogram in seconds with their bucket boundaries (0.01 s to 300 s). It is
// recorded for every request sent: calls, listings and the requests above.
// Its attributes:
//
//   - mcp.method.name;
//   - gen_ai.tool.name and gen_ai.operation.name (tools/call);
//   - gen_ai.prompt.name (prompts/get);
//   - error.type and rpc.response.status_code;
//   - mcp.protocol.version;
//   - network.transport and network.protocol.name;
//   - server.address and server.port.
//
// Its duration is the request's, from sending to the answer. Time spent on
// policy, approval and hooks is in the span, not in the metric. A call that
// was never sent (denied, no session) records no operation. Its span says
// why.
//
// Trace context goes to servers in each request's params._meta, as the
// conventions ask. The configured propagator injects it through
// [conduit.Trace.RequestMeta]. The W3C ones inject traceparent, tracestate
// and baggage. A server that does not know these keys ignores them.
//
// A call or request may carry a trace context in its CallOptions.Meta. That
// is the params._meta a gateway's client sent, which conduit serve passes
// on. The call continues that context. The extracted context is the span's
// parent, as the conventions ask of a server. The span in the Go context, if
// any, is linked. The server then receives the span's own context, not the
// client's. So its span is conduit's child.
//
// # The serving side
//
// [Telemetry.ServerMiddleware] is receiving middleware for an MCP server. It
// serves conduit serve's sessions (gateway.Options.Middleware), or any Go
// SDK server. Each request it receives is a span of kind SERVER.
// Notifications get none. The span is named "{mcp.method.name} {target}". The
// target is the tool of tools/call or the prompt of prompts/get. Otherwise
// the name is the method alone. The span's parent is the trace context in
// the request's params._meta. Its attributes:
//
//   - mcp.method.name;
//   - gen_ai.tool.name and gen_ai.operation.name (tools/call);
//   - gen_ai.prompt.name, mcp.resource.uri, mcp.session.id and
//     mcp.protocol.version;
//   - network.transport: "tcp" with network.protocol.name "http" for a
//     request that came over HTTP, "pipe" otherwise;
//   - error.type, as on the client's side: "tool_error" for an isError
//     result, the JSON-RPC code of an error answer, conduit's error kind,
//     "_OTHER";
//   - rpc.response.status_code.
//
// The middleware also records the conventions' mcp.server.operation.duration
// histogram. It has the same attributes but the session's. It drops the
// tool's or prompt's name when the request failed. That name is then the
// client's own (an unknown tool), and would make series without bound. A
// name in a span name is cut to 128 bytes.
//
// A call the handler makes in that context is the SERVER span's child. The
// gateway's hub call is one. A CLIENT span whose context continues the same
// trace keeps its Go context's span as the parent. So the trace through a
// gateway reads: client, conduit serve's SERVER span, conduit's CLIENT span,
// the server's own.
//
// # What is recorded, and what never is
//
// Without options a span holds names, ids, kinds, codes, counts and
// durations. It also holds the server's JSON-RPC error message, which the
// conventions make the status description. Arguments and results are
// recorded only with RecordArguments and RecordResults. They go in the
// conventions' opt-in gen_ai.tool.call.arguments and
// gen_ai.tool.call.result, as JSON text. Some texts may quote them or hold a
// person's words. One is the message a model is shown for a failed call.
// The others are a validation failure's reason, a hook's error, and an
// approver's reason. They are recorded only with RecordMessages. Tokens, client secrets, header
// values and URLs are never recorded. Conduit's Trace does not carry them.
//
// # The conduit command
//
// The conduit command built from otelconduit/cmd/conduit is the root
// module's CLI with OTLP export. The standard OTEL_* environment variables
// configure it. See that command's doc.
package otelconduit
