package adapters_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/testenv"
)

// TestEndToEnd drives a hub over the real server-everything and
// server-filesystem (stdio) as each provider's model would: list the
// tools, then answer a turn with many calls at once, among them an unknown
// tool, bad arguments, a call that times out and calls the policy asks
// about.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	everyCmd, everyArgs := testenv.Everything(t)
	dir := t.TempDir()
	// server-filesystem resolves symlinks: so must the paths we send.
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	fsCmd, fsArgs := testenv.Filesystem(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "readme.txt"), []byte("conduit end-to-end\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	approver := func(_ context.Context, r conduit.ApprovalRequest) conduit.Approval {
		// Writes inside the test directory are fine; moving files is not.
		if r.Call.Tool == "write_file" {
			if p, _ := r.Call.Args["path"].(string); strings.HasPrefix(p, dir+string(filepath.Separator)) {
				return conduit.Approve()
			}
		}
		return conduit.Reject("files stay where they are")
	}
	// The subtests run in parallel, after this function returns.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	hub, err := conduit.NewHub(ctx, []conduit.Server{
		{ID: "every", Command: everyCmd, Args: everyArgs},
		{ID: "fs", Command: fsCmd, Args: fsArgs},
	}, &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Ask("fs/write_file", "fs/move_file", "fs/edit_file"),
		conduit.Allow("every/*", "fs/*"),
	),
		Approver: approver})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	for _, st := range hub.Status() {
		if st.State != conduit.StateUp {
			t.Fatalf("server %s is %v: %v", st.ID, st.State, st.Err)
		}
	}

	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			listing, err := adapters.Tools(ctx, hub, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(listing.Tools) != listing.ToolSet.Len() || listing.ToolSet.Len() < 20 {
				t.Fatalf("%d tools listed of %d", len(listing.Tools), listing.ToolSet.Len())
			}
			for _, name := range []string{"every__echo", "every__get-sum", "every__trigger-long-running-operation", "fs__read_text_file", "fs__write_file"} {
				if _, ok := listing.ToolSet.Lookup(name); !ok {
					t.Errorf("%s is not listed", name)
				}
			}
			out := filepath.Join(dir, "out-"+p.String()+".txt")
			turn := []scripted{
				{id: "call_echo", name: "every__echo", args: map[string]any{"message": "hello from " + p.String()}},
				{id: "call_sum", name: "every__get-sum", args: map[string]any{"a": 2, "b": 3}},
				{id: "call_read", name: "fs__read_text_file", args: map[string]any{"path": filepath.Join(dir, "readme.txt")}},
				{id: "call_unknown", name: "every__does-not-exist", args: map[string]any{}},
				{id: "call_notobject", name: "every__get-sum", args: []any{2, 3}},
				{id: "call_invalid", name: "every__get-sum", args: map[string]any{"a": "two", "b": 3}},
				{id: "call_long", name: "every__trigger-long-running-operation", args: map[string]any{"duration": 10, "steps": 5}},
				{id: "call_write", name: "fs__write_file", args: map[string]any{"path": out, "content": "written by " + p.String()}},
				{id: "call_move", name: "fs__move_file", args: map[string]any{"source": out, "destination": out + ".moved"}},
				{id: "call_image", name: "every__get-tiny-image", args: map[string]any{}},
				{id: "call_structured", name: "every__get-structured-content", args: map[string]any{"location": "Chicago"}},
			}
			response := script(p, turn...)
			before := deepCopy(t, response)
			start := time.Now()
			exec, err := adapters.ExecuteToolCalls(ctx, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, NullPaths: listing.NullPaths, TurnOptions: adapters.TurnOptions{CallTimeout: 2 * time.Second, MaxConcurrency: 4}})
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("the turn took %v", el)
			}
			if canon(before) != canon(response) {
				t.Error("the response was modified")
			}
			if len(exec.Results) != len(turn) || exec.Halted {
				t.Fatalf("%d results, halted %v", len(exec.Results), exec.Halted)
			}
			answer := map[string]string{}
			for i, c := range turn {
				if p != adapters.Gemini || c.id != "" {
					if got := answerIDs(p, exec.Results)[i]; got != c.id {
						t.Errorf("result %d is keyed by %q, want %q", i, got, c.id)
					}
				}
				answer[c.id] = resultText(p, exec.Results[i])
			}
			expect := func(id, want string) {
				t.Helper()
				if !strings.Contains(answer[id], want) {
					t.Errorf("%s answered %q, want it to contain %q", id, answer[id], want)
				}
			}
			expect("call_echo", "Echo: hello from "+p.String())
			expect("call_sum", "The sum of 2 and 3 is 5")
			expect("call_read", "conduit end-to-end")
			expect("call_unknown", `Unknown tool "every__does-not-exist"`)
			expect("call_notobject", "the arguments must be a JSON object")
			expect("call_invalid", "Input validation error")
			expect("call_long", "timed out after 2s")
			expect("call_move", "files stay where they are")
			expect("call_structured", "temperature")
			wantKinds := map[string]error{"call_unknown": conduit.ErrUnknownTool, "call_notobject": conduit.ErrInvalidArguments,
				"call_long": conduit.ErrTimeout, "call_move": conduit.ErrDenied}
			for i, c := range turn {
				want := wantKinds[c.id]
				if got := exec.Errors[i]; (want == nil) != (got == nil) || (want != nil && !errors.Is(got, want)) {
					t.Errorf("%s: error %v, want %v", c.id, got, want)
				}
			}
			if data, err := os.ReadFile(out); err != nil || string(data) != "written by "+p.String() {
				t.Errorf("the approved write: %q, %v", data, err)
			}
			if _, err := os.Stat(out + ".moved"); err == nil {
				t.Error("the denied move happened")
			}
			// The providers' own error marks.
			img := exec.Results[9]
			switch p {
			case adapters.Anthropic:
				if exec.Results[5]["is_error"] != true || exec.Results[6]["is_error"] != true {
					t.Error("errors are not marked is_error")
				}
				var kinds []string
				for _, b := range jsonv.List(img["content"]) {
					kinds = append(kinds, jsonv.String(jsonv.Object(b)["type"]))
				}
				if strings.Join(kinds, ",") != "text,image,text" {
					t.Errorf("the tiny image answered %v", kinds)
				}
			case adapters.OpenAIChat:
				expect("call_invalid", "Error: ")
				expect("call_image", "[image: image/png, ")
			case adapters.OpenAIResponses:
				expect("call_long", "Error: ")
				items := jsonv.List(img["output"])
				if len(items) != 3 || jsonv.Object(items[1])["type"] != "input_image" ||
					!strings.HasPrefix(jsonv.String(jsonv.Object(items[1])["image_url"]), "data:image/png;base64,") {
					t.Errorf("the tiny image answered %v", canon(img["output"]))
				}
			case adapters.Gemini:
				fr := jsonv.Object(exec.Results[3]["functionResponse"])
				if _, ok := jsonv.Object(fr["response"])["error"]; !ok || fr["name"] != "every__does-not-exist" {
					t.Errorf("the unknown tool answered %v", fr)
				}
				out := jsonv.Object(jsonv.Object(jsonv.Object(exec.Results[10]["functionResponse"])["response"])["output"])
				if _, ok := out["temperature"]; !ok {
					t.Errorf("structured content is not the output object: %v", out)
				}
				expect("call_image", "[image: image/png, ")
			}
		})
	}
}
