package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/redact"
	"github.com/conduitmcp/conduit/oauth"
)

// File is an MCP configuration file. It holds servers in the standard
// mcpServers shape of Claude Desktop, Cursor and VS Code. It holds an
// optional policy.
type File struct {
	// Servers, in the file's order.
	Servers []conduit.Server
	// Policy is nil when the file has no "policy" key.
	Policy *conduit.Policy
	// Serve is nil when the file has no "serve" key (see [Serve]).
	Serve *Serve
	// LaxPolicy is true when the file says "strictPolicy": false. A policy
	// that names a server not configured is then a warning, not an error
	// (see [conduit.Options.LaxPolicy]).
	LaxPolicy bool
	// Warnings are what the file holds that works but should change. There
	// is one line each, never quoting a value. An example is a secret
	// written in the file rather than read with ${env:NAME}. That may be
	// an Authorization header, or a variable of env named like a token.
	Warnings []string
}

// Load reads and parses a configuration file; see [Parse].
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Parse parses a configuration:
//
//	{
//	  "mcpServers": {
//	    "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"K": "V"}, "cwd": "/"},
//	    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${env:REMOTE_TOKEN}"}, "type": "http",
//	               "maxResultTokens": 8000}
//	  },
//	  "policy": [
//	    {"allow": ["files/read_*", "files/list_*"]},
//	    {"deny": ["remote/send_*"], "tainted": ["files"]},
//	    {"ask": ["*"]}
//	  ]
//	}
//
// A server's "identity" is "shared" or "principal" (see
// [conduit.Identity]):
//
//   - "shared" is the default. It is one session for every caller, with
//     the credentials above.
//   - "principal" is a session per principal, with the principal's own
//     credentials.
//
// Under "principal", "principals" holds each principal's credentials.
// That is "headers" for a url and "env" for a command, with ${env:NAME}
// read as above. Or the server's "oauth" gets each principal's tokens,
// by conduit login --principal or a token exchange:
//
//	"github": {"url": "https://mcp.github.example/mcp", "identity": "principal",
//	  "principals": {
//	    "alice": {"headers": {"Authorization": "Bearer ${env:GH_ALICE}"}},
//	    "bob":   {"headers": {"Authorization": "Bearer ${env:GH_BOB}"}}}}
//
// VS Code's "servers" key is accepted for "mcpServers". Its "inputs" are
// ignored. "type" is "stdio", "http" (or "streamable-http",
// "streamableHttp") or "sse". It is inferred when absent.
//
// A "command" starts with an allowlist of conduit's environment (see
// Server.Command), then its "env". "inheritEnv" names more variables to
// pass on: "inheritEnv": ["AWS_PROFILE", "KUBECONFIG"]. "maxResultTokens"
// is the server's budget of tokens per result for a model
// (Server.MaxResultTokens; negative: none).
//
// A policy rule has exactly one of "allow", "ask" or "deny". It may add
// "tainted": a list of servers, or true for any taint. It may add
// "principal": a list of ids. Unknown keys are errors, so a misspelt rule
// never passes silently. A rule that names a server not configured is an
// error too. The exception is when the top-level "strictPolicy" is false
// (see [conduit.Options.LaxPolicy]).
//
// ${env:NAME} may appear in a server's "url" and in the values of its
// "headers" and "env". It is the value of the environment variable NAME
// (letters, digits and _), as in VS Code: "Bearer ${env:GH_TOKEN}". A
// variable that is not set is an error that names it. An empty one is its
// value. A value read is not expanded again. There is no escape: as in VS
// Code, a value cannot hold the text ${env:...}. Other ${...} are kept as
// written. VS Code's ${input:ID} is also reported in [File.Warnings],
// since conduit has no prompt for it. The values read never appear in
// conduit's errors, logs or status. A server's errors show ${env:NAME} in
// their place. A secret written in the file itself is reported in
// [File.Warnings].
func Parse(data []byte) (*File, error) {
	// Syntax first, over the whole input. Only json.Unmarshal reports the
	// offset of a syntax error from the start of the input.
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset > 0 && int(se.Offset) <= len(data) {
			line, col := position(data, se.Offset)
			return nil, fmt.Errorf("config: %w (line %d, column %d)", err, line, col)
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	return parseConfig(data, os.LookupEnv)
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, max(col, 1)
}

// parseConfig parses a configuration whose ${env:NAME} are read with
// lookup.
func parseConfig(data []byte, lookup func(string) (string, bool)) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg := &File{}
	seen := map[string]bool{}
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if seen[key] {
			return nil, fmt.Errorf("config: key %q appears twice", key)
		}
		seen[key] = true
		switch key {
		case "mcpServers", "servers":
			if seen["mcpServers"] && seen["servers"] {
				return nil, errors.New(`config: use one of "mcpServers" and "servers"`)
			}
			if cfg.Servers, err = parseServers(dec, lookup, &cfg.Warnings); err != nil {
				return nil, fmt.Errorf("config: %s: %w", key, err)
			}
		case "policy":
			var rules []json.RawMessage
			if err := dec.Decode(&rules); err != nil {
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) {
					return nil, fmt.Errorf(`config: "policy" must be a list of rules, not %s`, jsonKind(te.Value))
				}
				return nil, fmt.Errorf("config: policy: %w", err)
			}
			if cfg.Policy, err = parsePolicy(rules); err != nil {
				return nil, fmt.Errorf("config: policy: %w", err)
			}
		case "strictPolicy":
			var strict bool
			if err := dec.Decode(&strict); err != nil {
				return nil, errors.New(`config: "strictPolicy" must be true or false`)
			}
			cfg.LaxPolicy = !strict
		case "serve":
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, fmt.Errorf("config: serve: %w", err)
			}
			if cfg.Serve, err = parseServe(raw, lookup, &cfg.Warnings); err != nil {
				return nil, fmt.Errorf("config: serve: %w", err)
			}
		case "inputs", "$schema":
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("config: %w", err)
			}
		default:
			return nil, fmt.Errorf(`config: unknown key %q (expected "mcpServers" or "servers", "policy", "strictPolicy" and "serve")`, key)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("config: unexpected data after the top-level object")
	}
	if len(cfg.Servers) == 0 {
		return nil, errors.New(`config: no servers: add them under "mcpServers"`)
	}
	return cfg, nil
}

type serverEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	// InheritEnv is Server.InheritEnv: names, never expanded.
	InheritEnv []string          `json:"inheritEnv"`
	URL        string            `json:"url"`
	Headers    map[string]string `json:"headers"`
	OAuth      json.RawMessage   `json:"oauth"`
	// Identity is "shared" (the default) or "principal"; Principals are
	// each principal's credentials under "principal".
	Identity   string                    `json:"identity"`
	Principals map[string]principalEntry `json:"principals"`
	// MaxResultTokens is Server.MaxResultTokens.
	MaxResultTokens int `json:"maxResultTokens"`
	// Accepted and ignored: editors' own settings.
	Disabled    bool            `json:"disabled"`
	EnvFile     string          `json:"envFile"`
	AlwaysAllow json.RawMessage `json:"alwaysAllow"`
}

// parseServers reads the servers object, keeping the file's order, which
// json.Unmarshal into a map would lose. ${env:NAME} is read with lookup;
// secrets written in the file are added to warnings.
func parseServers(dec *json.Decoder, lookup func(string) (string, bool), warnings *[]string) ([]conduit.Server, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var out []conduit.Server
	ids := map[string]bool{}
	for dec.More() {
		id, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("server %q: %w", id, err)
		}
		if ids[id] {
			return nil, fmt.Errorf("server %q appears twice", id)
		}
		ids[id] = true
		var e serverEntry
		if err := decodeStrict(raw, &e); err != nil {
			return nil, fmt.Errorf("server %q: %w", id, err)
		}
		if e.Disabled {
			continue
		}
		if e.EnvFile != "" {
			return nil, fmt.Errorf("server %q: envFile is not supported; put the variables under \"env\"", id)
		}
		*warnings = append(*warnings, writtenSecrets(fmt.Sprintf("server %q", id), e.Headers, e.Env)...)
		x := &envExpander{lookup: lookup}
		if e.URL, err = x.expand(e.URL); err != nil {
			return nil, fmt.Errorf("server %q: url: %w", id, err)
		}
		if err := x.expandMap("headers", e.Headers); err != nil {
			return nil, fmt.Errorf("server %q: %w", id, err)
		}
		if err := x.expandMap("env", e.Env); err != nil {
			return nil, fmt.Errorf("server %q: %w", id, err)
		}
		s := conduit.Server{ID: id, Command: e.Command, Args: e.Args, Env: e.Env, Dir: e.Cwd, URL: e.URL, Headers: e.Headers,
			InheritEnv: e.InheritEnv, MaxResultTokens: e.MaxResultTokens}
		if err := parseIdentity(&s, &e, x, warnings); err != nil {
			return nil, err
		}
		*warnings = append(*warnings, inputWarnings(id, x.inputs)...)
		s.FromEnv = x.secrets()
		switch {
		case e.Command != "" && e.URL != "":
			return nil, fmt.Errorf(`server %q: has both "command" and "url"; a server is one or the other`, id)
		case e.Command == "" && e.URL == "":
			return nil, fmt.Errorf(`server %q: needs a "command" (stdio) or a "url" (HTTP)`, id)
		case e.URL != "" && (e.Args != nil || e.Env != nil || e.Cwd != "" || e.InheritEnv != nil):
			return nil, fmt.Errorf(`server %q: "args", "env", "inheritEnv" and "cwd" are for a "command", not a "url"`, id)
		case e.Command != "" && e.Headers != nil:
			return nil, fmt.Errorf(`server %q: "headers" are for a "url", not a "command"`, id)
		}
		switch strings.ToLower(e.Type) {
		case "":
		case "stdio":
			if e.Command == "" {
				return nil, fmt.Errorf(`server %q: type "stdio" needs a "command"`, id)
			}
		case "http", "streamable-http", "streamablehttp":
			if e.URL == "" {
				return nil, fmt.Errorf(`server %q: type %q needs a "url"`, id, e.Type)
			}
		case "sse":
			if e.URL == "" {
				return nil, fmt.Errorf(`server %q: type "sse" needs a "url"`, id)
			}
			s.SSE = true
		default:
			return nil, fmt.Errorf("server %q: unknown type %q (stdio, http or sse)", id, e.Type)
		}
		if e.OAuth != nil {
			if s.OAuth, err = oauth.ParseConfig(e.OAuth, e.URL); err != nil {
				return nil, redact.Env(fmt.Errorf("server %q: oauth: %w", id, err), s.FromEnv)
			}
		}
		if err := s.Validate(); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	_, err := dec.Token()
	return out, err
}

