package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseConfigMaxResultTokens(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x", "maxResultTokens": 8000}, "b": {"url": "https://b.example/mcp", "maxResultTokens": -1}, "c": {"command": "y"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := []int{cfg.Servers[0].MaxResultTokens, cfg.Servers[1].MaxResultTokens, cfg.Servers[2].MaxResultTokens}; !reflect.DeepEqual(got, []int{8000, -1, 0}) {
		t.Fatalf("maxResultTokens %v", got)
	}
	for in, want := range map[string]string{
		`{"mcpServers": {"a": {"command": "x", "maxResultTokens": "8000"}}}`: `"maxResultTokens" must be a whole number, not a string`,
		`{"mcpServers": {"a": {"command": "x", "maxResultTokens": 1.5}}}`:    `"maxResultTokens" must be a whole number, not a number`,
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

func TestConfigOAuth(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"linear": {"url": "https://mcp.linear.app/mcp", "oauth": {"clientIdEnv": "LINEAR_CLIENT_ID", "scopes": ["read"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Servers[0].OAuth
	if o == nil || o.ClientIDEnv != "LINEAR_CLIENT_ID" || len(o.Scopes) != 1 {
		t.Fatalf("OAuth = %v", o)
	}
	for _, bad := range []string{
		`{"mcpServers": {"a": {"url": "https://x/mcp", "oauth": {"clientSecret": "s"}}}}`,
		`{"mcpServers": {"a": {"command": "x", "oauth": {}}}}`,
		`{"mcpServers": {"a": {"url": "https://x/sse", "type": "sse", "oauth": {}}}}`,
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// inheritEnv in mcp.json: names, kept as written (never expanded); ${env:}
// in the server's env is read as before; a url server has no environment.
func TestConfigInheritEnv(t *testing.T) {
	env := envOf(map[string]string{"NOTES_DB": "/var/notes.db", "AWS_PROFILE": "dev"})
	cfg, err := parseConfig([]byte(`{"mcpServers": {
		"notes": {"command": "notes-server", "env": {"DB": "${env:NOTES_DB}"}, "inheritEnv": ["AWS_PROFILE", "KUBECONFIG", "${env:NOTES_DB}"]},
		"bare":  {"command": "x"}
	}}`), env)
	if err == nil || !strings.Contains(err.Error(), "not ${...} references") {
		t.Fatalf("a ${env:} in inheritEnv, which holds names: %v", err)
	}
	cfg, err = parseConfig([]byte(`{"mcpServers": {
		"notes": {"command": "notes-server", "env": {"DB": "${env:NOTES_DB}"}, "inheritEnv": ["AWS_PROFILE", "KUBECONFIG"]},
		"bare":  {"command": "x"}
	}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	notes, bare := cfg.Servers[0], cfg.Servers[1]
	if !slices.Equal(notes.InheritEnv, []string{"AWS_PROFILE", "KUBECONFIG"}) || notes.Env["DB"] != "/var/notes.db" {
		t.Errorf("notes: inheritEnv %q, env %q", notes.InheritEnv, notes.Env)
	}
	if bare.InheritEnv != nil {
		t.Errorf("bare: inheritEnv %q", bare.InheritEnv)
	}
	for _, tt := range []struct{ config, want string }{
		{`{"mcpServers": {"a": {"url": "http://x", "inheritEnv": ["HOME"]}}}`, `"inheritEnv" and "cwd" are for a "command"`},
		{`{"mcpServers": {"a": {"command": "x", "inheritEnv": "HOME"}}}`, `"inheritEnv" must be a list of strings, not a string`},
		{`{"mcpServers": {"a": {"command": "x", "inheritEnv": ["A=B"]}}}`, `InheritEnv: "…" is not a variable's name`},
		{`{"mcpServers": {"a": {"command": "x", "inheritEnv": [""]}}}`, `InheritEnv: "" is not a variable's name`},
	} {
		if _, err := parseConfig([]byte(tt.config), env); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.config, err, tt.want)
		}
	}
}

// TestConfigPolicyCheck: the rules of a configuration file are checked as
// a policy built in code is.
func TestConfigPolicyCheck(t *testing.T) {
	// The rules of a configuration file are checked the same way.
	cfg, err := Parse([]byte(`{"mcpServers": {"web": {"url": "http://x"}, "mail": {"url": "http://y"}},
		"policy": [{"deny": ["mail/*"], "tainted": ["wbe"]}, {"allow": ["*"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Policy.Check([]string{"web", "mail"}); err == nil || !strings.Contains(err.Error(), `tainted "wbe" names no configured server (did you mean "web"?)`) {
		t.Errorf("config's tainted list: %v", err)
	}
}
