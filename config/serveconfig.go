package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/redact"
	"github.com/conduitmcp/conduit/oauth"
)

// Serve is the "serve" object of a configuration, for conduit serve
// (package gateway). It says:
//
//   - how conduit serve authenticates its HTTP clients;
//   - how long taint lasts;
//   - the store its replicas share;
//   - the limits on callers.
//
// Tokens are named by environment variable, never written in the file.
// The store's password is read with ${env:NAME}.
//
//	"serve": {
//	  "tokens": [
//	    {"principal": "alice", "env": "CONDUIT_TOKEN_ALICE"},
//	    {"principal": "ci", "env": "CONDUIT_TOKEN_CI"}
//	  ],
//	  "oauth": {
//	    "issuer": "https://login.example.com",
//	    "resource": "https://mcp.example.com/mcp",
//	    "principalClaim": "email",
//	    "scopes": ["mcp"],
//	    "requireTokenType": true
//	  },
//	  "taintLifetime": "24h",
//	  "taintScope": "principal",
//	  "hosts": ["mcp.example.com"],
//	  "origins": ["https://app.example.com"],
//	  "store": "redis://:${env:REDIS_PASSWORD}@redis.internal:6379/0",
//	  "limits": [
//	    {"principal": "*", "tool": "github/*", "perMinute": 60, "atOnce": 4},
//	    {"principal": ["ci"], "tool": "*", "perMinute": 600}
//	  ]
//	}
type Serve struct {
	// Tokens are the bearer tokens HTTP clients may present, each
	// authenticating a principal.
	Tokens []ServeToken
	// OAuth, when set, also accepts the JWT access tokens of an
	// authorization server (see [ServeOAuth]).
	OAuth *ServeOAuth
	// TaintLifetime is how long a principal's taint lasts after its
	// latest addition; zero is gateway.DefaultTaintLifetime.
	TaintLifetime time.Duration
	// TaintScope is "principal" (the default, also for "") or
	// "conversation". It is the taint a request that names a conversation
	// is decided with. gateway.TaintScope says what each means.
	TaintScope string
	// Hosts are the host names a request's Host header may name besides
	// loopback ones. Origins are the browser origins allowed besides those.
	Hosts, Origins []string
	// Store is the URL of the store that conduit serve keeps taint,
	// single uses, counts and locks in. ${env:NAME} in it is read from the
	// environment. The URL is one of:
	//
	//   - redis://, rediss:// for TLS, or unix:// (package
	//     store/redisstore), shared by replicas on several machines;
	//   - sqlite:///PATH (store/sqlitestore), shared by the processes of
	//     one machine;
	//   - "memory", for one process.
	//
	// "" is the CLI's default, a SQLite file in the user's state
	// directory. Store holds the password once read. It is not to be
	// shown. The store's errors never repeat it.
	Store string
	// Limits bound the tool calls of principals; every limit that matches
	// a call applies (see [ServeLimit]).
	Limits []ServeLimit
	// Tasks, when set, make tasks (SEP-2663) of tool calls. That is for
	// the clients that declare the extension (see [ServeTasks]).
	Tasks *ServeTasks
	// Admins are the principals the operator console (conduit serve
	// --console) serves.
	Admins []string
	// Approvals is who decides the calls the policy asks about. "" or
	// "client" is the calling client, by elicitation. "console" is an
	// admin, in the console. The client's call then waits.
	Approvals string
}

// ServeTasks is the "tasks" object of a [Serve]. It says which tool calls
// conduit serve answers with a task. So a slow tool no longer holds its
// client's request:
//
//	"tasks": {"tools": ["reports/*"], "required": ["batch/run"], "after": "10s"}
//
// "tools" and "required" are tool patterns of the policy's ("server/tool",
// globs). A call of a "tools" tool is a task when its client declares the
// extension. A call of a "required" one always is. A client without the
// extension is refused. "after" makes a task of any other call still
// running after it. "ttl" (default 1h) is how long a task is kept after
// its latest change. "pollInterval" (default 1s) is what clients are told.
type ServeTasks struct {
	Tools, Required          []string
	After, TTL, PollInterval time.Duration
}

