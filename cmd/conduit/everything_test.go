package main

import (
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// The reference server from npm, over stdio: a real third-party server with
// every content type and progress. Skipped when node_modules is missing
// (./scripts/test installs it), failed instead under CI.
func everythingDir(t *testing.T) string {
	t.Helper()
	cmd, args := testenv.Everything(t)
	return writeConfig(t, []any{map[string]any{"allow": []string{"everything/*"}}},
		"everything", map[string]any{"command": cmd, "args": args},
		"notes", demoServer("notes"))
}

func TestEverythingServersAndTools(t *testing.T) {
	dir := everythingDir(t)
	r := conduit(t, runOpts{dir: dir}, "servers")
	expect(t, r, 0)
	var out struct {
		Servers []struct {
			ID, Status string
			Tools      int
		}
	}
	decode(t, r, &out)
	if len(out.Servers) != 2 || out.Servers[0].Status != "up" || out.Servers[0].Tools < 10 {
		t.Fatalf("servers %+v", out.Servers)
	}

	r = conduit(t, runOpts{dir: dir}, "tools", "--provider", "openai-chat", "--strict", "true")
	expect(t, r, 0)
	var tools toolsOut
	decode(t, r, &tools)
	if !strings.Contains(strings.Join(names(tools.Tools), " "), "everything__echo") {
		t.Errorf("tools %v", names(tools.Tools))
	}
}

func TestEverythingCall(t *testing.T) {
	dir := everythingDir(t)
	// The servers start with each command: on a loaded machine, node and
	// a race-built demo server may take more than the default 20s.
	slow := []string{"--connect-timeout", "50s"}
	r := conduit(t, runOpts{dir: dir}, append([]string{"call", "everything__echo", `{"message": "hi"}`}, slow...)...)
	expect(t, r, 0)
	if !strings.Contains(r.stdout, "Echo: hi") {
		t.Errorf("echo: %s", r)
	}
	// Progress of a long-running call shows on stderr. A notification
	// handled after the result is dropped: the last step's goes with the
	// result, the others come a second or more before it.
	r = conduit(t, runOpts{dir: dir}, append([]string{"call", "everything__trigger-long-running-operation", `{"duration": 3, "steps": 3}`}, slow...)...)
	expect(t, r, 0, "conduit: progress 1/3", "conduit: progress 2/3")
	if !strings.Contains(r.stdout, "Long running operation completed") {
		t.Errorf("long call: %s", r)
	}
	// The policy denies what it does not allow.
	r = conduit(t, runOpts{dir: dir}, append([]string{"call", "notes__search_notes", `{"query": "x"}`}, slow...)...)
	expect(t, r, 1, "(no rule allows it)")
}
