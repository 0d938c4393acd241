package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/internal/tokens"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// budgetDir is a dir whose mcp.json offers the real server-filesystem
// over a file of about 250,000 tokens, as "fs", and again as "small"
// with a budget of its own; and the file's path.
func budgetDir(t *testing.T) (dir, file string) {
	t.Helper()
	cmd, args, file := budgetFile(t)
	return writeConfig(t, []any{map[string]any{"allow": []string{"fs/read_text_file", "small/read_text_file"}}},
		"fs", map[string]any{"command": cmd, "args": args},
		"small", map[string]any{"command": cmd, "args": args, "maxResultTokens": 300}), file
}

// budgetFile is a file of about 250,000 tokens, and the command of the
// real server-filesystem over its directory.
func budgetFile(t *testing.T) (cmd string, args []string, file string) {
	t.Helper()
	data, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(data, "log.txt")
	var b strings.Builder
	for i := range 20000 {
		b.WriteString("request " + strings.Repeat("x", i%7) + " served in 3 ms, all well\n")
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, args = testenv.Filesystem(t, data)
	return cmd, args, file
}

// TestCallBudget: conduit call cuts a result to --max-result-tokens
// (25,000 by default) and says so on stderr; 0 and --raw print it whole;
// a server's own maxResultTokens takes the flag's place.
func TestCallBudget(t *testing.T) {
	dir, file := budgetDir(t)
	args, _ := json.Marshal(map[string]any{"path": file})
	whole, _ := os.ReadFile(file)
	slow := []string{"--connect-timeout", "50s"}
	text := func(r result) (string, string) {
		var out callOut
		decode(t, r, &out)
		last := out.Content[len(out.Content)-1].Text
		if len(out.Content) == 1 {
			return last, ""
		}
		return out.Content[0].Text, last
	}
	for _, c := range []struct {
		name   string
		args   []string
		budget int // 0: whole
	}{
		{"default", []string{"fs__read_text_file"}, 25000},
		{"flag", []string{"fs__read_text_file", "--max-result-tokens", "1000"}, 1000},
		{"off", []string{"fs__read_text_file", "--max-result-tokens", "0"}, 0},
		{"raw", []string{"fs__read_text_file", "--raw"}, 0},
		{"server", []string{"small__read_text_file", "--max-result-tokens", "1000"}, 300},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := conduit(t, runOpts{dir: dir}, append(append([]string{"call"}, c.args[0], string(args)), append(c.args[1:], slow...)...)...)
			expect(t, r, 0)
			kept, notice := text(r)
			if c.budget == 0 {
				if kept != string(whole) || notice != "" || strings.Contains(r.stderr, "cut") {
					t.Fatalf("not whole: %d bytes, notice %q", len(kept), notice)
				}
				return
			}
			if n := tokens.Text(kept); n > c.budget || n < c.budget*8/10 || !strings.Contains(notice, "cut to fit its budget") ||
				!strings.Contains(r.stderr, "conduit: the result was cut to its budget") {
				t.Fatalf("%d tokens kept, notice %q\n%s", n, notice, r.stderr)
			}
		})
	}
}

// TestExecBudget: exec cuts each result to --max-result-tokens and the
// response's results together to --max-turn-tokens, and names the calls
// cut on stderr.
func TestExecBudget(t *testing.T) {
	dir, file := budgetDir(t)
	resp := responseFile(t, map[string]any{"role": "assistant", "stop_reason": "tool_use", "content": []any{
		map[string]any{"type": "tool_use", "id": "toolu_1", "name": "fs__read_text_file", "input": map[string]any{"path": file}},
		map[string]any{"type": "tool_use", "id": "toolu_2", "name": "fs__read_text_file", "input": map[string]any{"path": file}},
	}})
	r := conduit(t, runOpts{dir: dir}, "exec", "--provider", "anthropic", "--response", resp, "--connect-timeout", "50s",
		"--max-result-tokens", "3000", "--max-turn-tokens", "4000")
	expect(t, r, 0, "conduit: call 1 fs__read_text_file: ok (cut to ", "conduit: call 2 fs__read_text_file: ok (cut to ")
	var out execOut
	decode(t, r, &out)
	total := 0
	for _, res := range out.Results {
		content := res["content"].([]any)
		kept := content[0].(map[string]any)["text"].(string)
		notice := content[len(content)-1].(map[string]any)["text"].(string)
		if !strings.Contains(notice, "budget of 2000 tokens") {
			t.Errorf("notice %q: each result's share of the turn is 2000", notice)
		}
		total += tokens.Text(kept)
	}
	if total > 4000 || total < 3500 {
		t.Errorf("%d tokens in the turn", total)
	}
}

