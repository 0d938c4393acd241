package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/testenv"
)

type codeTurn struct {
	Results []map[string]any   `json:"results"`
	Taint   []string           `json:"taint"`
	Pending []adapters.Pending `json:"pending"`
}

// A deferral inside a loop of run_code, across OS processes: exec defers
// the first write of the loop into the state; resume, in another process,
// replays the read without sending it, sends the approved write once and
// defers the next; --allow-run allows the rest of the run's writes at
// once. A copy of the first state resumed again sends nothing twice.
func TestCodeModeDeferResumeAcrossProcesses(t *testing.T) {
	data, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(data, "doc.txt"), []byte("a zebra"), 0o644)
	node, args := testenv.Filesystem(t, data)
	policy := []any{
		map[string]any{"ask": []string{"fs/write_file"}},
		map[string]any{"allow": []string{"fs/read_*", "fs/list_*", "conduit/run_code"}},
	}
	dir := writeConfig(t, policy, "fs", map[string]any{"command": node, "args": args})
	env := []string{stateKey}
	code := `const r: any = await fs.read_text_file({path: ` + jsonString(data+"/doc.txt") + `});
const text = typeof r === "string" ? r : r.content;
for (let i = 0; i < 3; i++) {
  await fs.write_file({path: ` + jsonString(data) + ` + "/out" + i + ".txt", content: text + " " + i});
}
return "wrote 3";`
	p := adapters.OpenAIChat
	resp := adaptertest.FakeOf(p).Response("", toolcall.Raw{ID: "call_code", Name: "run_code", Args: jsonArgs(t, map[string]any{"code": code}, p)})
	respFile := responseFile(t, resp)
	state := filepath.Join(t.TempDir(), "conv.state")

	r := conduit(t, runOpts{dir: dir, env: env}, "exec", "--provider", p.String(), "--response", respFile, "--state", state, "--approve", "defer", "--code-mode")
	expect(t, r, 0, "1 call(s) wait for a decision", "its code calls fs__write_file", "--allow-run call_code")
	var out codeTurn
	decode(t, r, &out)
	if len(out.Pending) != 1 || out.Pending[0].Name != "run_code" || out.Pending[0].Nested == nil ||
		out.Pending[0].Nested.Name != "fs__write_file" || out.Pending[0].Nested.Before != 1 || out.Pending[0].Arguments["code"] != code {
		t.Fatalf("pending %+v", out.Pending)
	}
	if _, err := os.Stat(filepath.Join(data, "out0.txt")); !os.IsNotExist(err) {
		t.Fatal("a write was sent before its approval")
	}
	copyState := filepath.Join(t.TempDir(), "copy.state")
	sb, _ := os.ReadFile(state)
	os.WriteFile(copyState, sb, 0o600)

	// Another process: the read is replayed, out0 written, out1 waits.
	r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", state, "--allow", "call_code", "--code-mode")
	expect(t, r, 0, "1 call(s) wait for a decision")
	out = codeTurn{}
	decode(t, r, &out)
	if len(out.Pending) != 1 || out.Pending[0].Nested == nil || out.Pending[0].Nested.Before != 2 ||
		!strings.HasSuffix(out.Pending[0].Nested.Arguments["path"].(string), "out1.txt") {
		t.Fatalf("second pending %+v\n%s", out.Pending, r)
	}
	if got, _ := os.ReadFile(filepath.Join(data, "out0.txt")); string(got) != "a zebra 0" {
		t.Fatalf("out0.txt: %q", got)
	}
	if _, err := os.Stat(filepath.Join(data, "out1.txt")); !os.IsNotExist(err) {
		t.Fatal("the second write was sent without a decision")
	}

	// The rest of the run's writes in one decision.
	r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", state, "--allow-run", "call_code", "--code-mode")
	expect(t, r, 0)
	out = codeTurn{}
	decode(t, r, &out)
	all, _ := json.Marshal(out.Results)
	if len(out.Pending) != 0 || len(out.Results) != 1 || !strings.Contains(string(all), "wrote 3") || strings.Join(out.Taint, ",") != "fs" {
		t.Fatalf("final turn: %s", r)
	}
	for i, want := range []string{"a zebra 0", "a zebra 1", "a zebra 2"} {
		if got, _ := os.ReadFile(filepath.Join(data, "out"+string(rune('0'+i))+".txt")); string(got) != want {
			t.Fatalf("out%d.txt: %q", i, got)
		}
	}

	// The first state, resumed again: its decision was taken, nothing is
	// sent again.
	os.Remove(filepath.Join(data, "out0.txt"))
	r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", copyState, "--allow", "call_code", "--code-mode")
	if _, err := os.Stat(filepath.Join(data, "out0.txt")); !os.IsNotExist(err) {
		t.Fatalf("the copy's resume sent the write again:\n%s", r)
	}
	if !strings.Contains(r.stdout+r.stderr, "another resumption") {
		t.Errorf("the copy's resume does not say the call was decided elsewhere:\n%s", r)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
