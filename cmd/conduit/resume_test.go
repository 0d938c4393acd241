package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/testenv"
)

// stateKey is CONDUIT_STATE_KEY for the runs of these tests.
const stateKey = "CONDUIT_STATE_KEY=a-test-key-of-at-least-thirty-two-bytes"

type turnOut struct {
	Results []map[string]any `json:"results"`
	Halted  bool             `json:"halted"`
	Taint   []string         `json:"taint"`
	Pending []struct {
		ID        string         `json:"id"`
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
		Rule      string         `json:"rule"`
	} `json:"pending"`
}

// The whole round trip, for every provider, across two processes: exec
// defers the asks into the state file and prints them as pending; resume,
// in a process of its own whose configuration no longer even has the web
// server, runs the call allowed, denies the other with the reason, and
// prints the turn's complete answers in the model's order, the fetch
// answered by the first process carried over and not run again.
func TestExecDeferResumeEveryProvider(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			dir := demoDir(t)
			ids := []string{"call_f", "call_a", "call_d"}
			if p == adapters.Gemini {
				ids = []string{"", "", ""} // Gemini may send none: the pending calls are named by position
			}
			resp := adaptertest.FakeOf(p).Response("Saving the list.",
				toolcall.Raw{ID: ids[0], Name: "web__fetch", Args: map[string]any{"url": "https://example.com/recipes/pasta"}},
				toolcall.Raw{ID: ids[1], Name: "notes__add_note", Args: map[string]any{"title": "Pasta shopping", "body": "tomatoes"}},
				toolcall.Raw{ID: ids[2], Name: "notes__delete_note", Args: map[string]any{"id": "n1"}})
			if p != adapters.Gemini {
				// OpenAI's arguments are JSON strings.
				resp = adaptertest.FakeOf(p).Response("Saving the list.",
					toolcall.Raw{ID: ids[0], Name: "web__fetch", Args: jsonArgs(t, map[string]any{"url": "https://example.com/recipes/pasta"}, p)},
					toolcall.Raw{ID: ids[1], Name: "notes__add_note", Args: jsonArgs(t, map[string]any{"title": "Pasta shopping", "body": "tomatoes"}, p)},
					toolcall.Raw{ID: ids[2], Name: "notes__delete_note", Args: jsonArgs(t, map[string]any{"id": "n1"}, p)})
			}
			respFile := responseFile(t, resp)
			state := filepath.Join(t.TempDir(), "conv.state")
			env := []string{stateKey}

			r := conduit(t, runOpts{dir: dir, env: env}, "exec", "--provider", p.String(), "--response", respFile, "--state", state, "--approve", "defer")
			expect(t, r, 0, "notes__add_note needs approval", "deferred (--approve defer)", "2 call(s) wait for a decision")
			var out turnOut
			decode(t, r, &out)
			if len(out.Results) != 0 || len(out.Pending) != 2 {
				t.Fatalf("exec: %s", r)
			}
			wantIDs := []string{"call_a", "call_d"}
			if p == adapters.Gemini {
				wantIDs = []string{"#2", "#3"}
			}
			if a := out.Pending[0]; a.ID != wantIDs[0] || a.Name != "notes__add_note" || a.Arguments["title"] != "Pasta shopping" || a.Rule != "ask notes/*" {
				t.Errorf("pending %+v", a)
			}
			if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("state file: %v %v", fi, err)
			}
			if _, err := os.Stat(state + ".lock"); !os.IsNotExist(err) {
				t.Errorf("the lock is left: %v", err)
			}

			// A process of its own, without the web server (and so
			// without the policy's rules about it).
			notesOnly := writeConfig(t, notesPolicy, "notes", demoServer("notes"))
			r = conduit(t, runOpts{dir: notesOnly, env: env}, "resume", "--state", state, "--allow", wantIDs[0], "--deny", wantIDs[1], "--reason", "keep the old notes")
			expect(t, r, 0, "web__fetch", "left out")
			out = turnOut{}
			decode(t, r, &out)
			if len(out.Results) != 3 || len(out.Pending) != 0 || out.Halted {
				t.Fatalf("resume: %s", r)
			}
			answers := adaptertest.FakeOf(p).Answered(p.Wire().Answers(out.Results))
			if len(answers) != 3 || answers[0].Error || answers[1].Error || !answers[2].Error {
				t.Errorf("answers %+v", answers)
			}
			all, _ := json.Marshal(out.Results)
			for _, want := range []string{"Creamy tomato pasta", "n4", "was denied: keep the old notes"} {
				if !strings.Contains(string(all), want) {
					t.Errorf("results lack %q: %s", want, all)
				}
			}
			if strings.Join(out.Taint, ",") != "web,notes" {
				t.Errorf("taint %v", out.Taint)
			}
			// Nothing is left to decide, and nothing is sent again.
			r = conduit(t, runOpts{dir: notesOnly, env: env}, "resume", "--state", state, "--allow", wantIDs[0])
			expect(t, r, 2, "no call waiting for a decision")
			// The conversation goes on from the file.
			next := adaptertest.FakeOf(p).Response("", toolcall.Raw{ID: "call_s", Name: "notes__search_notes", Args: jsonArgs(t, map[string]any{"query": "pasta"}, p)})
			data, _ := json.Marshal(next)
			r = conduit(t, runOpts{dir: dir, env: env, stdin: strings.NewReader(string(data))}, "exec", "--provider", p.String(), "--state", state)
			expect(t, r, 0)
			out = turnOut{}
			decode(t, r, &out)
			if len(out.Results) != 1 || strings.Join(out.Taint, ",") != "web,notes" {
				t.Errorf("next turn: %s", r)
			}
		})
	}
}

