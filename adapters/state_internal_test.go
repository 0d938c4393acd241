package adapters

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

var internalKey = []byte("0123456789abcdef0123456789abcdef-internal")

// v1Document is a state of version 1 as this release writes it: every
// later release of the same version must read it (see the saved state's
// versions in the package doc).
const v1Document = `{"v":1,"id":"CONV7XQ","provider":"anthropic","principal":"ada","list_taint":["web"],"taint":["web","lab"],
"tools":[{"server":"lab","tool":"echo","exposed":"lab__echo","digest":"sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"},
{"server":"lab","tool":"text","exposed":"lab__text","digest":"sha256:fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"}],
"revealed":["lab__text"],"null_paths":{"lab__echo":[["tags","[]","note"]]},"turns":3,
"turn":{"n":3,"taint":["web"],"halted":false,"calls":[
{"id":"c1","name":"lab__text","server":"lab","tool":"text","answer":{"type":"tool_result","tool_use_id":"c1","content":"plain text"},"reached":true},
{"id":"c2","name":"lab__echo","server":"lab","tool":"echo","pending":{"id":"c2","arguments":{"message":"hi"},
 "digest":"sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae","rule":"ask lab/echo","reason":"waiting",
 "input":{"requests":{"who":{"method":"elicitation/create","params":{"message":"who?","requestedSchema":{"type":"object"}}}},"request_state":"s1"},"round":1}},
{"id":"c3","name":"lab__nope","answer":{"type":"tool_result","tool_use_id":"c3","content":"Unknown tool","is_error":true},"err":{"kind":"unknown_tool","message":"Unknown tool"}}]}}`

// v1WithBudget is v1Document as a release with the result budget writes
// it: an answer carries what the budget did to it ("budget"), which a
// document without it reads as nothing done.
var v1WithBudget = strings.Replace(v1Document, `"content":"plain text"},"reached":true}`,
	`"content":"plain text"},"reached":true,"budget":{"budget":1000,"tokens":5210,"kept":998,"cut":true,"ref":"R-ABCD2345","demand":1000}}`, 1)