// principalEntry is one principal's credentials: "headers" for a "url",
// "env" for a "command".
type principalEntry struct {
	Headers map[string]string `json:"headers"`
	Env     map[string]string `json:"env"`
}

// parseIdentity reads a server's "identity" and "principals" into s. It
// expands ${env:NAME} in the principals' values with x.
func parseIdentity(s *conduit.Server, e *serverEntry, x *envExpander, warnings *[]string) error {
	switch strings.ToLower(e.Identity) {
	case "", "shared":
	case "principal":
		s.Identity = conduit.IdentityPrincipal
	default:
		return fmt.Errorf(`server %q: unknown identity %q ("shared" or "principal")`, s.ID, e.Identity)
	}
	if e.Principals != nil && s.Identity != conduit.IdentityPrincipal {
		return fmt.Errorf(`server %q: "principals" are for "identity": "principal"`, s.ID)
	}
	for _, p := range slices.Sorted(maps.Keys(e.Principals)) {
		pe := e.Principals[p]
		if pe.Headers == nil && pe.Env == nil {
			return fmt.Errorf(`server %q: principal %q has neither "headers" nor "env"`, s.ID, p)
		}
		*warnings = append(*warnings, writtenSecrets(fmt.Sprintf("server %q: principal %q", s.ID, p), pe.Headers, pe.Env)...)
		if err := x.expandMap("headers", pe.Headers); err != nil {
			return fmt.Errorf("server %q: principal %q: %w", s.ID, p, err)
		}
		if err := x.expandMap("env", pe.Env); err != nil {
			return fmt.Errorf("server %q: principal %q: %w", s.ID, p, err)
		}
		if s.Principals == nil {
			s.Principals = map[string]conduit.Credentials{}
		}
		s.Principals[p] = conduit.Credentials{Headers: pe.Headers, Env: pe.Env}
	}
	return nil
}

