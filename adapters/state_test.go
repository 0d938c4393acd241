package adapters_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/adapters"
)

// pausedState is the state of a conversation of the lab whose turn has a
// pending call (echo "hello", c2) beside an answered one (text, c1).
func pausedState(t *testing.T) (*lab, []byte, func([]byte) (*adapters.Conversation, error)) {
	t.Helper()
	hub, l := deferringHub(t)
	ctx := context.Background()
	p := adapters.Anthropic
	conv, err := adapters.NewConversation(ctx, hub, p, stateOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.Execute(ctx, script(p,
		scripted{id: "c1", name: "lab__text", args: map[string]any{}},
		scripted{id: "c2", name: "lab__echo", args: map[string]any{"message": "hello"}})); err != nil {
		t.Fatal(err)
	}
	state, err := conv.State()
	if err != nil {
		t.Fatal(err)
	}
	return l, state, func(s []byte) (*adapters.Conversation, error) {
		return adapters.ResumeConversation(ctx, hub, p, s, stateOpts(nil))
	}
}

// The state of version 1 that conduit 0.3 wrote, and its key (see
// testdata/state/README.md).
func v1State(t *testing.T) (state []byte, opts *adapters.ConversationOptions) {
	t.Helper()
	state, err := os.ReadFile("testdata/state/v1-0.3.state")
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile("testdata/state/v1-0.3.key")
	if err != nil {
		t.Fatal(err)
	}
	o := stateOpts(nil)
	o.State.Keys = [][]byte{bytes.TrimSpace(key)}
	return bytes.TrimSpace(state), o
}

// v1Parts splits a state of version 1 into its signed head (version, key
// id, expiry), its JSON document and its MAC.
func v1Parts(t *testing.T, state []byte) (head string, doc map[string]any, mac string) {
	t.Helper()
	parts := strings.Split(string(state), ".")
	if len(parts) != 5 || parts[0] != "cs1" {
		t.Fatalf("a state of version 1 has 5 parts: %.40q", state)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return strings.Join(parts[:3], "."), doc, parts[4]
}

// forge is the state of version 1 with its document changed by edit and
// its MAC kept: what someone without the key can make of it.
func forge(t *testing.T, state []byte, edit func(doc map[string]any)) []byte {
	t.Helper()
	head, doc, mac := v1Parts(t, state)
	edit(doc)
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(head + "." + base64.RawURLEncoding.EncodeToString(data) + "." + mac)
}

func turnCalls(doc map[string]any) []any { return doc["turn"].(map[string]any)["calls"].([]any) }

func pendingOf(doc map[string]any) map[string]any {
	return turnCalls(doc)[1].(map[string]any)["pending"].(map[string]any)
}

// flip is state with the byte at i changed.
func flip(state []byte, i int) []byte {
	b := bytes.Clone(state)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return b
}

// Saved state that was altered is refused, whatever was changed, before
// anything is listed or sent, with an error that says why: altered,
// truncated, not a state, sealed by another key, or past its TTL.
func TestStateAlteredRefused(t *testing.T) {
	l, state, resume := pausedState(t)
	sentBefore := l.sent()
	// The untouched state is accepted.
	if _, err := resume(state); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(state), ".")
	if len(parts) != 5 || parts[0] != "cs2" {
		t.Fatalf("a state is sealed in version 2: %.40q", state)
	}
	sealedAt := len(state) - len(parts[4])
	for _, tc := range []struct {
		name  string
		state []byte
		want  error
	}{
		{"a sealed byte changed", flip(state, sealedAt+len(parts[4])/2), adapters.ErrStateAltered},
		{"the tag changed", flip(state, len(state)-2), adapters.ErrStateAltered},
		{"the nonce changed", flip(state, sealedAt+2), adapters.ErrStateAltered},
		{"the expiry changed", []byte(strings.Replace(string(state), "."+parts[2]+".", ".zzzzzz.", 1)), adapters.ErrStateAltered},
		{"the key id changed", flip(state, 5), adapters.ErrStateOtherKey},
		{"truncated", state[:len(state)-10], adapters.ErrStateTruncated},
		{"cut short", state[:len(state)/2], adapters.ErrStateTruncated},
		{"empty", nil, adapters.ErrStateMalformed},
		{"not a state", []byte(`{"v":1}`), adapters.ErrStateMalformed},
		{"bad base64", append(bytes.Clone(state[:len(state)-2]), "!!"...), adapters.ErrStateMalformed},
		{"another version", append([]byte("cs3"), state[3:]...), adapters.ErrStateMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resume(tc.state)
			if !errors.Is(err, tc.want) || !errors.Is(err, adapters.ErrInvalidState) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	// A state of version 1 (0.3's), signed only: whatever field of its
	// document is changed, it is refused.
	v1, v1Opts := v1State(t)
	hub, _ := deferringHub(t)
	ctx := context.Background()
	resumeV1 := func(s []byte) error {
		_, err := adapters.ResumeConversation(ctx, hub, adapters.Anthropic, s, v1Opts)
		return err
	}
	if err := resumeV1(v1); err != nil {
		t.Fatal(err)
	}
	_, doc, _ := v1Parts(t, v1)
	if doc["v"].(json.Number) != "1" || !slices.Equal(toStrings(doc["taint"]), []string{"lab"}) || pendingOf(doc)["id"] != "c2" {
		t.Fatalf("document %v", doc)
	}
	for _, tc := range []struct {
		name  string
		state []byte
		want  error
	}{
		{"taint removed", forge(t, v1, func(d map[string]any) { delete(d, "taint") }), adapters.ErrStateAltered},
		{"turn taint removed", forge(t, v1, func(d map[string]any) { delete(d["turn"].(map[string]any), "taint") }), adapters.ErrStateAltered},
		{"arguments changed", forge(t, v1, func(d map[string]any) { pendingOf(d)["arguments"] = map[string]any{"message": "rm -rf"} }), adapters.ErrStateAltered},
		{"tool added", forge(t, v1, func(d map[string]any) {
			tools := d["tools"].([]any)
			d["tools"] = append(tools, map[string]any{"server": "lab", "tool": "secret", "exposed": "lab__secret", "digest": tools[0].(map[string]any)["digest"]})
		}), adapters.ErrStateAltered},
		{"digest changed", forge(t, v1, func(d map[string]any) {
			d["tools"].([]any)[0].(map[string]any)["digest"] = "sha256:" + strings.Repeat("0", 64)
		}), adapters.ErrStateAltered},
		{"decision forged", forge(t, v1, func(d map[string]any) {
			c := turnCalls(d)[1].(map[string]any)
			delete(c, "pending")
			c["answer"] = map[string]any{"type": "tool_result", "tool_use_id": "c2", "content": "approved"}
		}), adapters.ErrStateAltered},
		{"principal changed", forge(t, v1, func(d map[string]any) { d["principal"] = "root" }), adapters.ErrStateAltered},
		{"version changed", forge(t, v1, func(d map[string]any) { d["v"] = 2 }), adapters.ErrStateAltered},
		{"truncated", v1[:len(v1)-10], adapters.ErrStateTruncated},
		{"cut short", v1[:len(v1)/2], adapters.ErrStateTruncated},
		{"MAC of another", append(bytes.Clone(v1[:len(v1)-4]), "AAAA"...), adapters.ErrStateAltered},
	} {
		t.Run("v1 "+tc.name, func(t *testing.T) {
			if err := resumeV1(tc.state); !errors.Is(err, tc.want) || !errors.Is(err, adapters.ErrInvalidState) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
	// Another key, and a state past its TTL.
	other := stateOpts(nil)
	other.State.Keys = [][]byte{[]byte("another key of thirty-two bytes or more")}
	if _, err := adapters.ResumeConversation(ctx, hub, adapters.Anthropic, state, other); !errors.Is(err, adapters.ErrStateOtherKey) {
		t.Errorf("another key: %v", err)
	}
	short := stateOpts(nil)
	short.State.TTL = time.Nanosecond
	conv, err := adapters.NewConversation(ctx, hub, adapters.Anthropic, short)
	if err != nil {
		t.Fatal(err)
	}
	expired, err := conv.State()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // expiry is in whole seconds
	if _, err := adapters.ResumeConversation(ctx, hub, adapters.Anthropic, expired, stateOpts(nil)); !errors.Is(err, adapters.ErrStateExpired) {
		t.Errorf("expired: %v", err)
	}
	if !slices.Equal(l.sent(), sentBefore) {
		t.Errorf("sent %v", l.sent())
	}
}

// Keys rotate: a state sealed by the old key opens when the old key
// follows the new one, and a state saved then is sealed by the new one.
func TestStateKeyRotation(t *testing.T) {
	_, state, _ := pausedState(t)
	hub, _ := deferringHub(t)
	ctx := context.Background()
	rotated := stateOpts(nil)
	newKey := []byte("the new key, thirty-two bytes or more")
	rotated.State.Keys = [][]byte{newKey, testKey}
	conv, err := adapters.ResumeConversation(ctx, hub, adapters.Anthropic, state, rotated)
	if err != nil {
		t.Fatal(err)
	}
	again, err := conv.State()
	if err != nil {
		t.Fatal(err)
	}
	onlyNew := stateOpts(nil)
	onlyNew.State.Keys = [][]byte{newKey}
	if _, err := adapters.ResumeConversation(ctx, hub, adapters.Anthropic, again, onlyNew); err != nil {
		t.Errorf("the new key does not open what it sealed: %v", err)
	}
	if _, err := adapters.ResumeConversation(ctx, hub, adapters.Anthropic, state, onlyNew); !errors.Is(err, adapters.ErrInvalidState) {
		t.Errorf("the old state without the old key: %v", err)
	}
	// Without keys there is no state.
	plain, err := adapters.NewConversation(ctx, hub, adapters.Anthropic, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.State(); !errors.Is(err, adapters.ErrNoStateKey) {
		t.Errorf("State without keys: %v", err)
	}
	if _, err := json.Marshal(plain); !errors.Is(err, adapters.ErrNoStateKey) {
		t.Errorf("json.Marshal without keys: %v", err)
	}
	// json.Marshal of a Conversation is its state.
	var text string
	if data, err := json.Marshal(conv); err != nil || json.Unmarshal(data, &text) != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	if _, err := adapters.ResumeConversation(ctx, hub, adapters.Anthropic, []byte(text), rotated); err != nil {
		t.Errorf("the state json.Marshal wrote: %v", err)
	}
	if _, err := adapters.ResumeConversation(ctx, hub, adapters.Anthropic, state, nil); !errors.Is(err, adapters.ErrNoStateKey) {
		t.Errorf("ResumeConversation without keys: %v", err)
	}
	if _, err := adapters.ResumeConversation(ctx, hub, adapters.OpenAIChat, state, stateOpts(nil)); err == nil {
		t.Error("a state of Anthropic resumed for OpenAI Chat")
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// A saved state shows nothing of the calls without the key: not a tool's
// output, not a pending call's arguments, neither in its text nor in its
// sealed bytes, nor as base64 at any alignment.
func TestStateEncrypted(t *testing.T) {
	const output, argument = "ZEBRA-TOOL-OUTPUT-7731", "OKAPI-PENDING-ARGUMENT-4412"
	hub, l := deferringHub(t)
	ctx := context.Background()
	p := adapters.Anthropic
	conv, err := adapters.NewConversation(ctx, hub, p, stateOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	exec, err := conv.Execute(ctx, script(p,
		scripted{id: "c1", name: "lab__search", args: map[string]any{"q": output}},
		scripted{id: "c2", name: "lab__echo", args: map[string]any{"message": argument}}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(canon(exec.Results[0]), output) || len(exec.Pending) != 1 {
		t.Fatalf("the tool's output %s, pending %v", canon(exec.Results[0]), exec.Pending)
	}
	state, err := conv.State()
	if err != nil {
		t.Fatal(err)
	}
	sealed := state[bytes.LastIndexByte(state, '.')+1:]
	raw, err := base64.RawURLEncoding.DecodeString(string(sealed))
	if err != nil {
		t.Fatal(err)
	}
	// Each long enough that random bytes do not hold it by chance.
	for _, secret := range []string{output, argument, "lab__search", `"principal"`} {
		var needles []string
		for shift := range 3 {
			e := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("x", shift) + secret))
			needles = append(needles, secret, e[4:len(e)-4])
		}
		for _, hay := range [][]byte{state, raw} {
			for _, n := range needles {
				if bytes.Contains(hay, []byte(n)) {
					t.Errorf("the state shows %q (as %q)", secret, n)
				}
			}
		}
	}
	// And the key opens it all again.
	back, err := adapters.ResumeConversation(ctx, hub, p, state, stateOpts(nil))
	if err != nil {
		t.Fatal(err)
	}
	done, err := back.Resume(ctx, map[string]adapters.Ruling{"c2": {Allow: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !done.Complete() || !strings.Contains(canon(done.Results[0]), output) || !strings.Contains(canon(done.Results[1]), "Echo: "+argument) {
		t.Errorf("resumed: %s", canon(done.Results))
	}
	if !slices.Equal(l.sent(), []string{"search", "echo"}) {
		t.Errorf("sent %v", l.sent())
	}
}

// A state of version 1, as conduit 0.3 saved it (signed, not encrypted),
// still resumes: read, decided, its call sent, and saved again in version
// 2.
func TestStateVersionOneResumes(t *testing.T) {
	v1, o := v1State(t)
	info, err := adapters.ReadState(v1, &o.State)
	if err != nil {
		t.Fatal(err)
	}
	if info.Principal != "ada" || info.Provider != adapters.Anthropic || len(info.Pending) != 1 ||
		info.Pending[0].ID != "c2" || info.Pending[0].Arguments["message"] != "hello from 0.3" {
		t.Fatalf("read %+v", info)
	}
	hub, l := deferringHub(t)
	ctx := context.Background()
	conv, err := adapters.ResumeConversation(ctx, hub, adapters.Anthropic, v1, o)
	if err != nil {
		t.Fatal(err)
	}
	done, err := conv.Resume(ctx, map[string]adapters.Ruling{"c2": {Allow: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !done.Complete() || !strings.Contains(canon(done.Results[0]), "FIXTURE-TOOL-OUTPUT-0.3") || !strings.Contains(canon(done.Results[1]), "Echo: hello from 0.3") {
		t.Errorf("resumed: %s", canon(done.Results))
	}
	if !slices.Equal(l.sent(), []string{"echo"}) {
		t.Errorf("sent %v (the answered search must not run again)", l.sent())
	}
	again, err := conv.State()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(again, []byte("cs2.")) || bytes.Contains(again, []byte("FIXTURE")) {
		t.Errorf("saved again as %.20q", again)
	}
	if _, err := adapters.ReadState(again, &o.State); err != nil {
		t.Errorf("the state saved again: %v", err)
	}
}
