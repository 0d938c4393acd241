package adapters_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/internal/tokens"
)

// TestBudgetEndToEnd reads a 3 MB file through the real server-filesystem
// over stdio, as each provider's model would: the answer, read back from
// the conversation by the provider's fake, carries at most the default
// budget of the file and then the notice, where it carried the whole 3 MB
// (about 890,000 tokens) before; the model then reads the rest with
// read_result, by lines and by pattern, without another call to the
// server.
func TestBudgetEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opticks, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		t.Skip(err)
	}
	text := strings.Repeat(string(opticks), 6) // 3.4 MB
	file := filepath.Join(dir, "opticks.txt")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	lastLine := strings.Count(text, "\n")
	fsCmd, fsArgs := testenv.Filesystem(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "fs", Command: fsCmd, Args: fsArgs}},
		&conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("fs/read_text_file", "conduit/read_result"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })

	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			f := adaptertest.FakeOf(p)
			answered := func(exec *adapters.Execution) adaptertest.Answered {
				t.Helper()
				a := f.Answered(p.Wire().Answers(exec.Results))
				if len(a) != 1 || a[0].Error {
					t.Fatalf("answers %+v (%v)", a, exec.Errors)
				}
				return a[0]
			}
			conv, err := adapters.NewConversation(ctx, hub, p, &adapters.ConversationOptions{Read: adapters.ReadOptions{On: true}})
			if err != nil {
				t.Fatal(err)
			}
			exec, err := conv.Execute(ctx, f.Response("", toolcall.Raw{ID: "call_read", Name: "fs__read_text_file", Args: map[string]any{"path": file}}))
			if err != nil {
				t.Fatal(err)
			}
			a := answered(exec)
			i := strings.LastIndex(a.Text, "[conduit: the result was cut")
			if i < 0 {
				t.Fatalf("no notice in %d bytes", len(a.Text))
			}
			kept, notice := a.Text[:i], a.Text[i:]
			b := exec.Budgets[0]
			if n := tokens.Text(kept); n > adapters.DefaultMaxResultTokens+2 || n < adapters.DefaultMaxResultTokens*9/10 || b.Tokens < 800000 || !b.Cut {
				t.Fatalf("the model reads %d tokens of the file (%d bytes), then a notice of %d; the whole is %d", n, len(kept), tokens.Text(notice), b.Tokens)
			}
			if p == adapters.Gemini && !json.Valid([]byte(strings.TrimSpace(kept))) {
				t.Fatalf("gemini: the structuredContent kept is not valid JSON")
			}
			if data, _ := json.Marshal(exec.Results); len(data) > 150<<10 {
				t.Fatalf("the answer is %d bytes", len(data))
			}
			if b.Ref == "" || !strings.Contains(notice, b.Ref) {
				t.Fatalf("notice %q, ref %q", notice, b.Ref)
			}
			t.Logf("%s: %d bytes and about %d tokens of a file of %d bytes (about %d tokens), then a notice of %d tokens",
				p, len(kept), tokens.Text(kept), len(text), b.Tokens, tokens.Text(notice))

			// The rest, without the server.
			exec, err = conv.Execute(ctx, f.Response("",
				toolcall.Raw{ID: "call_end", Name: adapters.ReadToolName, Args: map[string]any{"result": b.Ref, "line": float64(lastLine - 1)}}))
			if err != nil {
				t.Fatal(err)
			}
			if a := answered(exec); !strings.Contains(a.Text, "to the end]") || !strings.HasSuffix(strings.TrimSpace(a.Text), strings.TrimSpace(lastLines(text, 2))) {
				t.Fatalf("the end of the file: %.300q", a.Text)
			}
			exec, err = conv.Execute(ctx, f.Response("",
				toolcall.Raw{ID: "call_grep", Name: adapters.ReadToolName, Args: map[string]any{"result": b.Ref, "pattern": `(?i)\bprism`, "line": 20000.0}}))
			if err != nil {
				t.Fatal(err)
			}
			if a := answered(exec); !strings.Contains(a.Text, "lines match") || !strings.Contains(strings.ToLower(a.Text), "prism") {
				t.Fatalf("by pattern: %.300q", a.Text)
			}
		})
	}
}

// lastLines is the last n lines of text.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	return strings.Join(lines[len(lines)-n:], "\n")
}
