package gateway

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/seal"
)

var (
	keyA = []byte("0123456789abcdef0123456789abcdef")
	keyB = []byte("fedcba9876543210fedcba9876543210")
)

func sealer(t testing.TB, keys ...[]byte) *seal.Sealer {
	t.Helper()
	s, err := seal.New(statePurpose, keys...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testState() (*state, binding) {
	b := binding{method: "tools/call", name: "fs__write", args: "sha256:" + strings.Repeat("a", 64), principal: "alice"}
	return &state{ID: "ID1", Method: b.method, Name: b.name, Args: b.args, Principal: b.principal,
		Kind: kindServer, Approved: true, Server: "the server's"}, b
}

func TestStateRoundTrip(t *testing.T) {
	s := sealer(t, keyA)
	st, b := testState()
	now := time.Now()
	sealed, err := sealState(s, st, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got, err := openState(s, sealed, b, now)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "ID1" || got.Kind != kindServer || !got.Approved || got.Server != "the server's" {
		t.Errorf("opened %+v", got)
	}
}

// v1State is a requestState of version 1 (signed, not encrypted), as
// conduit 0.3 issued it for testState under keyA, expiring in 2226.
func v1State(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile("testdata/requeststate-v1-0.3.txt")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// TestStateEncrypted: the client reads nothing of a requestState: not its
// principal, tool, arguments' digest nor the server's state.
func TestStateEncrypted(t *testing.T) {
	st, b := testState()
	st.Server = "SERVER-STATE-WOMBAT-9931"
	sealed, err := sealState(sealer(t, keyA), st, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sealed, "cs2.") {
		t.Fatalf("sealed in another version: %.20q", sealed)
	}
	raw, err := base64.RawURLEncoding.DecodeString(sealed[strings.LastIndexByte(sealed, '.')+1:])
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{st.Server, b.name, b.args[7:], `"p":"alice"`} {
		for shift := range 3 {
			e := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat("x", shift) + secret))
			for _, n := range []string{secret, e[4 : len(e)-4]} {
				if strings.Contains(sealed, n) || strings.Contains(string(raw), n) {
					t.Errorf("the requestState shows %q (as %q)", secret, n)
				}
			}
		}
	}
}

// TestStateAltered: a change to any field of the payload, sealed or not,
// is refused: the client cannot approve its own call, take another's
// state or change the server's. Version 1's payload can be read, so its
// fields are forged one by one; version 2's cannot, so every character of
// it is changed.
func TestStateAltered(t *testing.T) {
	s := sealer(t, keyA)
	v1 := v1State(t)
	_, b := testState()
	now := time.Now()
	if _, err := openState(s, v1, b, now); err != nil {
		t.Fatalf("the state of version 1: %v", err)
	}
	parts := strings.Split(v1, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil {
		t.Fatal(err)
	}
	for field, value := range map[string]any{
		"v": 2, "id": "ID2", "m": "prompts/get", "n": "fs__read", "a": "", "p": "bob",
		"k": kindWait, "ok": false, "q": []string{"x"}, "s": "forged", "w": "W1",
	} {
		var m map[string]any
		if err := json.Unmarshal(payload, &m); err != nil {
			t.Fatal(err)
		}
		m[field] = value
		alt, _ := json.Marshal(m)
		p := append([]string(nil), parts...)
		p[3] = base64.RawURLEncoding.EncodeToString(alt)
		if _, err := openState(s, strings.Join(p, "."), b, now); !errors.Is(err, errStateAltered) {
			t.Errorf("%s altered: %v, want errStateAltered", field, err)
		}
	}
	st, _ := testState()
	sealed, err := sealState(s, st, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(sealed) {
		c := byte('A')
		if sealed[i] == c {
			c = 'B'
		}
		if _, err := openState(s, sealed[:i]+string(c)+sealed[i+1:], b, now); !errors.Is(err, errStateInvalid) {
			t.Fatalf("altered at %d: %v, want errStateInvalid", i, err)
		}
	}
	// Each reason has its own error; the expiry is sealed too.
	v2 := strings.Split(sealed, ".")
	for _, tc := range []struct {
		in   string
		want error
	}{
		{strings.Replace(sealed, "."+v2[2]+".", ".zzzzzz.", 1), errStateAltered},
		{sealed[:len(sealed)-3] + "AAA", errStateAltered},
		{strings.Replace(v1, "."+parts[2]+".", ".zzzzzz.", 1), errStateAltered},
		{sealed[:len(sealed)-2], errStateTruncated},
		{v1[:len(v1)-2], errStateTruncated},
		{"cs2", errStateTruncated},
		{sealed + "-TAMPERED", errStateMalformed},
		{"", errStateMalformed},
		{"{}", errStateMalformed},
		{strings.Repeat("x", maxStateBytes+1), errStateMalformed},
	} {
		if _, err := openState(s, tc.in, b, now); !errors.Is(err, tc.want) || !errors.Is(err, errStateInvalid) {
			t.Errorf("%.30q...: %v, want %v", tc.in, err, tc.want)
		}
	}
}

// TestStateBinding: a state is refused for any other request than the one
// it was issued for.
func TestStateBinding(t *testing.T) {
	s := sealer(t, keyA)
	st, b := testState()
	now := time.Now()
	sealed, err := sealState(s, st, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for name, other := range map[string]binding{
		"method":    {method: "prompts/get", name: b.name, args: b.args, principal: b.principal},
		"tool":      {method: b.method, name: "fs__delete", args: b.args, principal: b.principal},
		"arguments": {method: b.method, name: b.name, args: "sha256:" + strings.Repeat("b", 64), principal: b.principal},
		"principal": {method: b.method, name: b.name, args: b.args, principal: "mallory"},
	} {
		if _, err := openState(s, sealed, other, now); !errors.Is(err, errStateOther) {
			t.Errorf("another %s: %v, want errStateOther", name, err)
		}
	}
}

func TestStateExpiredAndKeys(t *testing.T) {
	st, b := testState()
	now := time.Now()
	a := sealer(t, keyA)
	sealed, err := sealState(a, st, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openState(a, sealed, b, now.Add(time.Minute+time.Second)); !errors.Is(err, errStateExpired) {
		t.Errorf("expired: %v, want errStateExpired", err)
	}
	if _, err := openState(sealer(t, keyB), sealed, b, now); !errors.Is(err, errStateOtherKey) {
		t.Errorf("another key: %v, want errStateOtherKey", err)
	}
	if _, err := openState(sealer(t, keyB), v1State(t), b, now); !errors.Is(err, errStateOtherKey) {
		t.Errorf("another key, version 1: %v, want errStateOtherKey", err)
	}
	// Rotation: B seals from now on, A still opens what it sealed, in
	// either version.
	rotated := sealer(t, keyB, keyA)
	for _, s := range []string{sealed, v1State(t)} {
		if _, err := openState(rotated, s, b, now); err != nil {
			t.Errorf("rotated keys: %v", err)
		}
	}
	newer, err := sealState(rotated, st, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openState(sealer(t, keyB), newer, b, now); err != nil {
		t.Errorf("the new key did not seal: %v", err)
	}
	if _, err := openState(a, newer, b, now); !errors.Is(err, errStateOtherKey) {
		t.Errorf("the old key alone opened the new key's state: %v", err)
	}
	// Sealed for another purpose under the same key: a Conversation's
	// saved state (TestStatePurposes checks it with adapters itself).
	other, _ := seal.New("adapters.Conversation state", keyA)
	data, _ := json.Marshal(st)
	if _, err := openState(a, other.Seal(data, time.Time{}), b, now); !errors.Is(err, errStateOtherKey) {
		t.Errorf("another purpose: %v, want errStateOtherKey", err)
	}
}

func TestDecodeState(t *testing.T) {
	for _, bad := range []string{
		`{}`, `{"v":1,"k":"server"}`, `{"v":2,"id":"x","k":"server"}`, `{"v":1,"id":"x","k":"other"}`,
		`{"v":1,"id":"x","k":"wait"}`, `{"v":1,"id":"x","k":"wait","w":"y"}`, `{"v":1,"id":"x","k":"wait","w":"y","q":["a","b"]}`, `{"v":1,"id":"x","k":"server","extra":1}`, `{"v":1,"id":"x","k":"server"} {}`,
		`[]`, `null`, ``,
	} {
		if _, err := decodeState([]byte(bad)); err == nil {
			t.Errorf("decodeState(%s) accepted it", bad)
		}
	}
	for _, good := range []string{`{"v":1,"id":"x","k":"server"}`, `{"v":1,"id":"x","k":"wait","w":"y","q":["a"]}`, `{"v":1,"id":"x","k":"approval"}`} {
		if _, err := decodeState([]byte(good)); err != nil {
			t.Errorf("decodeState(%s): %v", good, err)
		}
	}
}

func TestArgsDigest(t *testing.T) {
	d := func(s string) string {
		t.Helper()
		out, err := argsDigest(json.RawMessage(s))
		if err != nil {
			t.Fatalf("argsDigest(%s): %v", s, err)
		}
		return out
	}
	if d(`{"a":1,"b":[true,"x"]}`) != d(` { "b" : [ true , "x" ] , "a" : 1 } `) {
		t.Error("the order of members or white space changed the digest")
	}
	for _, pair := range [][2]string{{`{"a":1}`, `{"a":1.0}`}, {`{"a":1}`, `{"a":"1"}`}, {`{"a":9007199254740993}`, `{"a":9007199254740992}`}, {`{}`, ``}} {
		if d(pair[0]) == d(pair[1]) {
			t.Errorf("%s and %s share a digest", pair[0], pair[1])
		}
	}
	if d(`null`) != d(``) || d(``) != "" {
		t.Error("null and absent arguments differ")
	}
	if _, err := argsDigest(json.RawMessage(`{"a":`)); err == nil {
		t.Error("malformed arguments have a digest")
	}
}

// FuzzOpenState: whatever a client sends as requestState, opening it
// neither panics nor accepts it, unless it is what the gateway sealed
// (the seed's own, unaltered).
func FuzzOpenState(f *testing.F) {
	s := sealer(f, keyA)
	st, b := testState()
	now := time.Unix(1_800_000_000, 0)
	// A constant (the nonce is random, and the fuzzer's workers are other
	// processes): st sealed under keyA to expire an hour after now.
	const sealed = "cs2.91541d5c906f.trobo0.211.cbleC801o2PTuK42t_fgHAe81kHA6j9nsRr6uqPdb3XFV08QiJSgMW3w_-RLz6835fVWbWhZCASlwaGq9VmaM2c4nR1EIOTV7xHWD4mridCMDfpiGPAjs9wInnBq4qe21ChgP2CzGsr1CRCYDAzMbV3b15717q4FE-hXbUw5c-BNnYrf0uxX5yLJS0C4Zi8p28MuQvsZOS_BNdvmiV16uqC7V8TZRgii1j3AJwklUJSBURPkssKDPjMZlEo-m-T0VsYTKk9tQgF80B8a7NJt_0uXeA"
	if got, err := openState(s, sealed, b, now); err != nil || got.ID != st.ID {
		f.Fatalf("the seed of version 2: %v", err)
	}
	v1 := v1State(f)
	for _, seed := range []string{sealed, v1} {
		f.Add(seed)
		f.Add(seed[:len(seed)-1])
		f.Add(seed + "-TAMPERED")
	}
	f.Add("cs2.x.0.28.AAAA")
	f.Add("cs1.x.0.e30.AAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		got, err := openState(s, text, b, now)
		if err != nil && !errors.Is(err, errStateInvalid) && !errors.Is(err, errStateExpired) && !errors.Is(err, errStateOther) {
			t.Fatalf("error %v of no known kind", err)
		}
		if err == nil && text != sealed && text != v1 {
			t.Fatalf("accepted %q as %+v", text, got)
		}
	})
}

// FuzzDecodeState: the payload decoder, which reads only what a key of
// the gateway's sealed, takes any bytes without panicking, and what it
// accepts seals and decodes to the same state again.
func FuzzDecodeState(f *testing.F) {
	st, _ := testState()
	st.V = stateVersion
	data, _ := json.Marshal(st)
	f.Add(data)
	f.Add([]byte(`{"v":1,"id":"x","k":"wait","w":"y","q":["a"]}`))
	f.Add([]byte(`{"v":1,"id":"x","k":"server","s":"\u0000"}`))
	f.Add([]byte(`{"v":1,"id":"x","k":"code","t":"fs__write","r":[{"server":"fs","tool":"write","exposed":"fs__write","args":{"a":1},"value":"ok","reached":true},{"server":"fs","tool":"write","exposed":"fs__write","args":{},"skipped":true}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeState(data)
		if err != nil {
			return
		}
		again, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		st2, err := decodeState(again)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", again, err)
		}
		if a, b := mustJSON(t, st), mustJSON(t, st2); a != b {
			t.Fatalf("decoded %s, then %s", a, b)
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
