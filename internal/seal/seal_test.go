package seal

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	secretA = []byte("0123456789abcdef0123456789abcdef")
	secretB = []byte("fedcba9876543210fedcba9876543210")
	now     = time.Unix(1_800_000_000, 0)
)

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
		got, err := s.Open(sealed, now)
		if err != nil {
			t.Fatalf("Open(Seal(%d bytes)): %v", len(payload), err)
		}
		if string(got) != string(payload) {
			t.Fatalf("payload changed: %q, want %q", got, payload)
		}
	}
}

func TestRefusesAltered(t *testing.T) {
	s := mustNew(t, "state", secretA)
	sealed := s.Seal([]byte(`{"taint":["web"]}`), now.Add(time.Hour))
	// Every single-character change anywhere is refused.
	for i := range len(sealed) {
		for _, c := range []byte{'A', '0', '.', '_', '-'} {
			if sealed[i] == c {
				continue
			}
			alt := sealed[:i] + string(c) + sealed[i+1:]
			if _, err := s.Open(alt, now); !errors.Is(err, ErrInvalid) {
				t.Fatalf("altered at %d to %q: err %v, want ErrInvalid", i, c, err)
			}
		}
	}
	for _, alt := range []string{"", ".", sealed[:len(sealed)-1], sealed + "A", sealed + ".x", strings.Replace(sealed, "cs1", "cs2", 1)} {
		if _, err := s.Open(alt, now); !errors.Is(err, ErrInvalid) {
			t.Errorf("Open(%.40q...): %v, want ErrInvalid", alt, err)
		}
	}
}

func TestPurposeAndKeys(t *testing.T) {
	state := mustNew(t, "state", secretA)
	rs := mustNew(t, "requestState", secretA)
	other := mustNew(t, "state", secretB)
	sealed := state.Seal([]byte("p"), time.Time{})
	if _, err := rs.Open(sealed, now); !errors.Is(err, ErrInvalid) {
		t.Errorf("opened for another purpose: %v", err)
	}
	if _, err := other.Open(sealed, now); !errors.Is(err, ErrInvalid) {
		t.Errorf("opened with another secret: %v", err)
	}
	// Rotation: B seals now, A still opens what it sealed before.
	rotated := mustNew(t, "state", secretB, secretA)
	if _, err := rotated.Open(sealed, now); err != nil {
		t.Errorf("rotated sealer does not open the old key's value: %v", err)
	}
	if _, err := state.Open(rotated.Seal([]byte("p"), time.Time{}), now); !errors.Is(err, ErrInvalid) {
		t.Errorf("a sealer without the new key opened its value: %v", err)
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
	if _, err := New("p"); err == nil {
		t.Error("New without a secret succeeded")
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
	for _, bad := range []string{"", " , ", string(secretA) + "," + short} {
		if _, err := ParseSecrets(bad); err == nil || strings.Contains(err.Error(), short) {
			t.Errorf("ParseSecrets(%q): %v", bad, err)
		}
	}
}

func FuzzOpen(f *testing.F) {
	s := mustNew(f, "state", secretA)
	f.Add(s.Seal([]byte(`{"v":1}`), time.Time{}))
	f.Add(s.Seal(nil, now.Add(time.Hour)))
	f.Add("cs1....")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := s.Open(in, now)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrExpired) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		// Whatever opens was sealed by Seal: sealing its payload again
		// with its expiry gives the same text.
		if again := s.Seal(p, expiryOf(t, in)); again != in {
			t.Fatalf("opened a value Seal did not make: %q (Seal gives %q)", in, again)
		}
	})
}

func expiryOf(t *testing.T, sealed string) time.Time {
	exp := strings.Split(sealed, ".")[2]
	if exp == "0" {
		return time.Time{}
	}
	sec, err := strconv.ParseInt(exp, 36, 64)
	if err != nil {
		t.Fatalf("an opened value has expiry %q: %v", exp, err)
	}
	return time.Unix(sec, 0)
}

// TestOneText: a sealed value has one text: no other character in any
// place opens, not even one that decodes to the same bytes (the unused
// low bits of a last base64 character).
func TestOneText(t *testing.T) {
	s := mustNew(t, "state", secretA)
	sealed := s.Seal([]byte(`{"taint":["web"]}`), now.Add(time.Hour))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
	for i := range len(sealed) {
		for _, c := range []byte(alphabet) {
			if sealed[i] == c {
				continue
			}
			alt := sealed[:i] + string(c) + sealed[i+1:]
			if _, err := s.Open(alt, now); err == nil {
				t.Fatalf("opened with %q at %d", c, i)
			}
		}
	}
}
