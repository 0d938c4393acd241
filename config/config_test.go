package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
)

func serverIDs(cfg *File) []string {
	var ids []string
	for _, s := range cfg.Servers {
		ids = append(ids, s.ID)
	}
	return ids
}

func TestParseConfigClaudeDesktop(t *testing.T) {
	cfg, err := Parse([]byte(`{
  "mcpServers": {
    "zfiles": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
      "env": {"DEBUG": "1"}
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"]
    },
    "afetch": {"command": "uvx", "args": ["mcp-server-fetch"]}
  }
}`))
	if err != nil {
		t.Fatal(err)
	}
	// The file's order, not sorted.
	if got := serverIDs(cfg); !reflect.DeepEqual(got, []string{"zfiles", "github", "afetch"}) {
		t.Fatalf("ids = %v", got)
	}
	want := conduit.Server{ID: "zfiles", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"}, Env: map[string]string{"DEBUG": "1"}}
	if !reflect.DeepEqual(cfg.Servers[0], want) {
		t.Fatalf("server = %+v", cfg.Servers[0])
	}
	if cfg.Policy != nil {
		t.Fatal("a policy without a policy key")
	}
}

func TestParseConfigCursor(t *testing.T) {
	cfg, err := Parse([]byte(`{
  "mcpServers": {
    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}},
    "legacy": {"url": "https://old.example.com/sse", "type": "sse"},
    "local": {"command": "node", "args": ["server.js"], "env": {}, "cwd": "/srv"},
    "off": {"command": "nope", "disabled": true}
  }
}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := serverIDs(cfg); !reflect.DeepEqual(got, []string{"remote", "legacy", "local"}) {
		t.Fatalf("ids = %v", got)
	}
	r := cfg.Servers[0]
	if r.URL != "https://mcp.example.com/mcp" || r.Headers["Authorization"] != "Bearer t" || r.SSE {
		t.Fatalf("remote = %+v", r)
	}
	if l := cfg.Servers[1]; !l.SSE || l.URL == "" {
		t.Fatalf("legacy = %+v", l)
	}
	if l := cfg.Servers[2]; l.Dir != "/srv" || l.Command != "node" {
		t.Fatalf("local = %+v", l)
	}
}

func TestParseConfigVSCode(t *testing.T) {
	cfg, err := Parse([]byte(`{
  "inputs": [
    {"type": "promptString", "id": "gh-token", "description": "GitHub token", "password": true}
  ],
  "servers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${input:gh-token}"}},
    "memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
    "streamy": {"type": "streamableHttp", "url": "http://localhost:3001/mcp"}
  }
}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := serverIDs(cfg); !reflect.DeepEqual(got, []string{"github", "memory", "streamy"}) {
		t.Fatalf("ids = %v", got)
	}
	// The editor's prompts are not conduit's: sent as written, and
	// reported.
	if h := cfg.Servers[0].Headers["Authorization"]; h != "Bearer ${input:gh-token}" {
		t.Fatalf("header = %q", h)
	}
	if want := []string{`server "github": ${input:gh-token} is VS Code's prompt, which conduit does not have: it is sent as written; set an environment variable and write ${env:NAME} in its place`}; !reflect.DeepEqual(cfg.Warnings, want) {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
}

func TestParseConfigPolicy(t *testing.T) {
	cfg, err := Parse([]byte(`{
  "mcpServers": {"files": {"command": "x"}, "web": {"url": "http://x"}},
  "policy": [
    {"deny": ["files/write_*"], "tainted": ["web"]},
    {"ask": ["files/write_*"], "tainted": true},
    {"allow": ["files/*"], "principal": ["alice"]},
    {"allow": ["web/fetch"]},
    {"ask": ["*"]}
  ]
}`))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Policy
	if p == nil || p.Err() != nil {
		t.Fatalf("policy = %v", p)
	}
	tests := []struct {
		call conduit.Call
		want conduit.Decision
	}{
		{conduit.Call{Server: "files", Tool: "write_x", Taint: []string{"web"}}, conduit.DecisionDeny},
		{conduit.Call{Server: "files", Tool: "write_x", Taint: []string{"other"}}, conduit.DecisionAsk},
		{conduit.Call{Server: "files", Tool: "write_x", Principal: "alice"}, conduit.DecisionAllow},
		{conduit.Call{Server: "files", Tool: "read", Principal: "bob"}, conduit.DecisionAsk},
		{conduit.Call{Server: "web", Tool: "fetch"}, conduit.DecisionAllow},
	}
	for _, tt := range tests {
		if d, _, _ := p.Decide(&tt.call); d != tt.want {
			t.Errorf("%+v: %v, want %v", tt.call, d, tt.want)
		}
	}
	// An empty policy denies everything.
	cfg, err = Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}, "policy": []}`))
	if err != nil || cfg.Policy == nil {
		t.Fatal(err)
	}
	if d, _, _ := cfg.Policy.Decide(&conduit.Call{Server: "a", Tool: "t"}); d != conduit.DecisionDeny {
		t.Fatal("empty policy allows")
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not JSON", `{"mcpServers": {`, "unexpected end of JSON input"},
		{"bad JSON with position", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}", "line 3, column 26"},
		{"not an object", `[1, 2]`, `expected "{"`},
		{"trailing data", `{"mcpServers": {"a": {"command": "x"}}} {}`, "after top-level value (line 1, column 41)"},
		{"trailing garbage", `{"mcpServers": {"a": {"command": "x"}}} xyz`, "invalid character 'x' after top-level value"},
		{"unknown top-level key", `{"mcpServers": {"a": {"command": "x"}}, "polcy": []}`, `unknown key "polcy"`},
		{"duplicate top-level key", `{"mcpServers": {"a": {"command": "x"}}, "mcpServers": {}}`, `"mcpServers" appears twice`},
		{"both server keys", `{"mcpServers": {"a": {"command": "x"}}, "servers": {"b": {"command": "y"}}}`, `one of "mcpServers" and "servers"`},
		{"no servers", `{"mcpServers": {}}`, "no servers"},
		{"no servers key", `{"policy": []}`, "no servers"},
		{"servers not an object", `{"mcpServers": []}`, `expected "{"`},
		{"unknown server key", `{"mcpServers": {"a": {"comand": "x"}}}`, `server "a": unknown key "comand"`},
		{"server not an object", `{"mcpServers": {"a": "npx"}}`, `server "a": must be an object, not a string`},
		{"args type", `{"mcpServers": {"a": {"command": "x", "args": "-y"}}}`, `server "a": "args" must be a list of strings, not a string`},
		{"env type", `{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}`, `"env`},
		{"command type", `{"mcpServers": {"a": {"command": ["x"]}}}`, `"command" must be a string, not an array`},
		{"disabled type", `{"mcpServers": {"a": {"command": "x", "disabled": "yes"}}}`, `"disabled" must be true or false`},
		{"duplicate server", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, `server "a" appears twice`},
		{"id with a dot", `{"mcpServers": {"a.b": {"command": "x"}}}`, `server id "a.b" must match`},
		{"id with the separator", `{"mcpServers": {"a__b": {"command": "x"}}}`, `contains "__"`},
		{"empty id", `{"mcpServers": {"": {"command": "x"}}}`, "server id is empty"},
		{"neither command nor url", `{"mcpServers": {"a": {"args": ["x"]}}}`, `needs a "command" (stdio) or a "url"`},
		{"both command and url", `{"mcpServers": {"a": {"command": "x", "url": "http://x"}}}`, `both "command" and "url"`},
		{"args with url", `{"mcpServers": {"a": {"url": "http://x", "args": []}}}`, `"args", "env", "inheritEnv" and "cwd" are for a "command"`},
		{"headers with command", `{"mcpServers": {"a": {"command": "x", "headers": {}}}}`, `"headers" are for a "url"`},
		{"unknown type", `{"mcpServers": {"a": {"command": "x", "type": "websocket"}}}`, `unknown type "websocket"`},
		{"stdio without command", `{"mcpServers": {"a": {"url": "http://x", "type": "stdio"}}}`, `type "stdio" needs a "command"`},
		{"http without url", `{"mcpServers": {"a": {"command": "x", "type": "http"}}}`, `type "http" needs a "url"`},
		{"sse without url", `{"mcpServers": {"a": {"command": "x", "type": "sse"}}}`, `type "sse" needs a "url"`},
		{"envFile", `{"mcpServers": {"a": {"command": "x", "envFile": ".env"}}}`, "envFile is not supported"},
		{"policy not a list", `{"mcpServers": {"a": {"command": "x"}}, "policy": {"allow": ["*"]}}`, `"policy" must be a list of rules, not an object`},
		{"rule not an object", `{"mcpServers": {"a": {"command": "x"}}, "policy": ["allow"]}`, "rule 1: must be an object"},
		{"unknown rule key", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"allow": ["*"]}, {"alow": ["*"]}]}`, `rule 2: unknown key "alow"`},
		{"no decision", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"tainted": true}]}`, `rule 1: needs exactly one of "allow", "ask" or "deny"`},
		{"two decisions", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"allow": ["*"], "deny": ["*"]}]}`, "exactly one"},
		{"empty patterns", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"allow": []}]}`, "without patterns"},
		{"bad pattern", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"deny": ["a/[x"]}]}`, `rule 1: conduit: policy pattern "a/[x"`},
		{"patterns type", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"allow": "*"}]}`, `"allow" must be a list of strings, not a string`},
		{"tainted false", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"allow": ["*"], "tainted": false}]}`, `"tainted" is a list of servers, or true`},
		{"tainted empty list", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"allow": ["*"], "tainted": []}]}`, `"tainted" is a list`},
		{"tainted number", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"allow": ["*"], "tainted": 1}]}`, `"tainted" is a list`},
		{"principal empty", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"allow": ["*"], "principal": []}]}`, `"principal" is an empty list`},
		{"principal type", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"allow": ["*"], "principal": "alice"}]}`, `"principal" must be a list of strings`},
		{"strictPolicy type", `{"mcpServers": {"a": {"command": "x"}}, "strictPolicy": "no"}`, `"strictPolicy" must be true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("no error; config %+v", cfg)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Fatalf("error %q does not say where it comes from", err)
			}
		})
	}
}

