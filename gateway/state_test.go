package gateway

import (
	"encoding/base64"
	"encoding/json"
	"errors"
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

// TestStateAltered: a change to any field of the payload, sealed or not,
// is refused: the client cannot approve its own call, take another's
// state or change the server's.
func TestStateAltered(t *testing.T) {
	s := sealer(t, keyA)
	st, b := testState()
	st.Approved = false
	now := time.Now()
	sealed, err := sealState(s, st, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(sealed, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil {
		t.Fatal(err)
	}
	for field, value := range map[string]any{
		"v": 2, "id": "ID2", "m": "prompts/get", "n": "fs__read", "a": "", "p": "bob",
		"k": kindWait, "ok": true, "q": []string{"x"}, "s": "forged", "w": "W1",
	} {
		var m map[string]any
		if err := json.Unmarshal(payload, &m); err != nil {
			t.Fatal(err)
		}
		m[field] = value
		alt, _ := json.Marshal(m)
		p := append([]string(nil), parts...)
		p[3] = base64.RawURLEncoding.EncodeToString(alt)
		if _, err := openState(s, strings.Join(p, "."), b, now); !errors.Is(err, errStateInvalid) {
			t.Errorf("%s altered: %v, want errStateInvalid", field, err)
		}
	}
	// The expiry is sealed too, and the text as a whole.
	for _, alt := range []string{
		strings.Replace(sealed, "."+parts[2]+".", ".zzzzzz.", 1),
		sealed + "-TAMPERED", "", "cs1", sealed[:len(sealed)-2], strings.Repeat("x", maxStateBytes+1),
	} {
		if _, err := openState(s, alt, b, now); !errors.Is(err, errStateInvalid) {
			t.Errorf("%.30q...: %v, want errStateInvalid", alt, err)
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
	if _, err := openState(sealer(t, keyB), sealed, b, now); !errors.Is(err, errStateInvalid) {
		t.Errorf("another key: %v, want errStateInvalid", err)
	}
	// Rotation: B seals from now on, A still opens what it sealed.
	if _, err := openState(sealer(t, keyB, keyA), sealed, b, now); err != nil {
		t.Errorf("rotated keys: %v", err)
	}
	// Sealed for another purpose under the same key.
	other, _ := seal.New("state", keyA)
	data, _ := json.Marshal(st)
	if _, err := openState(a, other.Seal(data, time.Time{}), b, now); !errors.Is(err, errStateInvalid) {
		t.Errorf("another purpose: %v, want errStateInvalid", err)
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
	sealed, err := sealState(s, st, now.Add(time.Hour))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed)
	f.Add(sealed + "-TAMPERED")
	f.Add("cs1.x.0.e30.AAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		got, err := openState(s, text, b, now)
		if err == nil && text != sealed {
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
