package cli

import (
	"context"
	"fmt"
	"github.com/conduitmcp/conduit/pins"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/internal/seal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func runServe(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "serve", `
Serve the configuration's servers, under its policy, as one MCP server:
tools as server__tool (prompts as server__prompt, resources under their own
URIs), each call through the policy. "ask" rules become elicitation
requests to the connected client; "tainted" rules apply once the
caller's principal, or the conversation, has received a server's output
(taint is theirs, not a session's: see below).

Over stdio by default, as an MCP client such as Claude Desktop starts it:

  {"mcpServers": {"conduit": {"command": "conduit", "args": ["serve", "--config", "/path/to/mcp.json"]}}}

With --http ADDR, Streamable HTTP at http://ADDR/mcp (ADDR is host:port;
the host defaults to 127.0.0.1). Every request needs a bearer token from
the configuration's "serve" object, read from the environment variable it
names:

  "serve": {"tokens": [{"principal": "alice", "env": "CONDUIT_TOKEN_ALICE"}]}

With an "oauth" object in "serve" (or --oauth-issuer and --oauth-resource),
conduit serve is also an OAuth 2.1 protected resource: it accepts the JWT
access tokens of that authorization server whose audience is its resource
URL, each for the principal its subject (or "principalClaim") names, and
serves its metadata at /.well-known/oauth-protected-resource/mcp, so that
clients that log in by OAuth find where to:

  "serve": {"oauth": {"issuer": "https://login.example.com", "resource": "https://mcp.example.com/mcp"}}

A server of "identity": "principal" whose OAuth grant is "token_exchange"
exchanges the caller's token for one of its own.

--no-auth serves without tokens, on a loopback address only.

Taint belongs to a principal, not to a session: a client keeps it across
reconnections, and a client without a session has it too, for
"taintLifetime" (--taint-lifetime, default 24h) after the latest addition.
A client may name a conversation in _meta
"io.github.conduitmcp/conversation": by default its requests are still
decided with all their principal has seen, so a fresh conversation sheds
nothing; "taintScope": "conversation" in "serve" decides them with that
conversation's taint alone, for clients trusted to keep conversations
apart.

A refused request (401, 403, 413) is answered at once and its connection
closed; a request body must arrive within 30 s, and an idle keep-alive
connection is closed after 2 minutes.

Clients of MCP 2026-07-28 have no session: an "ask" rule, and what a
server asks during a call, are answered with an input-required result whose
requestState is encrypted and authenticated with CONDUIT_STATE_KEY (random
secrets of at least 32 bytes, separated by commas: the first seals, every
one opens). Replicas
behind one address must share it; unset, serve makes a key at start, which
a restart forgets.

Results are passed on whole: a client of serve is an LLM host with a
budget of its own (Claude Code cuts at 25000 tokens by default, and its
MAX_MCP_OUTPUT_TOKENS may raise it), which a cut here would preempt with
no way back. --max-result-tokens N cuts every tool result to N tokens of
what a model reads of its content, as conduit call does; a server's
"maxResultTokens" in the configuration applies to its tools either way.
Taint, the single use of each requestState, the counts of "limits" and
the locks of OAuth refreshes are kept in a store. By default it is a
SQLite file, $XDG_STATE_HOME/conduit/store.db (~/.local/state/conduit/
without XDG_STATE_HOME), shared by the processes of this machine and kept
across restarts. Several replicas on several machines share a Redis or
Valkey instead: "store" in "serve" (or --store) is its URL, its password
read from the environment:

  "serve": {"store": "redis://:${env:REDIS_PASSWORD}@redis.internal:6379/0"}

(rediss:// for TLS; with appendonly, for claims that outlive Redis's
restarts). sqlite:///PATH names another file; "memory" keeps them in this
process alone, forgotten at exit: a requestState replayed after a restart
would run its call again. With CONDUIT_STATE_KEY set and a store that is
not Redis, serve warns at start.
When the store is unavailable, listing goes on and every call is refused
saying so, until it is back. "limits" bound each principal's tool calls
per minute and at once; every limit that matches a call applies:

  "limits": [{"principal": "*", "tool": "github/*", "perMinute": 60, "atOnce": 4}]

With --http, /healthz answers while the process runs, /readyz while it
takes requests (a server is up, and it is not shutting down), and /status,
to a caller authenticated as for /mcp, their own use of the limits. On
SIGTERM, readiness turns false, requests are still taken for --drain-delay,
then the listener closes and the calls in flight are finished, within
--shutdown-timeout. The fleet guide, docs/fleet.md, has a working
HAProxy configuration.

--console (with --http) serves an operator console at /console/ to the
principals "admins" in "serve" names, by their bearer token (in the
Authorization header, or through the console's sign-in), and keeps an
audit trail of every call in the store (conduit trail exports it).
"approvals": "console" sends every "ask" to the console instead of the
client: the client's call waits until an admin decides, or until
--approval-timeout denies it. Replicas that share a store share the
console: a call held on one is decided on any. See docs/console.md.

  "serve": {"admins": ["alice"], "approvals": "console"}

When mcp.lock.json is beside the configuration, only the tools it pins are
served (see conduit pin). It is read once, when serve starts: restart serve
after 'conduit pin --update'.`)
	var h hubFlags
	h.register(fs)
	var cm codeModeFlags
	cm.register(fs)
	httpAddr := fs.String("http", "", "serve Streamable HTTP on `ADDR` (host:port) instead of stdio")
	noAuth := fs.Bool("no-auth", false, "with --http on a loopback address: serve without bearer tokens")
	transparent := fs.Bool("transparent", false, "serve a single server under its own tool and prompt names, without the server__ prefix")
	principal := fs.String("principal", "", "over stdio: the principal the session's calls are made for")
	approvalTimeout := fs.Duration("approval-timeout", gateway.DefaultApprovalTimeout, "how long to wait for the client's answer to an approval request (for a client of MCP 2026-07-28: how long its requestState is valid)")
	issuer := fs.String("oauth-issuer", "", "with --http: accept the JWT access tokens of this authorization server `URL` (the \"serve\" object's oauth.issuer)")
	resource := fs.String("oauth-resource", "", "with --http: this server's own `URL` as its clients reach it, the audience of their tokens (oauth.resource)")
	taintLifetime := fs.Duration("taint-lifetime", 0, "how long a principal's taint lasts after its latest addition (default the \"serve\" object's taintLifetime, or 24h)")
	maxResultTokens := fs.Int("max-result-tokens", 0, "cut every tool result to this many `tokens` of what a model reads (0: pass results whole, as the client has a budget of its own)")
	storeURL := fs.String("store", "", storeUsage+" (the \"serve\" object's store)")
	drainDelay := fs.Duration("drain-delay", 0, "with --http: on SIGTERM, how long to keep taking requests once /readyz says not ready")
	withConsole := fs.Bool("console", false, "with --http: serve the operator console at /console/ to the \"serve\" object's admins, and keep an audit trail")
	shutdownTimeout := fs.Duration("shutdown-timeout", gateway.DefaultShutdownTimeout, "with --http: on SIGTERM, how long the calls in flight have to finish")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("serve", "unexpected argument %q", pos[0])
	}
	if *noAuth && *httpAddr == "" {
		return usageError("serve", "--no-auth is for --http")
	}
	if (*issuer != "" || *resource != "") && *httpAddr == "" {
		return usageError("serve", "--oauth-issuer and --oauth-resource are for --http")
	}
	cfg, err := h.loadConfig()
	if err != nil {
		return err
	}
	consoleOpts, err := serveConsole(cfg, *withConsole, *httpAddr != "", h.config)
	if err != nil {
		return err
	}
	if *transparent && len(cfg.Servers) != 1 {
		return inputError("--transparent serves one server, and %s has %d", h.config, len(cfg.Servers))
	}
	if *issuer != "" || *resource != "" {
		if cfg.Serve == nil {
			cfg.Serve = &config.Serve{}
		}
		o := config.ServeOAuth{}
		if cfg.Serve.OAuth != nil {
			o = *cfg.Serve.OAuth
		}
		if *issuer != "" {
			o.Issuer = *issuer
		}
		if *resource != "" {
			o.Resource = *resource
		}
		cfg.Serve.OAuth = &o
	}
	var httpOpts *gateway.HTTPOptions
	if *httpAddr != "" {
		if httpOpts, err = serveHTTPOptions(env, cfg, *httpAddr, *noAuth, h.config); err != nil {
			return err
		}
	}
	if *taintLifetime == 0 && cfg.Serve != nil {
		*taintLifetime = cfg.Serve.TaintLifetime
	}
	if httpOpts != nil {
		httpOpts.DrainDelay, httpOpts.ShutdownTimeout = *drainDelay, *shutdownTimeout
	}
	u, err := config.ExpandEnv(*storeURL)
	if err != nil {
		return inputError("--store: %v", err)
	}
	if u == "" && cfg.Serve != nil {
		u = cfg.Serve.Store
	}
	shared, scope, err := openStore(env, "conduit serve", u, "calls are refused until it is back")
	if err != nil {
		return err
	}
	defer shared.Close()
	var limits []gateway.Limit
	if cfg.Serve != nil {
		for _, l := range cfg.Serve.Limits {
			limits = append(limits, gateway.Limit{Principals: l.Principals, Tools: l.Tools, PerMinute: l.PerMinute, AtOnce: l.AtOnce})
		}
	}
	var stateKeys [][]byte
	if v := env.Getenv("CONDUIT_STATE_KEY"); v != "" {
		if stateKeys, err = seal.ParseSecrets(v); err != nil {
			return inputError("CONDUIT_STATE_KEY: %v", err)
		}
	}
	policy := cfg.Policy
	if policy == nil {
		policy = conduit.NewPolicy(conduit.Ask("*"))
		fmt.Fprintf(env.Stderr, "conduit: %s has no \"policy\": every call asks for approval\n", h.config)
	}
	if err := prepareOAuth(env, cfg); err != nil {
		return err
	}
	// Warnings (a tool or resource left out, a server lost) go to stderr. An
	// MCP client that starts conduit serve keeps stderr in its log.
	level := slog.LevelWarn
	if h.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	if stateKeys != nil && scope != scopeFleet {
		// A key in the environment is how replicas share requestState. Its
		// single use holds only as far as the store is shared.
		logger.Warn("CONDUIT_STATE_KEY is set, so a requestState may be replayed on another replica, but the store is not shared across machines: a call approved on one machine could run again on another; give every replica --store redis://HOST:PORT/DB",
			"store", map[storeScope]string{scopeProcess: "memory (this process only)", scopeMachine: "sqlite (this machine only)"}[scope])
	}
	// The lock file, when there is one, pins what is served as what
	// every other command offers. It is read here only, not watched: a
	// restart takes a new one, as the help says.
	pins, err := h.loadPins()
	if err != nil {
		return err
	}
	g, err := gateway.New(ctx, cfg.Servers, &gateway.Options{
		Hub: &conduit.Options{Policy: policy, Logger: logger, ConnectTimeout: h.connectTimeout, RequireServers: h.requireServers,
			Pins: pins, Trace: h.pinTrace(env, pins, env.hubTrace(nil)), Store: shared, LaxPolicy: cfg.LaxPolicy},
		Transparent:     *transparent,
		ApprovalTimeout: *approvalTimeout,
		MaxResultTokens: *maxResultTokens,
		Middleware:      env.serverMiddleware(),
		TaintLifetime:   *taintLifetime,
		TaintScope:      taintScope(cfg),
		StateKeys:       stateKeys,
		Limits:          limits,
		Tasks:           serveTasks(cfg),

		Console: consoleOpts.with(httpOpts, pins, env.Telemetry),

		CodeMode: gateway.CodeModeOptions{On: cm.on, Direct: cm.on && cm.direct},
	})
	if err != nil {
		return h.openError(err)
	}
	defer g.Close()
	// Servers that are down are reconnected: the gateway serves meanwhile.
	for _, st := range g.Status() {
		switch st.State {
		case conduit.StateUp, conduit.StatePerPrincipal:
		case conduit.StateNeedsLogin:
			fmt.Fprintf(env.Stderr, "conduit: server %s needs a login: run '%s'\n", st.ID, loginHint(h.config, st.ID))
		default:
			fmt.Fprintf(env.Stderr, "conduit: server %s is down (it is retried): %v\n", st.ID, st.Err)
		}
	}
	if *httpAddr == "" {
		t := &mcp.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}}
		if err := g.Serve(ctx, t, &gateway.SessionOptions{Principal: *principal}); err != nil && ctx.Err() == nil {
			return failure("%v", err)
		}
		return nil
	}
	err = g.ListenAndServe(ctx, *httpAddr, httpOpts, func(a net.Addr) {
		fmt.Fprintf(env.Stderr, "conduit serve: listening on http://%s/mcp\n", a)
	})
	if err != nil {
		return failure("%v", err)
	}
	return nil
}