// ServeLimit is one object of a [Serve]'s "limits". It bounds calls per
// minute and calls at once for the principals and tools it names. They are
// counted for each principal apart, over every tool it matches together:
//
//	{"principal": "*", "tool": "github/*", "perMinute": 60, "atOnce": 4}
//
// "principal" is "*" (every principal; the default), an id, or a list of
// ids. "tool" is a pattern of the policy's, or a list of them. A pattern
// is "server/tool", "server" or globs; the default is "*". At least one
// of "perMinute" and "atOnce" is set.
type ServeLimit struct {
	// Principals are the principals it applies to; nil is every one.
	Principals []string
	// Tools are the patterns of the tools it applies to.
	Tools []string
	// PerMinute bounds the calls per minute (0: no bound). AtOnce bounds
	// the calls in flight at once (0: no bound).
	PerMinute, AtOnce int
}

// ServeOAuth is the "oauth" object of a [Serve]. It makes conduit serve an
// OAuth 2.1 protected resource. It accepts the JWT access tokens of
// Issuer whose audience is Resource. gateway.OAuthOptions says how they
// are checked.
type ServeOAuth struct {
	// Issuer is the authorization server; Resource is conduit serve's own
	// URL as its clients reach it.
	Issuer, Resource string
	// JWKSURL is where the issuer's keys are, when its metadata does not
	// say.
	JWKSURL string
	// PrincipalClaim is the claim that names the principal ("" is sub).
	PrincipalClaim string
	// Scopes are the scopes every token must have.
	Scopes []string
	// RequireTokenType accepts only tokens whose typ header is at+jwt
	// (RFC 9068), for an issuer that types its access tokens so.
	RequireTokenType bool
}

