package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// binary is the conduit binary under test, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "conduit-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "conduit")
	// The default store of serve and resume, a SQLite file in the state
	// directory, is this run's own.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building conduit:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binaryEnv is the environment of a run: this process's, without the race
// runtime's one-second sleep at exit.
func binaryEnv() []string {
	return append(os.Environ(), "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// runOpts configure a run.
type runOpts struct {
	dir   string
	stdin io.Reader
	env   []string
}

// conduit runs the binary with args in dir (a fresh temp dir when empty),
// with no terminal and a bounded time.
func conduit(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = o.dir
	cmd.Env = append(binaryEnv(), o.env...)
	cmd.Stdin = o.stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("conduit %v did not finish in 60s\n%s%s", args, out.String(), errb.String())
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// expect fails t unless r exited with code and its stderr holds every one
// of want.
func expect(t *testing.T, r result, code int, want ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d, got %s", code, r)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r)
		}
	}
}

// decode parses r's stdout as JSON into v.
func decode(t *testing.T, r result, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r)
	}
}

// demoServer is an mcpServers entry that runs one of the demo's servers
// through the binary itself: a real stdio MCP server without node.
func demoServer(name string) map[string]any {
	return map[string]any{"command": binary, "args": []string{"demo-server", name}}
}

// demoPolicy is the demo's policy.
var demoPolicy = []any{
	map[string]any{"deny": []string{"notes/delete_*"}, "tainted": []string{"web"}},
	map[string]any{"allow": []string{"notes/search_*", "web/*"}},
	map[string]any{"ask": []string{"notes/*"}},
}

// writeConfig writes an mcp.json with servers (in order: name, entry, ...)
// and policy into a fresh dir, and returns the dir.
func writeConfig(t *testing.T, policy []any, servers ...any) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"mcpServers": {`)
	for i := 0; i < len(servers); i += 2 {
		if i > 0 {
			b.WriteString(", ")
		}
		e, _ := json.Marshal(servers[i+1])
		fmt.Fprintf(&b, "%q: %s", servers[i], e)
	}
	b.WriteString("}")
	if policy != nil {
		p, _ := json.Marshal(policy)
		fmt.Fprintf(&b, `, "policy": %s`, p)
	}
	b.WriteString("}")
	return writeFile(t, "mcp.json", b.String())
}

// writeFile writes one file into a fresh dir and returns the dir.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// demoDir is a dir whose mcp.json has the demo's servers and policy.
func demoDir(t *testing.T) string {
	return writeConfig(t, demoPolicy, "notes", demoServer("notes"), "web", demoServer("web"))
}

// turn returns the recorded demo response of a provider.
func turn(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "internal", "demo", "turns", file))
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(data, &tf); err != nil {
		t.Fatal(err)
	}
	return tf.Response
}