// TestParseConfigStrictPolicy: a policy is strict unless the file says
// "strictPolicy": false.
func TestParseConfigStrictPolicy(t *testing.T) {
	for in, lax := range map[string]bool{
		`{"mcpServers": {"a": {"command": "x"}}}`:                        false,
		`{"mcpServers": {"a": {"command": "x"}}, "strictPolicy": true}`:  false,
		`{"mcpServers": {"a": {"command": "x"}}, "strictPolicy": false}`: true,
	} {
		cfg, err := Parse([]byte(in))
		if err != nil || cfg.LaxPolicy != lax {
			t.Errorf("%s: LaxPolicy %v, %v", in, cfg.LaxPolicy, err)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil || len(cfg.Servers) != 1 {
		t.Fatalf("Load = %+v, %v", cfg, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"mcpServers": 1}`), 0o600)
	if _, err := Load(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": config: ") {
		t.Fatalf("bad file: %v", err)
	}
}

func TestPosition(t *testing.T) {
	data := []byte("ab\ncd\nef")
	for _, tt := range []struct {
		off       int64
		line, col int
	}{{0, 1, 1}, {1, 1, 1}, {2, 1, 2}, {3, 2, 1}, {5, 2, 2}, {7, 3, 1}, {100, 3, 2}, {-1, 1, 1}} {
		if l, c := position(data, tt.off); l != tt.line || c != tt.col {
			t.Errorf("position(%d) = %d:%d, want %d:%d", tt.off, l, c, tt.line, tt.col)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers": {"a": {"command": "x", "args": ["y"], "env": {"K": "V"}}}}`,
		`{"mcpServers": {"a": {"command": "x", "inheritEnv": ["AWS_PROFILE", "", "A=B", "${env:X}"]}, "b": {"url": "http://x", "inheritEnv": []}}}`,
		`{"servers": {"gh": {"type": "http", "url": "https://x", "headers": {"A": "b"}}}, "inputs": []}`,
		`{"mcpServers": {"a": {"url": "http://x", "type": "sse"}}, "policy": [{"allow": ["a/*"], "tainted": true, "principal": ["p"]}, {"deny": ["*"], "tainted": ["a"]}]}`,
		`{"mcpServers": {"a.b": {"command": "x"}}}`,
		`{"policy": [{"ask": ["[" ]}]}`,
		`[]`, `{`, `null`, `{"mcpServers": {"a": null}}`, `{"mcpServers": {"a": {}}} 1`,
		`{"mcpServers": {"r": {"url": "https://x/mcp", "oauth": {"clientId": "c", "clientSecretEnv": "S", "scopes": ["a"]}}}}`,
		`{"mcpServers": {"r": {"url": "https://x/mcp", "oauth": {"clientSecret": "leaked"}}}}`,
		`{"mcpServers": {"a": {"command": "x"}}, "serve": {"tokens": [{"principal": "p", "env": "T"}], "hosts": ["h"]}}`,
		`{"mcpServers": {"r": {"url": "https://${env:HOME}/x", "headers": {"Authorization": "Bearer ${env:NOPE}", "X-Api-Key": "k"}}, "c": {"command": "x", "env": {"T": "${input:t}", "A_TOKEN": "t"}}}}`,
		`{"mcpServers": {"g": {"url": "https://x/mcp", "identity": "principal", "principals": {"a": {"headers": {"Authorization": "Bearer ${env:HOME}"}}, "": {"headers": {}}}}, "n": {"command": "x", "identity": "principal", "principals": {"b": {"env": {"T": "t"}}}}}}`,
		`{"mcpServers": {"l": {"url": "https://x/mcp", "identity": "principal", "oauth": {"grant": "token_exchange", "clientId": "c"}}}, "serve": {"oauth": {"issuer": "https://idp.example", "resource": "https://gw.example/mcp"}, "taintLifetime": "1h"}}`,
		`{"mcpServers": {"a": {"command": "x"}}, "serve": {"store": "redis://:${env:HOME}@r:6379/0", "limits": [{"principal": "*", "tool": "a/*", "perMinute": 60, "atOnce": 4}, {"principal": ["ci"], "perMinute": 1}]}}`,
		`{"mcpServers": {"a": {"command": "x"}}, "serve": {"store": "rediss://u:pw@r/1?dial_timeout=1s", "limits": [{"atOnce": 0}, {"perMinute": 1.5}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			if cfg != nil {
				t.Fatal("a config with an error")
			}
			return
		}
		if len(cfg.Servers) == 0 {
			t.Fatal("a config without servers")
		}
		seen := map[string]bool{}
		for _, s := range cfg.Servers {
			if err := s.Validate(); err != nil {
				t.Fatalf("invalid server accepted: %v", err)
			}
			if seen[s.ID] {
				t.Fatalf("duplicate id %q accepted", s.ID)
			}
			seen[s.ID] = true
		}
		if cfg.Policy != nil && cfg.Policy.Err() != nil {
			t.Fatalf("malformed policy accepted: %v", cfg.Policy.Err())
		}
	})
}
