package names

import (
	"regexp"
	"strings"
	"testing"
)

var exposedRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

func TestSanitize(t *testing.T) {
	long64 := strings.Repeat("a", 64)
	long65 := strings.Repeat("a", 65)
	tests := []struct {
		in, want string
	}{
		{"get_issue", "get_issue"},
		{"get-issue", "get-issue"},
		{"_private", "_private"},
		{"Read", "Read"},
		{"files.read", "files_read"},
		{"fs/read/file", "fs_read_file"},
		{"a b\tc", "a_b_c"},
		{"1password", "_1password"},
		{"-dash", "_-dash"},
		{"9", "_9"},
		{"", "_"},
		{"héllo", "h_llo"},     // one rune, one '_'
		{"日本語", "____"},        // leading '_' then one per rune
		{"emoji😀x", "emoji_x"}, // a 4-byte rune is one '_'
		{"\xff\xfe", "___"},    // invalid UTF-8: one '_' per bad byte
		{"a:b@c", "a_b_c"},
		{long64, long64},
	}
	for _, tt := range tests {
		got := Sanitize(tt.in)
		if got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !exposedRE.MatchString(got) {
			t.Errorf("Sanitize(%q) = %q does not match %v", tt.in, got, exposedRE)
		}
	}

	got := Sanitize(long65)
	if len(got) != MaxLen || !strings.HasPrefix(got, strings.Repeat("a", MaxLen-hashLen-1)+"_") {
		t.Errorf("Sanitize(65 a's) = %q (%d chars)", got, len(got))
	}
	if Sanitize(long65) != got {
		t.Error("the hash suffix is not stable")
	}
	// The hash is over the whole name: two long names that share far more
	// than the kept prefix stay distinct.
	shared := strings.Repeat("x", 60)
	a, b := Sanitize(shared+"_alpha_tool"), Sanitize(shared+"_bravo_tool")
	if a == b || len(a) != MaxLen || len(b) != MaxLen {
		t.Errorf("long names: %q and %q", a, b)
	}
	if !exposedRE.MatchString(a) || !exposedRE.MatchString(b) {
		t.Errorf("long names do not match the exposed pattern: %q %q", a, b)
	}
	// A long name with a leading digit gets its '_' and is still capped.
	if got := Sanitize("9" + long65); len(got) != MaxLen || got[0] != '_' {
		t.Errorf("leading digit long name: %q", got)
	}
	// A known value pins the hash (sha256, 8 hex digits) across releases,
	// so exposed names stay the same between versions and turns.
	if got, want := Sanitize(long65), strings.Repeat("a", 55)+"_"+"635361c4"; got != want {
		t.Errorf("pinned hash: got %q, want %q", got, want)
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "a", "files.read", "9x", strings.Repeat("é", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Sanitize(s)
		if !exposedRE.MatchString(got) {
			t.Fatalf("Sanitize(%q) = %q", s, got)
		}
		if Sanitize(got) != got {
			t.Fatalf("Sanitize is not idempotent on %q: %q -> %q", s, got, Sanitize(got))
		}
	})
}