type ruleEntry struct {
	Allow     []string        `json:"allow"`
	Ask       []string        `json:"ask"`
	Deny      []string        `json:"deny"`
	Tainted   json.RawMessage `json:"tainted"`
	Principal []string        `json:"principal"`
}

func parsePolicy(raw []json.RawMessage) (*conduit.Policy, error) {
	var rules []conduit.Rule
	for i, r := range raw {
		var e ruleEntry
		if err := decodeStrict(r, &e); err != nil {
			return nil, fmt.Errorf("rule %d: %w", i+1, err)
		}
		var rule conduit.Rule
		n := 0
		if e.Allow != nil {
			rule, n = conduit.Allow(e.Allow...), n+1
		}
		if e.Ask != nil {
			rule, n = conduit.Ask(e.Ask...), n+1
		}
		if e.Deny != nil {
			rule, n = conduit.Deny(e.Deny...), n+1
		}
		if n != 1 {
			return nil, fmt.Errorf(`rule %d: needs exactly one of "allow", "ask" or "deny"`, i+1)
		}
		if rule.Err() != nil {
			return nil, fmt.Errorf("rule %d: %w", i+1, rule.Err())
		}
		if len(e.Tainted) > 0 {
			var anyTaint bool
			var servers []string
			switch {
			case json.Unmarshal(e.Tainted, &anyTaint) == nil && anyTaint:
				rule = rule.When(conduit.Tainted())
			case json.Unmarshal(e.Tainted, &servers) == nil && len(servers) > 0:
				rule = rule.When(conduit.Tainted(servers...))
			default:
				return nil, fmt.Errorf(`rule %d: "tainted" is a list of servers, or true for any taint`, i+1)
			}
		}
		if e.Principal != nil {
			if len(e.Principal) == 0 {
				return nil, fmt.Errorf(`rule %d: "principal" is an empty list, which no call matches`, i+1)
			}
			rule = rule.When(conduit.Principal(e.Principal...))
		}
		rules = append(rules, rule)
	}
	return conduit.NewPolicy(rules...), nil
}

// decodeStrict decodes one JSON object into v, refusing unknown keys. Its
// errors name the key at fault.
func decodeStrict(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	err := d.Decode(v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Errorf("must be an object, not %s", jsonKind(te.Value))
		}
		return fmt.Errorf("%q must be %s, not %s", te.Field, describeType(te.Type.String()), jsonKind(te.Value))
	}
	if key, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown key %s", key)
	}
	return err
}

func describeType(goType string) string {
	switch goType {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "[]string":
		return "a list of strings"
	case "map[string]string":
		return "an object of strings"
	case "int":
		return "a whole number"
	}
	return goType
}

func jsonKind(v string) string {
	switch {
	case v == "object", v == "array":
		return "an " + v
	case v == "bool":
		return "a boolean"
	case strings.HasPrefix(v, "number"):
		return "a number"
	case v == "string":
		return "a string"
	}
	return v
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %v", string(want), tok)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("expected a key, found %v", tok)
	}
	return s, nil
}
