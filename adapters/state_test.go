package adapters_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
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

// sealedParts splits a sealed state into its signed head (version, key
// id, expiry), its JSON document and its MAC.
func sealedParts(t *testing.T, state []byte) (head string, doc map[string]any, mac string) {
	t.Helper()
	parts := strings.Split(string(state), ".")
	if len(parts) != 5 {
		t.Fatalf("a sealed state has 5 parts: %q", state)
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

// forge is the state with its document changed by edit and its MAC kept:
// what someone without the key can make of it.
func forge(t *testing.T, state []byte, edit func(doc map[string]any)) []byte {
	t.Helper()
	head, doc, mac := sealedParts(t, state)
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

// Saved state that was altered is refused, whatever field was changed,
// before anything is listed or sent; so is a truncated one, one sealed by
// another key, and one whose TTL has passed.
func TestStateAlteredRefused(t *testing.T) {
	l, state, resume := pausedState(t)
	sentBefore := l.sent()
	// The untouched state is accepted (and its document is as expected).
	if _, err := resume(state); err != nil {
		t.Fatal(err)
	}
	_, doc, _ := sealedParts(t, state)
	if doc["v"].(json.Number) != "1" || !slices.Equal(toStrings(doc["taint"]), []string{"lab"}) || pendingOf(doc)["id"] != "c2" {
		t.Fatalf("document %v", doc)
	}
	for _, tc := range []struct {
		name  string
		state []byte
	}{
		{"taint removed", forge(t, state, func(d map[string]any) { delete(d, "taint") })},
		{"turn taint removed", forge(t, state, func(d map[string]any) { delete(d["turn"].(map[string]any), "taint") })},
		{"arguments changed", forge(t, state, func(d map[string]any) { pendingOf(d)["arguments"] = map[string]any{"message": "rm -rf"} })},
		{"tool added", forge(t, state, func(d map[string]any) {
			tools := d["tools"].([]any)
			d["tools"] = append(tools, map[string]any{"server": "lab", "tool": "secret", "exposed": "lab__secret", "digest": tools[0].(map[string]any)["digest"]})
		})},
		{"digest changed", forge(t, state, func(d map[string]any) {
			d["tools"].([]any)[0].(map[string]any)["digest"] = "sha256:" + strings.Repeat("0", 64)
		})},
		{"decision forged", forge(t, state, func(d map[string]any) {
			c := turnCalls(d)[1].(map[string]any)
			delete(c, "pending")
			c["answer"] = map[string]any{"type": "tool_result", "tool_use_id": "c2", "content": "approved"}
		})},
		{"principal changed", forge(t, state, func(d map[string]any) { d["principal"] = "root" })},
		{"version changed", forge(t, state, func(d map[string]any) { d["v"] = 2 })},
		{"truncated", state[:len(state)-10]},
		{"cut short", state[:len(state)/2]},
		{"empty", nil},
		{"not a state", []byte(`{"v":1}`)},
		{"MAC of another", append(bytes.Clone(state[:len(state)-4]), "AAAA"...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resume(tc.state)
			if !errors.Is(err, adapters.ErrInvalidState) {
				t.Fatalf("err %v, want ErrInvalidState", err)
			}
		})
	}
	// Another key, and a state past its TTL.
	ctx := context.Background()
	hub, _ := deferringHub(t)
	other := stateOpts(nil)
	other.State.Keys = [][]byte{[]byte("another key of thirty-two bytes or more")}
	if _, err := adapters.ResumeConversation(ctx, hub, adapters.Anthropic, state, other); !errors.Is(err, adapters.ErrInvalidState) {
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