// notesPolicy is the demo's policy for a configuration with only the notes
// server: a policy that names a server not configured is refused.
var notesPolicy = []any{
	map[string]any{"allow": []string{"notes/search_*"}},
	map[string]any{"ask": []string{"notes/*"}},
}

// jsonArgs are args as provider p's response carries them.
func jsonArgs(t *testing.T, args map[string]any, p adapters.Provider) any {
	if p != adapters.OpenAIChat && p != adapters.OpenAIResponses {
		return args
	}
	data, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// What the CLI refuses: a state altered or sealed with another key, a
// state with pending calls given to exec, decisions that name nothing, a
// state file in use; and its key: without CONDUIT_STATE_KEY, a key file is
// made in the configuration directory, readable by its owner only.
func TestResumeRefusals(t *testing.T) {
	dir := demoDir(t)
	home := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + home, "CONDUIT_STATE_KEY="}
	state := filepath.Join(t.TempDir(), "conv.state")
	resp := turn(t, "4-gemini.json")
	r := conduit(t, runOpts{dir: dir, env: env, stdin: strings.NewReader(string(resp))}, "exec", "--provider", "gemini", "--state", state, "--approve", "defer")
	expect(t, r, 0, "created the key of saved states")
	keyFile := filepath.Join(home, "conduit", "state.key")
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}

	// exec refuses to go on while calls wait.
	r = conduit(t, runOpts{dir: dir, env: env, stdin: strings.NewReader(string(resp))}, "exec", "--provider", "gemini", "--state", state)
	expect(t, r, 2, "calls waiting for a decision (#1)")
	// Decisions that name nothing, or both allow and deny.
	r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", state, "--allow", "call_x")
	expect(t, r, 2, `no pending call has the id "call_x" (pending: #1)`)
	r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", state, "--allow", "#1", "--deny", "#1")
	expect(t, r, 2, "both allowed and denied")
	// Another key (CONDUIT_STATE_KEY set) refuses the state, naming it.
	r = conduit(t, runOpts{dir: dir, env: append(env, stateKey)}, "resume", "--state", state, "--allow", "#1")
	expect(t, r, 2, "sealed under a key not in CONDUIT_STATE_KEY: set CONDUIT_STATE_KEY to the key that saved it")
	// A state sealed under CONDUIT_STATE_KEY, read with the key file.
	other := filepath.Join(t.TempDir(), "other.state")
	r = conduit(t, runOpts{dir: dir, env: append(env, stateKey), stdin: strings.NewReader(string(resp))}, "exec", "--provider", "gemini", "--state", other, "--approve", "defer")
	expect(t, r, 0, "")
	r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", other, "--allow", "#1")
	expect(t, r, 2, "sealed under a key not in the key file "+keyFile+" (CONDUIT_STATE_KEY is not set): set CONDUIT_STATE_KEY")
	// The state shows nothing of the calls without the key.
	data, _ := os.ReadFile(state)
	if !strings.HasPrefix(string(data), "cs2.") || strings.Contains(string(data), "delete_note") {
		t.Errorf("the state file is not encrypted: %.60q", data)
	}
	// An altered, a truncated state, and a file that is no state.
	parts := strings.Split(strings.TrimSpace(string(data)), ".")
	sealed := []byte(parts[4])
	if sealed[len(sealed)/2] == 'A' {
		sealed[len(sealed)/2] = 'B'
	} else {
		sealed[len(sealed)/2] = 'A'
	}
	parts[4] = string(sealed)
	for _, tc := range []struct{ text, want string }{
		{strings.Join(parts, "."), "the state was altered: it fails authentication under the key file " + keyFile},
		{string(data[:len(data)/2]), "the state is truncated"},
		{`{"v":1}`, "not a saved conduit state"},
	} {
		bad := filepath.Join(t.TempDir(), "bad.state")
		os.WriteFile(bad, []byte(tc.text), 0o600)
		r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", bad, "--allow", "#1")
		expect(t, r, 2, tc.want)
	}
	// No key at all: no CONDUIT_STATE_KEY, and no directory for the key file.
	r = conduit(t, runOpts{dir: dir, env: []string{"CONDUIT_STATE_KEY=", "XDG_CONFIG_HOME=", "HOME="}}, "resume", "--state", state, "--allow", "#1")
	expect(t, r, 1, "no key for saved state: set CONDUIT_STATE_KEY, or a home directory for state.key")
	// A state file in use.
	os.WriteFile(state+".lock", []byte("1\n"), 0o600)
	r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", state, "--allow", "#1")
	expect(t, r, 1, "in use by another conduit command")
	os.Remove(state + ".lock")
	// --approve defer needs a state file.
	r = conduit(t, runOpts{dir: dir, env: env, stdin: strings.NewReader(string(resp))}, "exec", "--provider", "gemini", "--approve", "defer")
	expect(t, r, 2, "--approve defer needs --state FILE")
	// A denial that halts.
	r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", state, "--deny", "#1", "--halt", "--reason", "stop")
	expect(t, r, 0, "halted")
	var out turnOut
	decode(t, r, &out)
	if !out.Halted || len(out.Results) != 1 {
		t.Errorf("halt: %s", r)
	}
}

