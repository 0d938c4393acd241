package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	secretA = []byte("0123456789abcdef0123456789abcdef")
	secretB = []byte("fedcba9876543210fedcba9876543210")
	now     = time.Unix(1_800_000_000, 0)
)

// v1RequestState is a value of version 1, sealed by conduit 0.3 for the
// purpose "requestState" under secretA, expiring in 2226 (the gateway's
// fixture of it).
const v1RequestState = "cs1.437d9357d09f.3plruo0.eyJ2IjoxLCJpZCI6IklEMSIsIm0iOiJ0b29scy9jYWxsIiwibiI6ImZzX193cml0ZSIsImEiOiJzaGEyNTY6YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYSIsInAiOiJhbGljZSIsImsiOiJzZXJ2ZXIiLCJvayI6dHJ1ZSwicyI6InRoZSBzZXJ2ZXIncyJ9.LSRVJsngGYNM4X1JsefBn-3i3eM-jlMOj4yg-3n1K9M"

func mustNew(t testing.TB, purpose string, secrets ...[]byte) *Sealer {
	t.Helper()
	s, err := New(purpose, secrets...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	s := mustNew(t, "state", secretA)
	for _, payload := range [][]byte{nil, {}, []byte("x"), []byte(`{"v":1,"calls":["a","b"]}`), make([]byte, 1<<16)} {
		sealed := s.Seal(payload, time.Time{})
		if !strings.HasPrefix(sealed, "cs2.") {
			t.Fatalf("sealed in another version: %.20q", sealed)
		}
		got, err := s.Open(sealed, now)
		if err != nil {
			t.Fatalf("Open(Seal(%d bytes)): %v", len(payload), err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("payload changed: %q, want %q", got, payload)
		}
	}
	// The nonce is random: the same payload seals to another text.
	if s.Seal([]byte("p"), time.Time{}) == s.Seal([]byte("p"), time.Time{}) {
		t.Error("two seals of one payload are the same text")
	}
}

// TestConfidential: the sealed value shows none of the payload, neither
// in its text nor in its sealed bytes, nor in any base64 of it.
func TestConfidential(t *testing.T) {
	s := mustNew(t, "state", secretA)
	const secret = "TOOL-OUTPUT-7f3a9c-the-cut-read"
	payload := []byte(`{"answer":"` + strings.Repeat(secret+" ", 50) + `"}`)
	sealed := s.Seal(payload, now.Add(time.Hour))
	raw, err := base64.RawURLEncoding.DecodeString(sealed[strings.LastIndexByte(sealed, '.')+1:])
	if err != nil {
		t.Fatal(err)
	}
	var needles []string
	for shift := range 3 {
		// The base64 of the secret at each alignment, minus the edges.
		pre := strings.Repeat("x", shift)
		for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.RawStdEncoding} {
			e := enc.EncodeToString([]byte(pre + secret))
			needles = append(needles, e[4:len(e)-4])
		}
	}
	// The check has teeth: it finds the payload in its plain base64, as
	// version 1 carried it.
	plain, found := base64.RawURLEncoding.EncodeToString(payload), false
	for _, n := range needles {
		found = found || strings.Contains(plain, n)
	}
	if !found {
		t.Fatal("the check does not find the payload in its base64")
	}
	for _, hay := range []string{sealed, string(raw)} {
		if strings.Contains(hay, secret) || strings.Contains(hay, "TOOL-OUTPUT") {
			t.Fatalf("the sealed value shows the payload")
		}
		for _, n := range needles {
			if strings.Contains(hay, n) {
				t.Fatalf("the sealed value shows the payload's base64 %q", n)
			}
		}
	}
}

// TestErrorKinds: each reason a value does not open has its own error,
// and every one but the expiry matches ErrInvalid.
func TestErrorKinds(t *testing.T) {
	s := mustNew(t, "state", secretA)
	sealed := s.Seal([]byte(`{"taint":["web"]}`), now.Add(time.Hour))
	flip := func(v string, i int) string {
		b := []byte(v)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	parts := strings.Split(sealed, ".")
	other := mustNew(t, "state", secretB).Seal([]byte(`{}`), time.Time{})
	for _, tc := range []struct {
		name string
		in   string
		want error
	}{
		{"empty", "", ErrMalformed},
		{"not a state", `{"v":1,"taint":[]}`, ErrMalformed},
		{"unknown version", "cs9" + sealed[3:], ErrMalformed},
		{"bad base64", sealed[:len(sealed)-3] + "!!!", ErrMalformed},
		{"too many parts", sealed + ".x", ErrMalformed},
		{"longer than its length", sealed + "AAAA", ErrMalformed},
		{"bad length", strings.Replace(sealed, "."+parts[3]+".", ".x.", 1), ErrMalformed},
		{"bad expiry", strings.Replace(sealed, "."+parts[2]+".", ".!.", 1), ErrMalformed},
		{"cut in the prefix", "cs", ErrTruncated},
		{"cut in the head", sealed[:len(parts[0])+len(parts[1])+4], ErrTruncated},
		{"cut at the end", sealed[:len(sealed)-1], ErrTruncated},
		{"cut in half", sealed[:len(sealed)/2], ErrTruncated},
		{"v1 cut", v1RequestState[:len(v1RequestState)-5], ErrTruncated},
		{"v1 cut in half", v1RequestState[:len(v1RequestState)/2], ErrTruncated},
		{"another key", other, ErrUnknownKey},
		{"a sealed byte changed", flip(sealed, len(sealed)-10), ErrAltered},
		{"the expiry changed", strings.Replace(sealed, "."+parts[2]+".", ".zzzzzz.", 1), ErrAltered},
		{"expired", mustNew(t, "state", secretA).Seal(nil, now), ErrExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Open(tc.in, now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if invalid := tc.want != ErrExpired; errors.Is(err, ErrInvalid) != invalid {
				t.Errorf("errors.Is(%v, ErrInvalid) = %v", err, !invalid)
			}
			for _, e := range []error{ErrUnknownKey, ErrAltered, ErrTruncated, ErrMalformed, ErrExpired} {
				if e != tc.want && errors.Is(err, e) {
					t.Errorf("err %v matches %v too", err, e)
				}
			}
		})
	}
	v1 := mustNew(t, "requestState", secretA)
	if _, err := v1.Open(flip(v1RequestState, 40), now); !errors.Is(err, ErrAltered) {
		t.Errorf("v1 altered: %v, want ErrAltered", err)
	}
	if _, err := mustNew(t, "requestState", secretB).Open(v1RequestState, now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("v1 of another key: %v, want ErrUnknownKey", err)
	}
	if _, err := v1.Open(v1RequestState, time.Date(2226, 1, 1, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ErrExpired) {
		t.Errorf("v1 expired: %v, want ErrExpired", err)
	}
}

func TestRefusesAltered(t *testing.T) {
	s := mustNew(t, "state", secretA)
	v1 := mustNew(t, "requestState", secretA)
	for _, tc := range []struct {
		s      *Sealer
		sealed string
	}{{s, s.Seal([]byte(`{"taint":["web"]}`), now.Add(time.Hour))}, {v1, v1RequestState}} {
		sealed := tc.sealed
		if _, err := tc.s.Open(sealed, now); err != nil {
			t.Fatal(err)
		}
		// Every single-character change anywhere is refused.
		for i := range len(sealed) {
			for _, c := range []byte{'A', '0', '.', '_', '-'} {
				if sealed[i] == c {
					continue
				}
				alt := sealed[:i] + string(c) + sealed[i+1:]
				if _, err := tc.s.Open(alt, now); !errors.Is(err, ErrInvalid) {
					t.Fatalf("altered at %d to %q: err %v, want ErrInvalid", i, c, err)
				}
			}
		}
	}
}

// TestVersionOne: a value 0.3 sealed opens, to its payload, while it has
// not expired.
func TestVersionOne(t *testing.T) {
	p, err := mustNew(t, "requestState", secretA).Open(v1RequestState, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(p), `{"v":1,"id":"ID1",`) {
		t.Errorf("payload %s", p)
	}
	// Another purpose's keys do not open it.
	if _, err := mustNew(t, "state", secretA).Open(v1RequestState, now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("another purpose: %v", err)
	}
}

func TestPurposeAndKeys(t *testing.T) {
	state := mustNew(t, "state", secretA)
	rs := mustNew(t, "requestState", secretA)
	other := mustNew(t, "state", secretB)
	sealed := state.Seal([]byte("p"), time.Time{})
	if _, err := rs.Open(sealed, now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("opened for another purpose: %v", err)
	}
	if _, err := state.Open(rs.Seal([]byte("p"), time.Time{}), now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("opened for another purpose: %v", err)
	}
	if _, err := other.Open(sealed, now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("opened with another secret: %v", err)
	}
	// Rotation: B seals now, A still opens what it sealed before.
	rotated := mustNew(t, "state", secretB, secretA)
	if _, err := rotated.Open(sealed, now); err != nil {
		t.Errorf("rotated sealer does not open the old key's value: %v", err)
	}
	newer := rotated.Seal([]byte("p"), time.Time{})
	if _, err := other.Open(newer, now); err != nil {
		t.Errorf("the new key did not seal: %v", err)
	}
	if _, err := state.Open(newer, now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("a sealer without the new key opened its value: %v", err)
	}
}

// TestPurposeIsBound: even with the key id of another purpose's key, a
// value does not open for another purpose: its key and additional data
// differ.
func TestPurposeIsBound(t *testing.T) {
	state := mustNew(t, "state", secretA)
	rs := mustNew(t, "requestState", secretA)
	rs.keys[0].id = state.keys[0].id
	if _, err := rs.Open(state.Seal([]byte("p"), time.Time{}), now); !errors.Is(err, ErrAltered) {
		t.Errorf("another purpose under a shared key id: %v, want ErrAltered", err)
	}
	// The same key under another purpose's additional data.
	rs.keys[0] = state.keys[0]
	if _, err := rs.Open(state.Seal([]byte("p"), time.Time{}), now); !errors.Is(err, ErrAltered) {
		t.Errorf("another purpose's additional data: %v, want ErrAltered", err)
	}
}

func TestExpiry(t *testing.T) {
	s := mustNew(t, "rs", secretA)
	sealed := s.Seal([]byte("p"), now.Add(time.Minute))
	if _, err := s.Open(sealed, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(sealed, now.Add(time.Minute)); !errors.Is(err, ErrExpired) {
		t.Errorf("at expiry: %v, want ErrExpired", err)
	}
}

func TestSecrets(t *testing.T) {
	if _, err := New("p"); !errors.Is(err, ErrNoKey) {
		t.Errorf("New without a secret: %v, want ErrNoKey", err)
	}
	if _, err := New("", secretA); err == nil {
		t.Error("New without a purpose succeeded")
	}
	short := "short-secret-value"
	if _, err := New("p", []byte(short)); err == nil || strings.Contains(err.Error(), short) {
		t.Errorf("short secret: %v (must fail without showing it)", err)
	}
	got, err := ParseSecrets(" " + string(secretA) + " ,, " + string(secretB))
	if err != nil || len(got) != 2 || string(got[0]) != string(secretA) {
		t.Fatalf("ParseSecrets: %q, %v", got, err)
	}
	if _, err := ParseSecrets(" , "); !errors.Is(err, ErrNoKey) {
		t.Errorf("ParseSecrets of no secret: %v, want ErrNoKey", err)
	}
	for _, bad := range []string{"", " , ", string(secretA) + "," + short} {
		if _, err := ParseSecrets(bad); err == nil || strings.Contains(err.Error(), short) {
			t.Errorf("ParseSecrets(%q): %v", bad, err)
		}
	}
}

// TestOneText: a sealed value has one text: no other character in any
// place opens, not even one that decodes to the same bytes (the unused
// low bits of a last base64 character).
func TestOneText(t *testing.T) {
	s := mustNew(t, "state", secretA)
	v1 := mustNew(t, "requestState", secretA)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
	for _, tc := range []struct {
		s      *Sealer
		sealed string
	}{{s, s.Seal([]byte(`{"taint":["web"]}`), now.Add(time.Hour))}, {v1, v1RequestState}} {
		sealed := tc.sealed
		for i := range len(sealed) {
			for _, c := range []byte(alphabet) {
				if sealed[i] == c {
					continue
				}
				alt := sealed[:i] + string(c) + sealed[i+1:]
				if _, err := tc.s.Open(alt, now); err == nil {
					t.Fatalf("opened with %q at %d", c, i)
				}
			}
		}
	}
}

// errorKind reports whether err is one of Open's documented errors.
func errorKind(err error) bool {
	for _, e := range []error{ErrUnknownKey, ErrAltered, ErrTruncated, ErrMalformed, ErrExpired} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// v2Seeds are values Seal made for "state" under secretA. They are
// constants: the nonce is random, and the fuzzer's workers are other
// processes that must know the same seeds.
var v2Seeds = []string{
	"cs2.65aa08144ccd.0.35.de9rjY0tp5Lz_8UwI7YAe6fz6VDpCMaqnmxG-HfGWfvb3yA",
	"cs2.65aa08144ccd.trobo0.28.pieOLHr3ksioh5CaQ8ebZHyHZ6W7tVjFezZSsQ",
	"cs2.65aa08144ccd.0.86.asRbBvdNF_SUAzRzqRb3cCoNdm6aOl28EHCJfSJUIsjfnFEg2rBsAt1oGxxMHBeXhvPqDJH4H4KXFrM-1YxlVyWNGn6bj56Y4aaqcvlUwfv01EQTuto",
}

// TestSeeds: the constant seeds open, so the fuzzer starts from values
// that do.
func TestSeeds(t *testing.T) {
	s := mustNew(t, "state", secretA)
	for _, v := range v2Seeds {
		if _, err := s.Open(v, now); err != nil {
			t.Errorf("seed %.30q: %v", v, err)
		}
	}
}

// FuzzOpen: whatever text is opened, Open never panics, answers one of its
// documented errors, and opens only what Seal made (here: the seeds,
// unaltered) in version 2.
func FuzzOpen(f *testing.F) {
	s := mustNew(f, "state", secretA)
	good := map[string]bool{}
	for _, v := range v2Seeds {
		good[v] = true
		f.Add(v)
		f.Add(v[:len(v)-3])
	}
	f.Add(strings.Replace(v2Seeds[0], "65aa08144ccd", "000000000000", 1))
	f.Add("cs2.000000000000.0.28.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add("cs2....")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := s.Open(in, now)
		if err != nil {
			if !errorKind(err) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if !good[in] {
			t.Fatalf("opened a value Seal did not make: %q (payload %q)", in, p)
		}
	})
}

// FuzzOpenV1: a value of version 1 opens only as 0.3 sealed it.
func FuzzOpenV1(f *testing.F) {
	s := mustNew(f, "requestState", secretA)
	f.Add(v1RequestState)
	f.Add(v1RequestState[:len(v1RequestState)-1])
	f.Add("cs1.x.0.e30.AAAA")
	f.Add("cs1....")
	f.Fuzz(func(t *testing.T, in string) {
		_, err := s.Open(in, now)
		if err != nil {
			if !errorKind(err) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if in != v1RequestState {
			t.Fatalf("opened a value 0.3 did not seal: %q", in)
		}
	})
}
