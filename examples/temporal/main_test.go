package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/temporalconduit"
	"go.temporal.io/sdk/testsuite"
)

// envMain makes the test binary the example's command (see TestMain):
// its arguments follow "--".
const envMain = "CONDUIT_TEMPORAL_EXAMPLE_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envMain) != "" {
		for i, a := range os.Args {
			if a == "--" {
				os.Args = append([]string{"temporal"}, os.Args[i+1:]...)
				break
			}
		}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeClaude is a loopback fake of the Anthropic Messages API: asked
// "write NAME", it writes NAME in the allowed directory with the
// filesystem server's write_file (which the policy asks about) and lists
// the allowed directories (which it allows); given the answers, it says
// how each went.
type fakeClaude struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
}

func newFakeClaude(t *testing.T, dir string) *fakeClaude {
	f := &fakeClaude{}
	fake := adaptertest.FakeOf(adapters.Anthropic)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.URL.Path != "/v1/messages" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.requests++
		f.mu.Unlock()
		conv := fake.Conversation(body)
		var resp map[string]any
		if answered := fake.Answered(conv); len(answered) == 0 {
			name := strings.TrimPrefix(jsonv.String(jsonv.Object(conv[0])["content"]), "write ")
			resp = fake.Response("Writing it.",
				toolcall.Raw{ID: "toolu_ls", Name: "fs__list_allowed_directories", Args: map[string]any{}},
				toolcall.Raw{ID: "toolu_w", Name: "fs__write_file", Args: map[string]any{"path": filepath.Join(dir, name), "content": "hello from " + name}})
		} else {
			var outcome []string
			for _, a := range answered {
				outcome = append(outcome, fmt.Sprintf("%s:%v", a.ID, !a.Error))
			}
			resp = fake.Response("done " + strings.Join(outcome, " "))
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(f.Close)
	return f
}

// writeConfig writes an mcp.json with the filesystem server (a real one, from
// node_modules) for dir and a policy that asks before writing.
func writeConfig(t *testing.T, dir string) string {
	t.Helper()
	fsCmd, fsArgs := testenv.Filesystem(t) // skips, or fails under ./scripts/test, without node_modules
	data, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"fs": map[string]any{"command": fsCmd, "args": append(fsArgs, dir)}},
		"policy":     []any{map[string]any{"ask": []string{"fs/write_file"}}, map[string]any{"allow": []string{"fs/*"}}},
	})
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The user approves the write three days later, in the test suite's
// skipped time: the agent's workflow waits on its update that long, with
// the call that the policy allows answered and the write shown as
// pending; approved, the write is made, and the model, given every answer
// in order, answers.
func TestApprovalThreeDaysLater(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Load(writeConfig(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	hub, err := conduit.NewHub(context.Background(), cfg.Servers, &conduit.Options{Policy: cfg.Policy,
		Approver: conduit.DeferAll("waiting for the user's approval")})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	claude := newFakeClaude(t, dir)

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	if err := register(env, hub, &Model{BaseURL: claude.URL, Model: "claude-test", Key: "sk-test", HTTP: claude.Client()}, nil); err != nil {
		t.Fatal(err)
	}
	var pending []adapters.Pending
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(temporalconduit.QueryPending)
		if err != nil || v.Get(&pending) != nil {
			t.Errorf("query: %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "approved.txt")); !os.IsNotExist(err) {
			t.Error("written before the approval")
		}
		env.UpdateWorkflow(temporalconduit.UpdateDecide, "approve", &testsuite.TestUpdateCallback{
			OnReject: func(err error) { t.Errorf("the approval was rejected: %v", err) },
		}, map[string]adapters.Ruling{"toolu_w": {Allow: true}})
	}, 72*time.Hour)
	start := env.Now()
	env.ExecuteWorkflow(agentWorkflow, AgentInput{Prompt: "write approved.txt", Principal: "alice"})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var answer string
	if err := env.GetWorkflowResult(&answer); err != nil {
		t.Fatal(err)
	}
	if answer != "done toolu_ls:true toolu_w:true" {
		t.Errorf("answer %q", answer)
	}
	if len(pending) != 1 || pending[0].ID != "toolu_w" || pending[0].Rule != "ask fs/write_file" {
		t.Errorf("pending %+v", pending)
	}
	if got := env.Now().Sub(start); got < 72*time.Hour {
		t.Errorf("the chat took %v of workflow time", got)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "approved.txt")); err != nil || string(got) != "hello from approved.txt" {
		t.Errorf("the file: %q %v", got, err)
	}
}