// Two copies of one state file, resumed by two processes that share a
// Redis (--store): the call decided runs once (a move_file of the real
// server-filesystem, which a second run would fail: its source is gone),
// and the second resumption answers with the first one's recorded answer,
// sending nothing. Without the store, each copy would run it.
func TestResumeCopiesSharedStore(t *testing.T) {
	redis := testenv.Redis(t, &testenv.RedisOptions{Password: "resume-pw-0123456789"})
	// The password comes from the environment, not the command line.
	storeURL := strings.Replace(redis.URL, "resume-pw-0123456789", "${env:CONDUIT_TEST_REDIS_PW}", 1)
	if storeURL == redis.URL {
		t.Fatalf("no password in %s", redis.URL)
	}
	resumeCopies(t, []string{stateKey}, []string{"CONDUIT_TEST_REDIS_PW=resume-pw-0123456789"}, "--store", storeURL)
}

// resumeCopies defers a move_file of the real server-filesystem into a
// state file, copies the file, and resumes each copy in a process of its
// own. exec and resume run with env, resume with more env and extra flags
// too. The move must run once (a second run would fail: its source is
// gone), and the second resumption answer with the first one's answer.
func resumeCopies(t *testing.T, env, more []string, extra ...string) {
	t.Helper()
	data, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	from, to := filepath.Join(data, "draft.txt"), filepath.Join(data, "final.txt")
	if err := os.WriteFile(from, []byte("text"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, args := testenv.Filesystem(t, data)
	dir := writeConfig(t, []any{map[string]any{"ask": []string{"fs/move_file"}}}, "fs", map[string]any{"command": cmd, "args": args})
	p := adapters.Anthropic
	respFile := responseFile(t, adaptertest.FakeOf(p).Response("Moving it.",
		toolcall.Raw{ID: "call_m", Name: "fs__move_file", Args: map[string]any{"source": from, "destination": to}}))
	state := filepath.Join(t.TempDir(), "conv.state")
	r := conduit(t, runOpts{dir: dir, env: env}, "exec", "--provider", p.String(), "--response", respFile, "--state", state, "--approve", "defer")
	expect(t, r, 0, "1 call(s) wait for a decision")
	copied := filepath.Join(t.TempDir(), "copy.state")
	saved, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(copied, saved, 0o600)

	var answers []string
	for _, f := range []string{state, copied} {
		r := conduit(t, runOpts{dir: dir, env: append(slices.Clip(env), more...)}, append([]string{"resume", "--state", f, "--allow", "call_m"}, extra...)...)
		expect(t, r, 0)
		var out turnOut
		decode(t, r, &out)
		all, _ := json.Marshal(out.Results)
		answers = append(answers, string(all))
	}
	if strings.Contains(answers[0], `"is_error":true`) || !strings.Contains(answers[0], "Successfully moved") {
		t.Errorf("the first resumption: %s", answers[0])
	}
	if answers[1] != answers[0] {
		t.Errorf("the second resumption of a copy: %s, want the first one's recorded answer %s", answers[1], answers[0])
	}
	if _, err := os.Stat(to); err != nil {
		t.Errorf("the file was not moved: %v", err)
	}
}

// responseFile is a file that holds the model's response resp.
func responseFile(t *testing.T, resp any) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "response.json")
	data, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// Two copies of one state file, resumed by two processes one after the
// other with no --store: the default store, a SQLite file in the user's
// state directory, is shared by the processes of the machine, so the call
// decided runs once (a move_file of the real server-filesystem, which a
// second run would fail: its source is gone), and the second resumption
// answers with the first one's recorded answer.
func TestResumeCopiesDefaultStore(t *testing.T) {
	// A home of the test's own, as a user's: XDG_STATE_HOME unset.
	home := t.TempDir()
	resumeCopies(t, []string{stateKey, "HOME=" + home, "XDG_STATE_HOME="}, nil)
	db := filepath.Join(home, ".local", "state", "conduit", "store.db")
	if fi, err := os.Stat(db); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the default store %s: %v %v, want a file of mode 0600", db, fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(db)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the default store's directory: %v %v, want mode 0700", fi, err)
	}
}

