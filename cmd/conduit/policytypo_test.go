package main

// Tests of what a misspelt policy does: the program stops, nothing is sent.

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// typoDir is the careless configuration: a deny rule whose server is
// misspelt, before an allow rule that would let the call through.
func typoDir(t *testing.T, extra string) string {
	t.Helper()
	cmd, args := testenv.Everything(t)
	entry, _ := json.Marshal(map[string]any{"command": cmd, "args": args})
	return writeFile(t, "mcp.json", `{"mcpServers": {"everything": `+string(entry)+`},
  "policy": [{"deny": ["everythng/get-env"]}, {"allow": ["everything/get-*"]}]`+extra+`}`)
}

// TestPolicyTypoFailsClosed: conduit call with a misspelt deny rule exits
// with an error that says "did you mean", and the server never runs the
// call; "strictPolicy": false is the named way back to a warning.
func TestPolicyTypoFailsClosed(t *testing.T) {
	dir := typoDir(t, "")
	r := conduit(t, runOpts{dir: dir}, "call", "everything__get-env", "{}", "--connect-timeout", "50s")
	expect(t, r, 2, `pattern "everythng/get-env" names no configured server (did you mean "everything"?)`, `"strictPolicy": false`)
	if strings.Contains(r.stdout, "PATH") || r.stdout != "" {
		t.Errorf("the environment was printed:\n%s", r)
	}

	// The opt-out, by name: a warning, and the call runs (the deny rule
	// matches nothing).
	dir = typoDir(t, `, "strictPolicy": false`)
	r = conduit(t, runOpts{dir: dir}, "call", "everything__get-env", "{}", "--connect-timeout", "50s")
	expect(t, r, 0, `names no configured server (did you mean "everything"?)`)
	if !strings.Contains(r.stdout, "PATH") {
		t.Errorf("opted out, the call did not run:\n%s", r)
	}
}

// TestServePolicyTypoRefusesToStart: conduit serve with a misspelt deny
// rule exits at once with the error, and serves nothing; with
// "strictPolicy": false it serves.
func TestServePolicyTypoRefusesToStart(t *testing.T) {
	dir := typoDir(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--connect-timeout", "50s")
	cmd.Dir, cmd.Env = dir, binaryEnv()
	cmd.Stdin = strings.NewReader("") // no client: a started serve would wait on it
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("serve: %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), `did you mean "everything"?`) {
		t.Errorf("stderr:\n%s", errb.String())
	}

	dir = typoDir(t, `, "strictPolicy": false`)
	cmd = exec.CommandContext(ctx, binary, "serve", "--connect-timeout", "50s")
	cmd.Dir, cmd.Env = dir, binaryEnv()
	// The serve process writes its stderr while the test reads it.
	var logs testenv.Buffer
	cmd.Stderr = &logs
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, logs.String())
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "everything__get-env", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("opted out: %v %+v\n%s", err, res, logs.String())
	}
	if !strings.Contains(logs.String(), "names no configured server") {
		t.Errorf("no warning:\n%s", logs.String())
	}
}

// TestPolicyGlobsAndOwnToolsStayFine: a glob that names no server and
// conduit's own tools are not typos.
func TestPolicyGlobsAndOwnToolsStayFine(t *testing.T) {
	dir := writeConfig(t, []any{
		map[string]any{"deny": []string{"*/delete_*"}},
		map[string]any{"allow": []string{"conduit/search_tools", "notes/*"}},
	}, "notes", demoServer("notes"))
	r := conduit(t, runOpts{dir: dir}, "call", "notes__search_notes", `{"query": "x"}`)
	expect(t, r, 0)
	if strings.Contains(r.stderr, "names no configured server") {
		t.Errorf("warned:\n%s", r)
	}
}
