package conduit

import (
	"regexp"
	"strings"
	"testing"
)

var exposedRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)

func TestSanitizeName(t *testing.T) {
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
		got := SanitizeName(tt.in)
		if got != tt.want {
			t.Errorf("SanitizeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !exposedRE.MatchString(got) {
			t.Errorf("SanitizeName(%q) = %q does not match %v", tt.in, got, exposedRE)
		}
	}

	got := SanitizeName(long65)
	if len(got) != MaxNameLen || !strings.HasPrefix(got, strings.Repeat("a", MaxNameLen-hashLen-1)+"_") {
		t.Errorf("SanitizeName(65 a's) = %q (%d chars)", got, len(got))
	}
	if SanitizeName(long65) != got {
		t.Error("the hash suffix is not stable")
	}
	// The hash is over the whole name: two long names that share far more
	// than the kept prefix stay distinct.
	shared := strings.Repeat("x", 60)
	a, b := SanitizeName(shared+"_alpha_tool"), SanitizeName(shared+"_bravo_tool")
	if a == b || len(a) != MaxNameLen || len(b) != MaxNameLen {
		t.Errorf("long names: %q and %q", a, b)
	}
	if !exposedRE.MatchString(a) || !exposedRE.MatchString(b) {
		t.Errorf("long names do not match the exposed pattern: %q %q", a, b)
	}
	// A long name with a leading digit gets its '_' and is still capped.
	if got := SanitizeName("9" + long65); len(got) != MaxNameLen || got[0] != '_' {
		t.Errorf("leading digit long name: %q", got)
	}
	// A known value pins the hash (sha256, 8 hex digits) across releases,
	// so exposed names stay the same between versions and turns.
	if got, want := SanitizeName(long65), strings.Repeat("a", 55)+"_"+"635361c4"; got != want {
		t.Errorf("pinned hash: got %q, want %q", got, want)
	}
}

func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"", "a", "files.read", "9x", strings.Repeat("é", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := SanitizeName(s)
		if !exposedRE.MatchString(got) {
			t.Fatalf("SanitizeName(%q) = %q", s, got)
		}
		if SanitizeName(got) != got {
			t.Fatalf("SanitizeName is not idempotent on %q: %q -> %q", s, got, SanitizeName(got))
		}
	})
}

func TestValidServerID(t *testing.T) {
	valid := []string{"github", "files", "a", "_x", "my-server", "srv_2", "A", strings.Repeat("s", 32)}
	for _, id := range valid {
		if err := validServerID(id); err != nil {
			t.Errorf("validServerID(%q) = %v, want nil", id, err)
		}
	}
	invalid := map[string]string{
		"":                      "empty",
		"a__b":                  `"__"`,
		"__":                    `"__"`,
		"a.b":                   "must match",
		"a/b":                   "must match",
		"1st":                   "must match",
		"-x":                    "must match",
		"with space":            "must match",
		"ünï":                   "must match",
		strings.Repeat("s", 33): "longer than 32",
	}
	for id, want := range invalid {
		err := validServerID(id)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validServerID(%q) = %v, want an error containing %q", id, err, want)
		}
	}
}

func TestExposedName(t *testing.T) {
	tests := []struct {
		namespace      bool
		server, prefix string
		tool, want     string
	}{
		{true, "github", "", "get_issue", "github__get_issue"},
		{true, "fs", "", "read.file", "fs__read_file"},
		{true, "fs", "x_", "9lives", "x_fs__9lives"}, // a hub's prefix too goes in front
		{false, "fs", "", "9lives", "_9lives"},
		{false, "fs", "gh_", "get", "gh_get"},
		{false, "fs", "", "a/b", "a_b"},
	}
	for _, tt := range tests {
		if got := exposedName(tt.namespace, tt.server, tt.prefix, tt.tool); got != tt.want {
			t.Errorf("exposedName(%v, %q, %q, %q) = %q, want %q", tt.namespace, tt.server, tt.prefix, tt.tool, got, tt.want)
		}
	}
	long := exposedName(true, "server", "", strings.Repeat("t", 80))
	if len(long) != MaxNameLen || !strings.HasPrefix(long, "server__") {
		t.Errorf("long hub name: %q", long)
	}
}
