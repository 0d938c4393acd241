package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
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

// tsPrincipalSaw is what testdata/tsclient/principal.mjs prints.
type tsPrincipalSaw struct {
	Protocol   string
	GH, Kid    []string
	Note       string
	Resources  []string
	Other      string
	OtherError string
}

// TestTypeScriptClientsTwoPrincipals: two official TypeScript SDK
// clients, alice's and bob's, through conduit serve at once, in front of
// an HTTP and a stdio server of identity principal that answer with the
// identity they see: each of the 80 calls reaches the servers with its
// own principal's credentials, each lists only its own note, and bob's
// reading of alice's note fails where alice's own, from a new client,
// succeeds.
func TestTypeScriptClientsTwoPrincipals(t *testing.T) {
	node := testenv.Node(t)
	testenv.Package(t, testenv.TypeScriptSDKPkg)
	g := newGateway(t, identityServers(t), &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	h, err := g.Handler(&gateway.HTTPOptions{Tokens: map[string]string{aliceToken: "alice", bobToken: "bob"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	script := filepath.Join(testenv.RepoRoot(), "gateway", "testdata", "tsclient", "principal.mjs")
	run := func(token, other string) (tsPrincipalSaw, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script, srv.URL)
		cmd.Env = append(os.Environ(), "CONDUIT_TOKEN="+token, "OTHER_URI="+other)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 10 * time.Second
		var saw tsPrincipalSaw
		if err := cmd.Run(); err != nil {
			return saw, fmt.Errorf("the TypeScript client failed: %v\nstderr:\n%s", err, stderr.String())
		}
		if err := json.Unmarshal(stdout.Bytes(), &saw); err != nil {
			return saw, fmt.Errorf("the TypeScript client printed %q: %v", stdout.String(), err)
		}
		return saw, nil
	}
	both := func(aliceOther, bobOther string) (alice, bob tsPrincipalSaw) {
		var wg sync.WaitGroup
		var aerr, berr error
		wg.Go(func() { alice, aerr = run(aliceToken, aliceOther) })
		wg.Go(func() { bob, berr = run(bobToken, bobOther) })
		wg.Wait()
		if aerr != nil || berr != nil {
			t.Fatal(errors.Join(aerr, berr))
		}
		return alice, bob
	}

	alice, bob := both("", "")
	for who, saw := range map[string]tsPrincipalSaw{"alice": alice, "bob": bob} {
		if len(saw.GH) != 20 || len(saw.Kid) != 20 {
			t.Errorf("%s: %d and %d answers of 20 each", who, len(saw.GH), len(saw.Kid))
		}
		for _, got := range saw.GH {
			if got != who {
				t.Errorf("%s's gh__whoami answered %q", who, got)
			}
		}
		for _, got := range saw.Kid {
			if got != "kid-"+who {
				t.Errorf("%s's kid__whoami answered %q", who, got)
			}
		}
		if want := "note://" + who + "/1"; saw.Note != want || !slices.Equal(saw.Resources, []string{want}) {
			t.Errorf("%s: note %q, resources %v; want only %s", who, saw.Note, saw.Resources, want)
		}
	}
	t.Logf("protocol %s", alice.Protocol)

	alice, bob = both(alice.Note, alice.Note)
	if !strings.Contains(alice.Other, aliceToken+" secret") {
		t.Errorf("alice reading her own note from a new client: %q, %q", alice.Other, alice.OtherError)
	}
	t.Logf("bob reading alice's note: %s", bob.OtherError)
	if bob.Other != "" || bob.OtherError == "" || strings.Contains(bob.OtherError, "secret") {
		t.Errorf("bob reading alice's note: %q, error %q; want an error", bob.Other, bob.OtherError)
	}
}