// TestExecDeferResumeBudget: exec --state --approve defer and resume, each
// a process of its own, apply the budget flags to one turn: the read exec
// answered and the one resume ran share the turn's budget as the turn
// answered at once would (each 1,500 of 4,500 tokens, the deferred call
// having held its share), and resume names the call it cut.
func TestExecDeferResumeBudget(t *testing.T) {
	cmd, args, file := budgetFile(t)
	dir := writeConfig(t, []any{map[string]any{"ask": []string{"asked/read_text_file"}}, map[string]any{"allow": []string{"fs/read_text_file"}}},
		"fs", map[string]any{"command": cmd, "args": args},
		"asked", map[string]any{"command": cmd, "args": args})
	read := func(id, name string) map[string]any {
		return map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{"path": file}}
	}
	resp := responseFile(t, map[string]any{"role": "assistant", "stop_reason": "tool_use", "content": []any{
		read("toolu_1", "fs__read_text_file"), read("toolu_2", "asked__read_text_file"), read("toolu_3", "fs__read_text_file")}})
	state := filepath.Join(t.TempDir(), "conv.state")
	env := []string{stateKey}
	budget := []string{"--connect-timeout", "50s", "--max-result-tokens", "3000", "--max-turn-tokens", "4500"}

	r := conduit(t, runOpts{dir: dir, env: env}, append([]string{"exec", "--provider", "anthropic", "--response", resp,
		"--state", state, "--approve", "defer"}, budget...)...)
	expect(t, r, 0, "conduit: call 1 fs__read_text_file: ok (cut to ", "1 call(s) wait for a decision")
	var paused turnOut
	decode(t, r, &paused)
	if len(paused.Pending) != 1 || paused.Pending[0].ID != "toolu_2" {
		t.Fatalf("exec: %s", r)
	}
	r = conduit(t, runOpts{dir: dir, env: env}, append([]string{"resume", "--state", state, "--allow", "toolu_2"}, budget...)...)
	expect(t, r, 0, "conduit: call 2: ok (cut to ")
	var out turnOut
	decode(t, r, &out)
	if len(out.Results) != 3 {
		t.Fatalf("resume: %s", r)
	}
	total := 0
	for i, res := range out.Results {
		content := res["content"].([]any)
		kept := content[0].(map[string]any)["text"].(string)
		notice := content[len(content)-1].(map[string]any)["text"].(string)
		if !strings.Contains(notice, "budget of 1500 tokens") {
			t.Errorf("result %d's notice %q: each result's share of the turn is 1500", i+1, notice)
		}
		total += tokens.Text(kept)
	}
	if total > 4500 || total < 4000 {
		t.Errorf("%d tokens in the turn", total)
	}
}

// TestServeBudget: conduit serve passes results whole by default, cuts
// them to --max-result-tokens when asked, and applies a server's own
// maxResultTokens either way.
func TestServeBudget(t *testing.T) {
	dir, file := budgetDir(t)
	whole, _ := os.ReadFile(file)
	for _, c := range []struct {
		name      string
		args      []string
		fs, small int // 0: whole
	}{
		{"default", nil, 0, 300},
		{"flag", []string{"--max-result-tokens", "2000"}, 2000, 300},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, append([]string{"serve", "--connect-timeout", "50s"}, c.args...)...)
			cmd.Dir, cmd.Env = dir, binaryEnv()
			var errb strings.Builder
			cmd.Stderr = &errb
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			sess, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, errb.String())
			}
			defer sess.Close()
			for name, budget := range map[string]int{"fs__read_text_file": c.fs, "small__read_text_file": c.small} {
				res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"path": file}})
				if err != nil || res.IsError {
					t.Fatalf("%s: %v %+v\n%s", name, err, res, errb.String())
				}
				kept := res.Content[0].(*mcp.TextContent).Text
				if budget == 0 {
					if kept != string(whole) || len(res.Content) != 1 {
						t.Errorf("%s: cut without a budget (%d bytes)", name, len(kept))
					}
					continue
				}
				notice := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
				if n := tokens.Text(kept); n > budget || n < budget*8/10 || !strings.Contains(notice, fmt.Sprintf("budget of %d tokens", budget)) {
					t.Errorf("%s: %d tokens kept, notice %q", name, n, notice)
				}
			}
		})
	}
}