// TestStateVersionOne: a document of version 1 is read, every field of
// it; one of another version, or with a field this release does not know,
// is refused even when authentic.
func TestStateVersionOne(t *testing.T) {
	st, err := decodeState([]byte(v1Document))
	if err != nil {
		t.Fatal(err)
	}
	if st.Principal != "ada" || len(st.Tools) != 2 || st.Revealed[0] != "lab__text" || st.NullPaths["lab__echo"][0][1] != "[]" || st.Turns != 3 {
		t.Errorf("state %+v", st)
	}
	turn := pausedTurnOf(st.Turn)
	p := turn.calls[1].pending
	if p == nil || p.ID != "c2" || p.Arguments["message"] != "hi" || p.round != 1 || p.Input.RequestState != "s1" || p.Input.Requests["who"] == nil {
		t.Fatalf("pending %+v", p)
	}
	if !errors.Is(turn.calls[1].err, conduit.ErrDeferred) || turn.calls[2].err.Error() == "" || !turn.calls[0].reached {
		t.Errorf("calls %+v", turn.calls)
	}
	if turn.calls[0].budget != (toolcall.Budgeted{}) || turn.document().Calls[0].Budget != nil {
		t.Errorf("a document without the budget: %+v", turn.calls[0].budget)
	}
	withBudget, err := decodeState([]byte(v1WithBudget))
	if err != nil {
		t.Fatal(err)
	}
	if c := pausedTurnOf(withBudget.Turn).calls[0]; c.budget != (toolcall.Budgeted{Budget: 1000, Tokens: 5210, Kept: 998, Cut: true, Ref: "R-ABCD2345"}) || c.demand != 1000 {
		t.Errorf("the budget read: %+v, demand %d", c.budget, c.demand)
	}
	// What it reads it writes back the same.
	for _, st := range []*stateV1{st, withBudget} {
		again, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		st2, err := decodeState(again)
		if err != nil {
			t.Fatal(err)
		}
		if again2, _ := json.Marshal(st2); string(again2) != string(again) {
			t.Errorf("written back:\n%s\n%s", again, again2)
		}
	}

	sc, err := (&StateOptions{Keys: [][]byte{internalKey}}).config(nil)
	if err != nil {
		t.Fatal(err)
	}
	seal := func(doc string) []byte { return []byte(sc.sealer.Seal([]byte(doc), time.Now().Add(time.Hour))) }
	for _, doc := range []string{v1Document, v1WithBudget} {
		if _, err := openState(sc, seal(doc)); err != nil {
			t.Errorf("sealed v1: %v", err)
		}
	}
	for name, doc := range map[string]string{
		"version 2":     strings.Replace(v1Document, `"v":1`, `"v":2`, 1),
		"version 0":     strings.Replace(v1Document, `"v":1,`, ``, 1),
		"unknown field": strings.Replace(v1Document, `"turns":3`, `"turns":3,"budget":{}`, 1),
		"two documents": v1Document + v1Document,
		"bad digest":    strings.Replace(v1Document, `sha256:2c26`, `sha256:XX26`, 1),
		"turn n":        strings.Replace(v1Document, `"n":3`, `"n":4`, 1),
		"unknown kind":  strings.Replace(v1Document, `"kind":"unknown_tool"`, `"kind":"nope"`, 1),
		"no pending":    strings.Replace(v1Document, `"pending":{`, `"pendingx":{`, 1),
		"negative kept": strings.Replace(v1WithBudget, `"kept":998`, `"kept":-1`, 1),
		"pending with a budget": strings.Replace(v1Document, `"pending":{"id":"c2"`,
			`"budget":{"kept":10},"pending":{"id":"c2"`, 1),
	} {
		if _, err := openState(sc, seal(doc)); !errors.Is(err, ErrInvalidState) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := openState(sc, seal(strings.Replace(v1Document, `"v":1`, `"v":2`, 1))); err == nil || !strings.Contains(err.Error(), "version 2; this release reads version 1") {
		t.Errorf("the version's message: %v", err)
	}
}

// FuzzOpenState: sealed state is outside input: whatever it holds,
// ResumeConversation's reading of it returns an error that says why or a
// state, never panics, and never accepts what the keys did not seal. The
// seeds are a state of version 2 and one of version 1 (0.3's).
func FuzzOpenState(f *testing.F) {
	v1, err := os.ReadFile("testdata/state/v1-0.3.state")
	if err != nil {
		f.Fatal(err)
	}
	v1Key, err := os.ReadFile("testdata/state/v1-0.3.key")
	if err != nil {
		f.Fatal(err)
	}
	sc, err := (&StateOptions{Keys: [][]byte{internalKey, bytes.TrimSpace(v1Key)}}).config(nil)
	if err != nil {
		f.Fatal(err)
	}
	// A constant (the nonce is random, and the fuzzer's workers are other
	// processes): {"v":1,"id":"x","provider":"gemini","tools":[],"turns":0}
	// sealed in version 2 under internalKey.
	const v2 = "cs2.ca653d7f5fd2.0.85.rvMHq6wERkM-azVpiCXc7yVCCoWZjbFwItEDU0AqROGx9j51sfqSt3fSrf8mPR97CAH1_KUV7AZkqSsfdBkMPrT_J2l63IH43-hTNybEcA8nRSeqSw"
	if _, err := openState(sc, []byte(v2)); err != nil {
		f.Fatalf("the seed of version 2: %v", err)
	}
	good := map[string]bool{v2: true, string(bytes.TrimSpace(v1)): true}
	for g := range good {
		f.Add([]byte(g))
		f.Add([]byte(g[:len(g)-1]))
	}
	f.Add([]byte("cs2.x.0.28.AAAA"))
	f.Add([]byte("cs1.x.0.e30.AAAA"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := openState(sc, data)
		if err != nil {
			if !errors.Is(err, ErrInvalidState) && !errors.Is(err, ErrStateExpired) {
				t.Fatalf("error %v matches neither ErrInvalidState nor ErrStateExpired", err)
			}
			return
		}
		if !good[string(data)] {
			// Only what the keys sealed opens: here, the seeds.
			t.Fatalf("opened %q as %+v", data, st)
		}
	})
}

// FuzzDecodeState: the document of an authentic state is checked as
// outside input is; what decodes is consistent enough to resume (its
// turn restores without panicking) and writes back to what decodes the
// same.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(v1Document))
	f.Add([]byte(v1WithBudget))
	f.Add([]byte(`{"v":1,"id":"x","provider":"gemini","tools":[],"turns":0}`))
	f.Add([]byte(`{"v":1,"id":"x","provider":"gemini","tools":[],"turns":1,"turn":{"n":1,"calls":[{"name":"a","server":"s","tool":"t","pending":{"id":"#1","arguments":null}}]}}`))
	f.Add([]byte(`{"v":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeState(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidState) {
				t.Fatalf("error %v does not match ErrInvalidState", err)
			}
			return
		}
		if st.Turn != nil {
			turn := pausedTurnOf(st.Turn)
			if turn.document() == nil {
				t.Fatal("no document")
			}
		}
		again, err := json.Marshal(st)
		if err != nil {
			t.Fatalf("written back: %v", err)
		}
		if _, err := decodeState(again); err != nil {
			t.Fatalf("what decoded does not decode again: %v\n%s", err, again)
		}
	})
}

// A pending call whose server's task asked (SEP-2663) keeps the task in
// the state, so that taking it up in another process follows the same
// task; a document without it reads as no task.
func TestStatePendingTask(t *testing.T) {
	doc := strings.Replace(v1Document, `"request_state":"s1"}`, `"request_state":"s1","task":{"id":"T-42","meta":{"k":"v"}}}`, 1)
	st, err := decodeState([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p := pausedTurnOf(st.Turn).calls[1].pending
	if p == nil || p.Input.Task == nil || p.Input.Task.ID != "T-42" || string(p.Input.Task.Meta) != `{"k":"v"}` {
		t.Fatalf("pending input %+v", p.Input)
	}
	if in := pausedTurnOf(st.Turn).document().Calls[1].Pending.Input; in.Task == nil || in.Task.ID != "T-42" {
		t.Errorf("written back: %+v", in)
	}
	old, err := decodeState([]byte(v1Document))
	if err != nil {
		t.Fatal(err)
	}
	if p := pausedTurnOf(old.Turn).calls[1].pending; p.Input.Task != nil {
		t.Errorf("a document without a task reads as %+v", p.Input.Task)
	}
}
