package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// tsClientSaw is what testdata/tsclient/client.mjs prints.
type tsClientSaw struct {
	Server          struct{ Name, Version string }
	Tools           []string
	ToolsAfterTaint []string
	Echo, Sum, Long string
	Denied          struct {
		Error   string
		IsError bool
		Text    string
	}
	ListChanged  int
	Elicitations []string
	Progress     []float64
}

const tsToken = "ts-client-token-0123456789"

// TestTypeScriptClient puts the official TypeScript SDK's client in front
// of conduit serve, over stdio and over Streamable HTTP, with
// server-everything behind it: it lists, calls an allowed tool, is refused
// a denied one, answers the elicitation of an ask rule, and receives
// list_changed and progress (see the script for each step).
func TestTypeScriptClient(t *testing.T) {
	node := testenv.Node(t)
	command, args := testenv.Everything(t)
	testenv.Package(t, testenv.TypeScriptSDKPkg)
	bin, err := conduitBin()
	if err != nil {
		t.Fatal(err)
	}
	argsJSON, _ := json.Marshal(args)
	config := fmt.Sprintf(`{
		"mcpServers": {"everything": {"command": %q, "args": %s}},
		"policy": [
			{"deny": ["everything/get-env"]},
			{"ask": ["everything/get-sum"]},
			{"deny": ["everything/get-tiny-image"], "tainted": ["everything"]},
			{"allow": ["everything/*"]}
		],
		"serve": {"tokens": [{"principal": "ts", "env": "CONDUIT_TEST_TOKEN"}]}
	}`, command, argsJSON)
	script := filepath.Join(testenv.RepoRoot(), "gateway", "testdata", "tsclient", "client.mjs")
	run := func(t *testing.T, env []string, args ...string) tsClientSaw {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Run(); err != nil {
			t.Fatalf("the TypeScript client failed: %v\nstderr:\n%s", err, stderr.String())
		}
		var saw tsClientSaw
		if err := json.Unmarshal(stdout.Bytes(), &saw); err != nil {
			t.Fatalf("the TypeScript client printed %q: %v", stdout.String(), err)
		}
		return saw
	}
	check := func(t *testing.T, saw tsClientSaw) {
		if saw.Server.Name != "conduit" {
			t.Errorf("server = %+v", saw.Server)
		}
		if !slices.Contains(saw.Tools, "everything__echo") || slices.Contains(saw.Tools, "everything__get-env") {
			t.Errorf("tools = %v", saw.Tools)
		}
		if slices.Contains(saw.ToolsAfterTaint, "everything__get-tiny-image") || saw.ListChanged == 0 {
			t.Errorf("after the taint: tools %v, %d list_changed", saw.ToolsAfterTaint, saw.ListChanged)
		}
		if saw.Echo != "Echo: hello" || !strings.Contains(saw.Sum, "3") || !strings.Contains(saw.Long, "completed") {
			t.Errorf("results: echo %q, sum %q, long %q", saw.Echo, saw.Sum, saw.Long)
		}
		if saw.Denied.Error == "" && !saw.Denied.IsError {
			t.Errorf("denied = %+v", saw.Denied)
		}
		if len(saw.Elicitations) != 1 || !strings.Contains(saw.Elicitations[0], `{"a":1,"b":2}`) {
			t.Errorf("elicitations = %q, want one naming the arguments", saw.Elicitations)
		}
		if len(saw.Progress) < 3 || !slices.IsSorted(saw.Progress) {
			t.Errorf("progress = %v", saw.Progress)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "mcp.json")
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		saw := run(t, nil, "stdio", bin, "serve", "--config", path)
		t.Logf("saw %+v", saw)
		check(t, saw)
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		url := serveHTTP(t, config, []string{"CONDUIT_TEST_TOKEN=" + tsToken})
		check(t, run(t, []string{"CONDUIT_TOKEN=" + tsToken}, "http", url))
	})
}
