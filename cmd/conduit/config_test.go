package main

import (
	"testing"
)

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          string
	}{
		{"invalid JSON", `{"mcpServers": {`, "mcp.json: "},
		{"not an object", `[1, 2]`, `expected "{"`},
		{"unknown key", `{"mcpServers": {"a": {"command": "x"}}, "polcy": []}`, `unknown key "polcy"`},
		{"unknown server key", `{"mcpServers": {"a": {"comand": "x"}}}`, `"comand"`},
		{"no servers", `{"mcpServers": {}}`, "no servers"},
		{"bad rule", `{"mcpServers": {"a": {"command": "x"}}, "policy": [{"allow": ["a/*"], "deny": ["b"]}]}`, `exactly one of "allow", "ask" or "deny"`},
		{"bad server id", `{"mcpServers": {"a__b": {"command": "x"}}}`, "a__b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFile(t, "mcp.json", tc.content)
			for _, args := range [][]string{{"servers"}, {"tools", "--provider", "anthropic"}, {"call", "a__b"}} {
				r := conduit(t, runOpts{dir: dir}, args...)
				expect(t, r, 2, tc.want)
			}
		})
	}
}

func TestConfigMissing(t *testing.T) {
	r := conduit(t, runOpts{}, "servers")
	expect(t, r, 2, "no configuration file mcp.json", "--config FILE")
	r = conduit(t, runOpts{}, "tools", "--provider", "gemini", "--config", "/nonexistent/x.json")
	expect(t, r, 2, "no configuration file /nonexistent/x.json")
}

func TestServers(t *testing.T) {
	r := conduit(t, runOpts{dir: demoDir(t)}, "servers")
	expect(t, r, 0)
	var out struct {
		Servers []struct {
			ID, Status, Error string
			Tools             int
		}
	}
	decode(t, r, &out)
	if len(out.Servers) != 2 || out.Servers[0].ID != "notes" || out.Servers[0].Status != "up" || out.Servers[0].Tools != 3 ||
		out.Servers[1].ID != "web" || out.Servers[1].Tools != 2 {
		t.Fatalf("servers: %+v", out.Servers)
	}
}

func TestServersDown(t *testing.T) {
	// One server whose program does not exist, one that exits at once
	// without speaking MCP: both are down, with the reason.
	dir := writeConfig(t, nil,
		"notes", demoServer("notes"),
		"missing", map[string]any{"command": "/nonexistent/mcp-server"},
		"quits", map[string]any{"command": "sh", "args": []string{"-c", "echo 'cannot open database' >&2; exit 3"}})
	r := conduit(t, runOpts{dir: dir}, "servers")
	expect(t, r, 1, "2 of 3 servers down")
	var out struct {
		Servers []struct {
			ID, Status, Error string
			Tools             int
		}
	}
	decode(t, r, &out)
	if len(out.Servers) != 3 || out.Servers[0].Status != "up" {
		t.Fatalf("servers: %+v", out.Servers)
	}
	for _, s := range out.Servers[1:] {
		if s.Status != "down" || s.Error == "" || s.Tools != 0 {
			t.Errorf("server %+v", s)
		}
	}
	if !contains(out.Servers[1].Error, "no such file") || !contains(out.Servers[2].Error, "cannot open database") {
		t.Errorf("reasons: %q, %q", out.Servers[1].Error, out.Servers[2].Error)
	}

	// Other commands go on with the servers that are up, and say which
	// are not; with none up, they fail.
	r = conduit(t, runOpts{dir: dir}, "tools", "--provider", "anthropic")
	expect(t, r, 0, "server missing is down", "server quits is down")
	// --require-servers fails fast instead, naming each, as conduit serve
	// does.
	for _, cmd := range [][]string{{"tools", "--provider", "anthropic"}, {"serve"}} {
		r = conduit(t, runOpts{dir: dir}, append(cmd, "--require-servers", "--connect-timeout", "2s")...)
		expect(t, r, 1, "servers are not up within 2s", "server missing is down", "server quits is down", "--require-servers")
	}
	dir = writeConfig(t, nil, "missing", map[string]any{"command": "/nonexistent/mcp-server"})
	r = conduit(t, runOpts{dir: dir}, "tools", "--provider", "anthropic")
	expect(t, r, 1, "no server in mcp.json is up")
}
