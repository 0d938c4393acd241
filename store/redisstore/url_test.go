package redisstore

// Tests of what Open's errors say of a URL: its scheme and host, never
// any part of the user name or password.

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// passwords hold each character that breaks url.Parse or the user info,
// unescaped: a quote, a backslash, '/', '#', '?', '@', '%', a newline,
// a space and non-ASCII.
var passwords = []string{
	"12345/Qj7kPx",
	"Zq/#?@%zz\"\\\nü9x-Wk",
	"h7Gx2#Rt-Yq",
	"ab?cd=ef&gh",
	"p@Q@w9@",
	"%%%%%%%%%",
	"1234567890",
	"bK\\sL\"qT",
	"nW\nlN\ttB",
	"ünïcödé😀",
	"Qx 9z Vv 7k",
}

// grams are the character sequences of p of length 3 (in runes).
func grams(p string) []string {
	r := []rune(p)
	var out []string
	for i := 0; i+3 <= len(r); i++ {
		out = append(out, string(r[i:i+3]))
	}
	return out
}

func TestOpenURLErrorsHideThePassword(t *testing.T) {
	for _, pw := range passwords {
		for _, raw := range []string{
			"redis://:" + pw + "@127.0.0.1:6379/0",
			"redis://user:" + pw + "@cache.internal/0",
			"rediss://" + pw + ":" + pw + "@cache.internal:6380",
			"unix://:" + pw + "@/run/redis.sock",
			"redis://:" + pw + "@127.0.0.1:notaport/0",
			"redis://:" + pw + "@127.0.0.1:6379/notadb",
			"http://:" + pw + "@127.0.0.1:6379",
		} {
			s, err := Open(raw, nil)
			// The error is the one of a stand-in password of its kind.
			stand := "Ab"
			if checkUserinfo(raw) != nil {
				stand = "A/b"
			}
			s2, err2 := Open(strings.ReplaceAll(raw, pw, stand), nil)
			if s2 != nil {
				s2.Close()
			}
			if fmt.Sprint(err) != fmt.Sprint(err2) {
				t.Errorf("Open(%q): the error depends on the password: %v, not %v", raw, err, err2)
			}
			if err == nil {
				s.Close()
				if checkUserinfo(raw) != nil {
					t.Errorf("Open(%q) took a password to escape", raw)
				}
				continue
			}
			msg := err.Error()
			for _, g := range grams(pw) {
				if strings.Contains(msg, g) {
					t.Errorf("Open(%q): the error shows %q of the password: %s", raw, g, msg)
				}
			}
			if !utf8.ValidString(msg) || strings.ContainsAny(msg, "\n") {
				t.Errorf("Open(%q): %q", raw, msg)
			}
		}
	}
	// What the error says: the host, and to escape the password.
	_, err := Open("redis://:ab/cd#ef@cache.internal:6379/0", nil)
	if err == nil || !strings.Contains(err.Error(), "redis://cache.internal:6379") || !strings.Contains(err.Error(), "percent-escape") {
		t.Errorf("unescaped password: %v", err)
	}
	// The same password escaped is taken.
	s, err := Open("redis://:ab%2Fcd%23ef@cache.internal:6379/0", nil)
	if err != nil {
		t.Fatalf("escaped password: %v", err)
	}
	s.Close()
}

// FuzzOpenURL: whatever the password, Open's error is one of two texts
// that do not depend on it (one for a password to escape, one for a URL
// go-redis refuses), or there is none.
func FuzzOpenURL(f *testing.F) {
	for _, pw := range passwords {
		f.Add(pw)
	}
	_, escape := Open("redis://:a/b@cache.internal:6379/0", nil)
	if escape == nil {
		f.Fatal("an unescaped '/' was taken")
	}
	f.Fuzz(func(t *testing.T, pw string) {
		s, err := Open("redis://:"+pw+"@cache.internal:6379/0", nil)
		if err == nil {
			s.Close()
			return
		}
		if err.Error() != escape.Error() && !strings.HasPrefix(err.Error(), "redisstore: redis://cache.internal:6379 is not a URL go-redis reads") {
			t.Fatalf("Open with password %q: %v", pw, err)
		}
	})
}