// consoleConfig is what the console needs of serve's flags and
// configuration, before the tokens and pins are read.
type consoleConfig struct{ o *gateway.ConsoleOptions }

// serveConsole checks --console against the configuration: it needs
// --http and admins, and "approvals": "console" needs it.
func serveConsole(cfg *config.File, on, http bool, config string) (consoleConfig, error) {
	var admins []string
	var approvals string
	if cfg.Serve != nil {
		admins, approvals = cfg.Serve.Admins, cfg.Serve.Approvals
	}
	switch {
	case !on && approvals == "console":
		return consoleConfig{}, inputError(`%s: "approvals": "console" needs the console: add --console (with --http)`, config)
	case !on:
		return consoleConfig{}, nil
	case !http:
		return consoleConfig{}, usageError("serve", "--console is for --http")
	case len(admins) == 0:
		return consoleConfig{}, inputError(`--console serves the admins named in %s, and it names none: add "serve": {"admins": ["PRINCIPAL"]}`, config)
	}
	o := &gateway.ConsoleOptions{Admins: admins, Approvals: approvals == "console"}
	// The servers' environment and headers hold their secrets: an
	// argument or reason that repeats one is shown without it.
	for _, s := range cfg.Servers {
		for _, v := range s.Env {
			o.Secrets = append(o.Secrets, v)
		}
		for _, v := range s.Headers {
			o.Secrets = append(o.Secrets, v)
		}
	}
	return consoleConfig{o}, nil
}

