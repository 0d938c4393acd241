// Tests of code mode through every provider, over a real MCP server.
package adapters_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/testenv"
)

// codeHub is a hub over the real server-filesystem serving dir, where
// writes are asked about and the approver refuses them.
func codeHub(t *testing.T, policy *conduit.Policy) (*conduit.Hub, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"a zebra", "a lion", "two zebras"} {
		if err := os.WriteFile(filepath.Join(dir, "doc"+string(rune('0'+i))+".txt"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd, args := testenv.Filesystem(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "fs", Command: cmd, Args: args}}, &conduit.Options{Policy: policy,
		Approver: func(context.Context, conduit.ApprovalRequest) conduit.Approval { return conduit.Reject("no writes") }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	return hub, dir
}

// The code a model writes: count the files that mention a zebra, then
// try to write the count down (refused).
func zebraCode(dir string) string {
	return `const names = ["doc0.txt", "doc1.txt", "doc2.txt"];
let n = 0;
for (const name of names) {
  const r: any = await fs.read_text_file({path: ` + jsString(dir) + ` + "/" + name});
  const text = typeof r === "string" ? r : r.content;
  if (text.includes("zebra")) n++;
}
let write = "sent";
try { await fs.write_file({path: ` + jsString(dir) + ` + "/count.txt", content: String(n)}); } catch (e) { write = "refused: " + e.message; }
console.log("zebras", n);
return {zebras: n, write};`
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestCodeModeRoundTripEveryProvider(t *testing.T) {
	hub, dir := codeHub(t, conduit.NewPolicy(conduit.Ask("fs/write_file"), conduit.Allow("fs/*", "conduit/run_code")))
	ctx := context.Background()
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			conv, err := adapters.NewConversation(ctx, hub, p, &adapters.ConversationOptions{Listing: adapters.ListingOptions{CodeMode: adapters.CodeModeOptions{On: true}}})
			if err != nil {
				t.Fatal(err)
			}
			l := conv.Listing()
			if l.ToolSet.Len() != 1 || len(l.Tools) != 1 {
				t.Fatalf("%d tools offered, want run_code alone", l.ToolSet.Len())
			}
			def, ok := l.ToolSet.Lookup("run_code")
			if !ok || !strings.Contains(def.Description, "declare const fs") || !strings.Contains(def.Description, "read_text_file(args: {") {
				t.Fatalf("run_code declares %v", def)
			}
			exec, err := conv.Execute(ctx, script(p, scripted{id: "call_code", name: "run_code", args: map[string]any{"code": zebraCode(dir)}}))
			if err != nil {
				t.Fatal(err)
			}
			if exec.Errors[0] != nil || len(exec.Results) != 1 {
				t.Fatalf("run_code failed: %v", exec.Errors[0])
			}
			b, _ := json.Marshal(exec.Results[0])
			answer := string(b)
			for _, want := range []string{`call_code`, `zebras\":2`, `refused: `, `zebras 2`} {
				if !strings.Contains(answer, want) {
					t.Errorf("the answer lacks %s: %s", want, answer)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "count.txt")); !os.IsNotExist(err) {
				t.Fatal("the refused write was sent")
			}
			if taint := conv.Taint(); len(taint) != 1 || taint[0] != "fs" {
				t.Fatalf("taint after the run %v, want [fs]", taint)
			}
		})
	}
}

func TestCodeModeStateless(t *testing.T) {
	hub, dir := codeHub(t, conduit.NewPolicy(conduit.Ask("fs/write_file"), conduit.Allow("fs/*", "conduit/run_code")))
	ctx := context.Background()
	p := adapters.Anthropic
	code := adapters.CodeModeOptions{On: true, Direct: true}
	l, err := adapters.Tools(ctx, hub, p, &adapters.ToolsOptions{Listing: adapters.ListingOptions{CodeMode: code}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.ToolSet.Lookup("fs__read_text_file"); !ok {
		t.Fatal("Direct did not offer the tools beside run_code")
	}
	exec, err := adapters.ExecuteToolCalls(ctx, hub, p, script(p, scripted{id: "c1", name: "run_code", args: map[string]any{"code": zebraCode(dir)}}),
		&adapters.ExecOptions{ToolSet: l.ToolSet, CodeMode: code})
	if err != nil || exec.Errors[0] != nil {
		t.Fatal(err, exec.Errors)
	}
	if got := exec.Taint(nil); len(got) != 1 || got[0] != "fs" {
		t.Fatalf("taint %v", got)
	}
	b, _ := json.Marshal(exec.Results[0])
	if !strings.Contains(string(b), `zebras\":2`) {
		t.Fatalf("answer %s", b)
	}
}

// A careless configuration: code mode asked for under a policy that does
// not allow run_code itself is refused, not offered ungoverned.
func TestCodeModeNeedsThePolicy(t *testing.T) {
	hub, _ := codeHub(t, conduit.NewPolicy(conduit.Allow("fs/*")))
	_, err := adapters.NewConversation(context.Background(), hub, adapters.OpenAIChat, &adapters.ConversationOptions{Listing: adapters.ListingOptions{CodeMode: adapters.CodeModeOptions{On: true}}})
	if err == nil || !strings.Contains(err.Error(), "conduit/run_code") {
		t.Fatalf("error %v", err)
	}
}