// ServeToken is one bearer token of a [Serve].
type ServeToken struct {
	// Principal is who the token authenticates, as policy conditions see
	// it ("principal" rules).
	Principal string
	// Env names the environment variable that holds the token.
	Env string
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

type serveEntry struct {
	Tokens        []json.RawMessage `json:"tokens"`
	OAuth         *serveOAuthEntry  `json:"oauth"`
	TaintLifetime string            `json:"taintLifetime"`
	TaintScope    string            `json:"taintScope"`
	Hosts         []string          `json:"hosts"`
	Origins       []string          `json:"origins"`
	Store         string            `json:"store"`
	Limits        []json.RawMessage `json:"limits"`
	Tasks         *tasksEntry       `json:"tasks"`
	Admins        []string          `json:"admins"`
	Approvals     string            `json:"approvals"`
}

type tasksEntry struct {
	Tools        []string `json:"tools"`
	Required     []string `json:"required"`
	After        string   `json:"after"`
	TTL          string   `json:"ttl"`
	PollInterval string   `json:"pollInterval"`
}

type limitEntry struct {
	Principal json.RawMessage `json:"principal"`
	Tool      json.RawMessage `json:"tool"`
	PerMinute int             `json:"perMinute"`
	AtOnce    int             `json:"atOnce"`
}

type serveOAuthEntry struct {
	Issuer         string   `json:"issuer"`
	Resource       string   `json:"resource"`
	JWKSURL        string   `json:"jwksUrl"`
	PrincipalClaim string   `json:"principalClaim"`
	Scopes         []string `json:"scopes"`
	// RequireTokenType is "requireTokenType".
	RequireTokenType bool `json:"requireTokenType"`
}

type tokenEntry struct {
	Principal *string `json:"principal"`
	Env       string  `json:"env"`
	// Refused with a message that says where a token goes.
	Token json.RawMessage `json:"token"`
}

// parseServe parses the "serve" object. It reads ${env:NAME} in its store
// URL with lookup. A password written in the file is added to warnings.
func parseServe(raw json.RawMessage, lookup func(string) (string, bool), warnings *[]string) (*Serve, error) {
	var e serveEntry
	if err := decodeStrict(raw, &e); err != nil {
		return nil, err
	}
	sc := &Serve{}
	principals := map[string]bool{}
	envs := map[string]bool{}
	for i, r := range e.Tokens {
		var te tokenEntry
		if err := decodeStrict(r, &te); err != nil {
			return nil, fmt.Errorf("token %d: %w", i+1, err)
		}
		switch {
		case te.Token != nil:
			return nil, fmt.Errorf(`token %d: a token is never written in the configuration: name the environment variable that holds it with "env"`, i+1)
		case te.Principal == nil:
			return nil, fmt.Errorf(`token %d: needs a "principal"`, i+1)
		case *te.Principal == "":
			// A session of the empty principal is bound to no one.
			return nil, fmt.Errorf(`token %d: "principal" is empty: name who the token is for`, i+1)
		case !envName.MatchString(te.Env):
			return nil, fmt.Errorf(`token %d: "env" must name an environment variable (letters, digits and _), not %q`, i+1, te.Env)
		case principals[*te.Principal]:
			return nil, fmt.Errorf("token %d: principal %q has a token already", i+1, *te.Principal)
		case envs[te.Env]:
			return nil, fmt.Errorf("token %d: %s holds another principal's token already", i+1, te.Env)
		}
		principals[*te.Principal], envs[te.Env] = true, true
		sc.Tokens = append(sc.Tokens, ServeToken{Principal: *te.Principal, Env: te.Env})
	}
	if o := e.OAuth; o != nil {
		for _, f := range [][2]string{{"issuer", o.Issuer}, {"resource", o.Resource}, {"jwksUrl", o.JWKSURL}} {
			switch {
			case f[1] == "" && f[0] != "jwksUrl":
				return nil, fmt.Errorf("oauth: needs %q", f[0])
			case f[1] == "":
			default:
				if err := oauth.CheckEndpoint(strconv.Quote(f[0]), f[1]); err != nil {
					return nil, fmt.Errorf("oauth: %s", strings.TrimPrefix(err.Error(), "oauth: "))
				}
			}
		}
		sc.OAuth = &ServeOAuth{Issuer: o.Issuer, Resource: o.Resource, JWKSURL: o.JWKSURL, PrincipalClaim: o.PrincipalClaim, Scopes: o.Scopes, RequireTokenType: o.RequireTokenType}
	}
	if e.TaintLifetime != "" {
		d, err := time.ParseDuration(e.TaintLifetime)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("taintLifetime: %q is not a positive duration (such as \"24h\" or \"30m\")", e.TaintLifetime)
		}
		sc.TaintLifetime = d
	}
	switch e.TaintScope {
	case "", "principal", "conversation":
		sc.TaintScope = e.TaintScope
	default:
		return nil, fmt.Errorf(`taintScope: %q is "principal" (the default) or "conversation"`, e.TaintScope)
	}
	for _, a := range e.Admins {
		if a == "" {
			return nil, errors.New(`admins: an empty name: name each admin's principal`)
		}
		sc.Admins = append(sc.Admins, a)
	}
	switch e.Approvals {
	case "", "client", "console":
		sc.Approvals = e.Approvals
	default:
		return nil, fmt.Errorf(`approvals: %q is "client" (the default) or "console"`, e.Approvals)
	}
	for _, h := range e.Hosts {
		if h == "" || strings.ContainsAny(h, "/ \t@?#") {
			return nil, fmt.Errorf("hosts: %q is not a host name (with or without a port)", h)
		}
		sc.Hosts = append(sc.Hosts, h)
	}
	for _, o := range e.Origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("origins: %q is not an origin (scheme://host[:port])", o)
		}
		sc.Origins = append(sc.Origins, strings.TrimSuffix(o, "/"))
	}
	if e.Store != "" {
		if err := parseStore(sc, e.Store, lookup, warnings); err != nil {
			return nil, err
		}
	}
	for i, r := range e.Limits {
		l, err := parseLimit(r)
		if err != nil {
			return nil, fmt.Errorf("limit %d: %w", i+1, err)
		}
		sc.Limits = append(sc.Limits, l)
	}
	if t := e.Tasks; t != nil {
		st := &ServeTasks{Tools: t.Tools, Required: t.Required}
		for _, f := range []struct {
			key, v string
			d      *time.Duration
		}{{"after", t.After, &st.After}, {"ttl", t.TTL, &st.TTL}, {"pollInterval", t.PollInterval, &st.PollInterval}} {
			if f.v == "" {
				continue
			}
			d, err := time.ParseDuration(f.v)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("tasks: %s: %q is not a positive duration (such as \"10s\")", f.key, f.v)
			}
			*f.d = d
		}
		for _, p := range append(slices.Clone(t.Tools), t.Required...) {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return nil, fmt.Errorf("tasks: %q is not a tool pattern (\"server/tool\", globs)", p)
			}
		}
		sc.Tasks = st
	}
	return sc, nil
}

