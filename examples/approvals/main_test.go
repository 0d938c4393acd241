package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/testenv"
)

// fakeClaude is a loopback fake of the Anthropic Messages API: asked a
// prompt "write NAME", it writes NAME in the allowed directory with the
// filesystem server's write_file (which the policy asks about) and lists
// the allowed directories (which it allows); given the answers, it says
// how each went. It records the answers it was given.
type fakeClaude struct {
	*httptest.Server
	dir string

	mu      sync.Mutex
	answers [][]adaptertest.Answered
	texts   []string
}

func newFakeClaude(t *testing.T, dir string) *fakeClaude {
	f := &fakeClaude{dir: dir}
	fake := adaptertest.FakeOf(adapters.Anthropic)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.URL.Path != "/v1/messages" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		conv := fake.Conversation(body)
		answered := fake.Answered(conv)
		var resp map[string]any
		if len(answered) == 0 {
			name := strings.TrimPrefix(jsonv.String(jsonv.Object(conv[0])["content"]), "write ")
			resp = fake.Response("Writing it.",
				toolcall.Raw{ID: "toolu_ls", Name: "fs__list_allowed_directories", Args: map[string]any{}},
				toolcall.Raw{ID: "toolu_w", Name: "fs__write_file", Args: map[string]any{"path": filepath.Join(dir, name), "content": "hello from " + name}})
		} else {
			var outcome []string
			for _, a := range answered {
				outcome = append(outcome, fmt.Sprintf("%s:%v", a.ID, !a.Error))
			}
			data, _ := json.Marshal(conv[len(conv)-1])
			f.mu.Lock()
			f.answers = append(f.answers, answered)
			f.texts = append(f.texts, string(data))
			f.mu.Unlock()
			resp = fake.Response("done " + strings.Join(outcome, " "))
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(f.Close)
	return f
}

// instance is one process of the application.
type instance struct {
	cmd *exec.Cmd
	url string
	out *strings.Builder
}

func start(t *testing.T, bin string, args ...string) *instance {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	in := &instance{url: "http://" + addr, out: &strings.Builder{}}
	in.cmd = exec.Command(bin, append(args, "-addr", addr)...)
	in.cmd.Env = append(os.Environ(), "CONDUIT_STATE_KEY=an application key of at least 32 bytes", "ANTHROPIC_API_KEY=sk-test")
	in.cmd.Stdout, in.cmd.Stderr = in.out, in.out
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.stop(t) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(in.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("the application did not start: %v\n%s", err, in.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop stops the process as a deploy would, and waits for it (and the
// servers it started) to end.
func (in *instance) stop(t *testing.T) {
	if in.cmd.ProcessState != nil {
		return
	}
	in.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- in.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		in.cmd.Process.Kill()
		<-done
		t.Errorf("the application did not stop\n%s", in.out)
	}
}

// post sends a request and decodes the reply.
func post(t *testing.T, u, body string, wantCode int) reply {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantCode {
		t.Fatalf("POST %s: %s: %s", u, resp.Status, data)
	}
	var r reply
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("POST %s: %q: %v", u, data, err)
	}
	return r
}

// End to end, across two OS processes: the first instance runs the turn,
// defers the write the policy asks about (the listing it allows runs), and
// saves the chat; it is stopped. The second instance, started afresh on
// the same files, is given the user's approval: the write happens there,
// once, and the model is sent every answer of the turn, in order, and
// answers. A second chat, denied, writes nothing and the model reads the
// reason.
func TestApprovalAcrossProcesses(t *testing.T) {
	fsCmd, fsArgs := testenv.Filesystem(t) // skips, or fails under ./scripts/test, without node_modules
	allowed := t.TempDir()
	dir := t.TempDir()
	cfg := map[string]any{
		"mcpServers": map[string]any{"fs": map[string]any{"command": fsCmd, "args": append(fsArgs, allowed)}},
		"policy":     []any{map[string]any{"ask": []string{"fs/write_file"}}, map[string]any{"allow": []string{"fs/*"}}},
	}
	data, _ := json.Marshal(cfg)
	config := filepath.Join(dir, "mcp.json")
	os.WriteFile(config, data, 0o644)
	chats := filepath.Join(dir, "chats")
	claude := newFakeClaude(t, allowed)
	bin := testenv.BuildGo(t, "github.com/conduitmcp/conduit/examples/approvals")
	args := []string{"-config", config, "-data", chats, "-base-url", claude.URL}

	first := start(t, bin, args...)
	r := post(t, first.url+"/chat", `{"prompt": "write approved.txt"}`, http.StatusAccepted)
	if len(r.Pending) != 1 || r.Pending[0].ID != "toolu_w" || r.Pending[0].Name != "fs__write_file" || r.Pending[0].Arguments["content"] != "hello from approved.txt" {
		t.Fatalf("pending: %+v", r)
	}
	chatID := r.Chat
	if _, err := os.Stat(filepath.Join(allowed, "approved.txt")); !os.IsNotExist(err) {
		t.Fatal("written before the approval")
	}
	first.stop(t)

	second := start(t, bin, args...)
	resp, err := http.Get(second.url + "/pending?chat=" + chatID)
	if err != nil {
		t.Fatal(err)
	}
	var shown reply
	json.NewDecoder(resp.Body).Decode(&shown)
	resp.Body.Close()
	if len(shown.Pending) != 1 || shown.Pending[0].Rule != "ask fs/write_file" {
		t.Fatalf("pending shown: %+v", shown)
	}
	done := post(t, second.url+"/approve?chat="+chatID+"&call=toolu_w", "", http.StatusOK)
	if done.Answer != "done toolu_ls:true toolu_w:true" {
		t.Fatalf("answer %+v\n%s", done, second.out)
	}
	if got, err := os.ReadFile(filepath.Join(allowed, "approved.txt")); err != nil || string(got) != "hello from approved.txt" {
		t.Fatalf("the file: %q %v", got, err)
	}
	claude.mu.Lock()
	if len(claude.texts) != 1 || !strings.Contains(claude.texts[0], allowed) || !strings.Contains(claude.texts[0], "Successfully wrote") {
		t.Errorf("the model was sent %v", claude.texts)
	}
	claude.mu.Unlock()
	// Approving again decides nothing, and writes nothing.
	os.Remove(filepath.Join(allowed, "approved.txt"))
	resp, err = http.Post(second.url+"/approve?chat="+chatID+"&call=toolu_w", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("approved twice: %s", resp.Status)
	}
	if _, err := os.Stat(filepath.Join(allowed, "approved.txt")); !os.IsNotExist(err) {
		t.Error("written twice")
	}

	// Denied: nothing written, and the model reads why.
	r = post(t, second.url+"/chat", `{"prompt": "write denied.txt"}`, http.StatusAccepted)
	done = post(t, second.url+"/deny?chat="+r.Chat+"&call=toolu_w&reason="+url.QueryEscape("not in my home"), "", http.StatusOK)
	if done.Answer != "done toolu_ls:true toolu_w:false" {
		t.Fatalf("denied: %+v", done)
	}
	if _, err := os.Stat(filepath.Join(allowed, "denied.txt")); !os.IsNotExist(err) {
		t.Error("written though denied")
	}
	claude.mu.Lock()
	if last := claude.texts[len(claude.texts)-1]; !strings.Contains(last, "was denied: not in my home") {
		t.Errorf("the model was sent %s", last)
	}
	claude.mu.Unlock()
}