// with completes the console's options. It adds the principals the tokens
// name, and the bearer tokens the console must never show. It adds the
// pinned servers, and the telemetry's sink for audit records.
func (c consoleConfig) with(h *gateway.HTTPOptions, pinned *pins.Pins, tel *Telemetry) *gateway.ConsoleOptions {
	if c.o == nil {
		return nil
	}
	o := *c.o
	if tel != nil {
		o.OnAudit = tel.Audit
	}
	if h != nil {
		for _, p := range h.Tokens {
			o.Principals = append(o.Principals, p)
		}
		slices.Sort(o.Principals)
	}
	if pinned != nil {
		o.Pinned = pinned.Servers()
	}
	return &o
}

// taintScope is the configuration's "taintScope" (checked when parsed).
func taintScope(cfg *config.File) gateway.TaintScope {
	if cfg.Serve != nil && cfg.Serve.TaintScope == "conversation" {
		return gateway.TaintConversation
	}
	return gateway.TaintPrincipal
}

// serveHTTPOptions are the HTTP settings of the configuration's "serve"
// object, with the tokens read from the environment.
func serveHTTPOptions(env *Env, cfg *config.File, addr string, noAuth bool, config string) (*gateway.HTTPOptions, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageError("serve", "--http %q: want host:port, such as 127.0.0.1:8080 or :8080", addr)
	}
	o := &gateway.HTTPOptions{NoAuth: noAuth}
	if cfg.Serve != nil {
		o.Hosts, o.Origins = cfg.Serve.Hosts, cfg.Serve.Origins
	}
	if noAuth {
		if h := strings.ToLower(host); h != "" && h != "localhost" && !isLoopbackIP(h) {
			return nil, usageError("serve", "--no-auth serves on a loopback address only (127.0.0.1, [::1] or localhost), not %s", host)
		}
		if cfg.Serve != nil && cfg.Serve.OAuth != nil {
			return nil, usageError("serve", "--no-auth and OAuth exclude each other")
		}
		return o, nil
	}
	if cfg.Serve != nil && cfg.Serve.OAuth != nil {
		so := cfg.Serve.OAuth
		if so.Issuer == "" || so.Resource == "" {
			return nil, usageError("serve", "OAuth needs both an issuer and a resource (--oauth-issuer and --oauth-resource, or the \"serve\" object's oauth)")
		}
		o.OAuth = &gateway.OAuthOptions{Issuer: so.Issuer, Resource: so.Resource, JWKSURL: so.JWKSURL, PrincipalClaim: so.PrincipalClaim, Scopes: so.Scopes, RequireTokenType: so.RequireTokenType}
		if len(cfg.Serve.Tokens) == 0 {
			return o, nil
		}
	}
	if cfg.Serve == nil || len(cfg.Serve.Tokens) == 0 {
		return nil, inputError(`--http needs bearer tokens: add to %s "serve": {"tokens": [{"principal": "you", "env": "CONDUIT_TOKEN"}]} and set CONDUIT_TOKEN, or "oauth" (or use --no-auth on a loopback address)`, config)
	}
	if o.Tokens, err = cfg.Serve.ResolveTokens(env.Getenv); err != nil {
		return nil, inputError("%s: serve: %v", config, err)
	}
	for tok, p := range o.Tokens {
		if len(tok) < gateway.MinTokenLen {
			return nil, inputError("%s: serve: the token of principal %q is shorter than %d characters", config, p, gateway.MinTokenLen)
		}
	}
	return o, nil
}

func isLoopbackIP(host string) bool {
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// serveTasks are the gateway's TaskOptions of cfg's "serve": "tasks".
func serveTasks(cfg *config.File) *gateway.TaskOptions {
	if cfg.Serve == nil || cfg.Serve.Tasks == nil {
		return nil
	}
	t := cfg.Serve.Tasks
	return &gateway.TaskOptions{Tools: t.Tools, Required: t.Required, After: t.After, TTL: t.TTL, PollInterval: t.PollInterval}
}