// parseStore reads the store's URL into sc.Store: ${env:NAME} expanded,
// a scheme of the Redis store's. Errors never show the password.
func parseStore(sc *Serve, raw string, lookup func(string) (string, bool), warnings *[]string) error {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, set := u.User.Password(); set && pw != "" && !strings.Contains(pw, "${") {
			*warnings = append(*warnings, `serve: the password of "store" is written in the file: keep it in an environment variable and write ${env:NAME} in its place`)
		}
	}
	x := &envExpander{lookup: lookup}
	v, err := x.expand(raw)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	u, err := url.Parse(v)
	if err != nil {
		return errors.New("store: the URL is malformed (a password with / ? # @ % or a space must be percent-escaped)")
	}
	switch u.Scheme {
	case "redis", "rediss", "unix", "sqlite":
	case "":
		if v != "memory" {
			return errors.New(`store: want a URL (sqlite:///PATH, redis://HOST:PORT/DB, rediss:// for TLS, unix://PATH) or "memory"`)
		}
	default:
		return fmt.Errorf("store: %q is not a store's URL (sqlite:///PATH, redis://HOST:PORT/DB, rediss:// for TLS, unix://PATH, or \"memory\")", redact.Origin(v))
	}
	sc.Store = v
	return nil
}

// parseLimit reads one object of "limits".
func parseLimit(raw json.RawMessage) (ServeLimit, error) {
	var e limitEntry
	if err := decodeStrict(raw, &e); err != nil {
		return ServeLimit{}, err
	}
	var l ServeLimit
	var err error
	if l.Principals, err = stringOrList("principal", e.Principal); err != nil {
		return l, err
	}
	if slices.Contains(l.Principals, "*") {
		if len(l.Principals) > 1 {
			return l, errors.New(`"principal": "*" is every principal, and goes alone`)
		}
		l.Principals = nil
	}
	if l.Tools, err = stringOrList("tool", e.Tool); err != nil {
		return l, err
	}
	if l.Tools == nil {
		l.Tools = []string{"*"}
	}
	if err := conduit.NewPolicy(conduit.Allow(l.Tools...)).Err(); err != nil {
		return l, fmt.Errorf("tool: %s", strings.TrimPrefix(err.Error(), "conduit: policy "))
	}
	switch {
	case e.PerMinute < 0 || e.AtOnce < 0:
		return l, errors.New(`"perMinute" and "atOnce" are counts of calls, not negative`)
	case e.PerMinute == 0 && e.AtOnce == 0:
		return l, errors.New(`needs "perMinute" or "atOnce" (or both)`)
	}
	l.PerMinute, l.AtOnce = e.PerMinute, e.AtOnce
	return l, nil
}

// stringOrList reads a string or a non-empty list of non-empty strings;
// nil when raw is absent.
func stringOrList(key string, raw json.RawMessage) ([]string, error) {
	if raw == nil {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, fmt.Errorf("%q is empty", key)
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 || slices.Contains(list, "") {
		return nil, fmt.Errorf("%q must be a string or a non-empty list of strings", key)
	}
	return list, nil
}

// ResolveTokens reads each token from its environment variable with
// getenv. It returns them as token → principal. A variable that is unset
// or empty is an error that names it. It never shows a token's value.
func (sc *Serve) ResolveTokens(getenv func(string) string) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for _, t := range sc.Tokens {
		v := getenv(t.Env)
		if v == "" {
			errs = append(errs, fmt.Errorf("the token of principal %q: %s is not set", t.Principal, t.Env))
			continue
		}
		if _, dup := out[v]; dup {
			errs = append(errs, fmt.Errorf("the token of principal %q in %s is another principal's too", t.Principal, t.Env))
			continue
		}
		out[v] = t.Principal
	}
	return out, errors.Join(errs...)
}
