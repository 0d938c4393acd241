//go:build temporalserver

// The example's command end to end, each command its own OS process,
// against a Temporal server run in process (temporaltest, build tag
// temporalserver; scripts/test runs it in a step of its own).
package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/testenv"
	"go.temporal.io/server/temporaltest"
)

// command is the example's command with args, against the server.
func command(t *testing.T, ts *temporaltest.TestServer, args ...string) *exec.Cmd {
	t.Helper()
	all := append([]string{"-test.run=^$", "--"}, args[0], "-temporal", ts.GetFrontendHostPort(), "-namespace", ts.GetDefaultNamespace())
	cmd := exec.Command(os.Args[0], append(all, args[1:]...)...)
	cmd.Env = append(os.Environ(), envMain+"=1", "ANTHROPIC_API_KEY=sk-test")
	return cmd
}

// output runs the command and returns what it printed.
func output(t *testing.T, ts *temporaltest.TestServer, args ...string) string {
	t.Helper()
	cmd := command(t, ts, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("temporal %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// startWorker starts a worker process; it is killed with the test.
func startWorker(t *testing.T, ts *temporaltest.TestServer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := command(t, ts, append([]string{"worker"}, args...)...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("worker log:\n%s", log.String())
		}
	})
	return cmd
}

// A worker restarted in the middle of a turn: the first worker process
// runs the turn's allowed call and leaves the write waiting for the user;
// it is killed (SIGKILL). A second worker process takes the chat over (it
// replays the workflow from its history), the user's approval reaches it,
// the write is made once, and the chat ends with the model's answer.
func TestWorkerRestartedMidTurn(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir)
	claude := newFakeClaude(t, dir)
	redis := testenv.Redis(t, nil)
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	args := []string{"-config", cfg, "-redis", redis.URL, "-base-url", claude.URL}

	first := startWorker(t, ts, args...)
	output(t, ts, "start", "-id", "chat-1", "-prompt", "write approved.txt", "-user", "alice")
	var pending []adapters.Pending
	for deadline := time.Now().Add(time.Minute); len(pending) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no call waits for the user")
		}
		time.Sleep(100 * time.Millisecond)
		if err := json.Unmarshal([]byte(output(t, ts, "pending", "-id", "chat-1")), &pending); err != nil {
			t.Fatal(err)
		}
	}
	if len(pending) != 1 || pending[0].ID != "toolu_w" || pending[0].Arguments["content"] != "hello from approved.txt" {
		t.Fatalf("pending %+v", pending)
	}
	first.Process.Kill()
	first.Wait()

	startWorker(t, ts, args...)
	output(t, ts, "approve", "-id", "chat-1", "-call", "toolu_w")
	if got := strings.TrimSpace(output(t, ts, "result", "-id", "chat-1")); got != "done toolu_ls:true toolu_w:true" {
		t.Errorf("answer %q", got)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "approved.txt")); err != nil || string(got) != "hello from approved.txt" {
		t.Errorf("the file: %q %v", got, err)
	}
	claude.mu.Lock()
	defer claude.mu.Unlock()
	if claude.requests != 2 {
		t.Errorf("the model was asked %d times, want 2", claude.requests)
	}
}