// TestResumeSaysWhatRan: a resume that decides one of two pending calls
// says that the one ran (in "decided" and on stderr) while the other still
// waits, though "results" stays empty until the turn is complete.
func TestResumeSaysWhatRan(t *testing.T) {
	dir := demoDir(t)
	p := adapters.Anthropic
	resp := adaptertest.FakeOf(p).Response("Saving.",
		toolcall.Raw{ID: "call_a", Name: "notes__add_note", Args: map[string]any{"title": "Pasta shopping", "body": "tomatoes"}},
		toolcall.Raw{ID: "call_d", Name: "notes__delete_note", Args: map[string]any{"id": "n1"}})
	respFile := responseFile(t, resp)
	state := filepath.Join(t.TempDir(), "conv.state")
	env := []string{stateKey}
	r := conduit(t, runOpts{dir: dir, env: env}, "exec", "--provider", p.String(), "--response", respFile, "--state", state, "--approve", "defer")
	expect(t, r, 0, "notes__add_note needs approval (ask notes/*); deferred (--approve defer)\n",
		"conduit: call 1 notes__add_note: pending\n", "2 call(s) wait for a decision")
	// Each thing is said once: why a call waits when it is deferred, what
	// to do next once for all.
	for _, once := range []string{"notes__add_note needs approval", "waits for a decision", "wait for a decision", "conduit resume"} {
		if n := strings.Count(r.stderr, once); n > 1 {
			t.Errorf("%q said %d times:\n%s", once, n, r.stderr)
		}
	}

	type decided struct{ ID, Name, Outcome, Error string }
	var out struct {
		turnOut
		Decided []decided `json:"decided"`
	}
	r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", state, "--allow", "call_a")
	expect(t, r, 0, "conduit: notes__add_note (call_a): ran", "1 call(s) wait for a decision (call_d)")
	decode(t, r, &out)
	if len(out.Results) != 0 || len(out.Pending) != 1 || out.Pending[0].ID != "call_d" {
		t.Fatalf("resume: %s", r)
	}
	if len(out.Decided) != 1 || out.Decided[0] != (decided{ID: "call_a", Name: "notes__add_note", Outcome: "ran"}) {
		t.Errorf("decided %+v", out.Decided)
	}

	// The last decision completes the turn: the answer of the call that
	// ran before is among the results, and "decided" names only this one.
	out.Decided = nil
	r = conduit(t, runOpts{dir: dir, env: env}, "resume", "--state", state, "--deny", "call_d", "--reason", "keep it")
	expect(t, r, 0, "conduit: notes__delete_note (call_d): denied: ")
	decode(t, r, &out)
	if len(out.Results) != 2 || len(out.Decided) != 1 || out.Decided[0].Outcome != "denied" || !strings.Contains(out.Decided[0].Error, "keep it") {
		t.Errorf("resume: %s", r)
	}
}
