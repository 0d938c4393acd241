package textsafe

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestTableIsUnicodes: the table is exactly the union its doc names, read
// from Unicode's own tables as the standard library carries them, over
// every code point.
func TestTableIsUnicodes(t *testing.T) {
	want := func(r rune) bool {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return false
		case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r),
			unicode.Is(unicode.Variation_Selector, r), unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
			return true
		}
		return false
	}
	n := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if got := Invisible(r); got != want(r) {
			t.Errorf("Invisible(%U) = %v, Unicode says %v", r, got, want(r))
			if n++; n > 20 {
				t.FailNow()
			}
		}
	}
}

// TestClasses: every class, at each end of each of its ranges and just
// outside them.
func TestClasses(t *testing.T) {
	in := map[Class][]rune{
		Control: {0x00, 0x08, 0x0b, 0x0c, 0x0e, 0x1f, 0x7f, 0x80, 0x85, 0x9f},
		Bidi:    {0x061c, 0x200e, 0x200f, 0x202a, 0x202e, 0x2066, 0x2069},
		ZeroWidth: {0x034f, 0x180e, 0x200b, 0x200c, 0x200d, 0x2060, 0x2064,
			0xfeff},
		Tag:               {0xe0000, 0xe0001, 0xe0020, 0xe0041, 0xe007e, 0xe007f},
		VariationSelector: {0x180b, 0x180d, 0x180f, 0xfe00, 0xfe0f, 0xe0100, 0xe01ef},
		Filler:            {0x115f, 0x1160, 0x17b4, 0x17b5, 0x3164, 0xffa0},
		LineSeparator:     {0x2028, 0x2029},
		Format: {0x00ad, 0x0600, 0x0605, 0x06dd, 0x070f, 0x2065, 0x206a, 0x206f,
			0xfff0, 0xfff8, 0xfff9, 0xfffb, 0x110bd, 0x13430, 0x1bca0, 0x1d173, 0x1d17a,
			0xe0080, 0xe00ff, 0xe01f0, 0xe0fff},
	}
	// Neighbours of the ranges above that are visible, or whitespace.
	visible := []rune{'\t', '\n', '\r', ' ', '~', 'a', 0xa0, 0xac, 0xae, 0x034e, 0x0350, 0x061b, 0x061d,
		0x115e, 0x1161, 0x17b3, 0x17b6, 0x180a, 0x1810, 0x2000, 0x200a, 0x2010, 0x2027, 0x202f,
		0x205f, 0x2070, 0x3163, 0x3165, 0xfdff, 0xfe10, 0xfefe, 0xff00, 0xff9f, 0xffa1,
		0xffef, 0xfffc, 0xfffd, 0x2800, 0xdffff, 0xe1000, 0x1f600, 0x10ffff}
	seen := map[Class]bool{}
	for class, rs := range in {
		seen[class] = true
		for _, r := range rs {
			if got := ClassOf(r); got != class {
				t.Errorf("ClassOf(%U) = %v, want %v", r, got, class)
			}
			if !Invisible(r) || !Hidden(r) {
				t.Errorf("%U: Invisible %v, Hidden %v", r, Invisible(r), Hidden(r))
			}
		}
	}
	for c := None + 1; c <= Format; c++ {
		if !seen[c] {
			t.Errorf("class %v is not tested", c)
		}
		if c.String() == "unknown" || c.String() == None.String() {
			t.Errorf("class %d has no name", c)
		}
	}
	for _, r := range visible {
		if c := ClassOf(r); c != None {
			t.Errorf("ClassOf(%U) = %v, want none", r, c)
		}
	}
}

func TestHidden(t *testing.T) {
	for _, r := range []rune{'\r', 0x00, 0x7f, 0xa0, 0x2000, 0x3000, 0x202f, 0x2800, 0xfffd, 0xe000, 0xf8ff, 0xf0000, 0x10fffd, 0x0378, 0xfffe, 0x200b} {
		if !Hidden(r) {
			t.Errorf("Hidden(%U) = false", r)
		}
	}
	for _, r := range []rune{' ', '\t', '\n', 'a', '~', 'é', '中', 0x1f600, 0x2603} {
		if Hidden(r) {
			t.Errorf("Hidden(%U) = true", r)
		}
	}
}

func TestEscape(t *testing.T) {
	for _, tt := range []struct{ in, escape, line string }{
		{"plain text\n", "plain text\n", `plain text\n`},
		{"a\u200bb\U000e0041\u202e\t", `a\u200bb\udb40\udc41\u202e` + "\t", `a\u200bb\udb40\udc41\u202e` + "\t"},
		{"nbsp\u00a0é\r\n", `nbsp\u00a0é\u000d` + "\n", `nbsp\u00a0é\u000d\n`},
		{"bad \xff utf-8", `bad \ufffd utf-8`, `bad \ufffd utf-8`},
		{"⚠\ufe0f", `⚠\ufe0f`, `⚠\ufe0f`},
	} {
		if got := Escape(tt.in); got != tt.escape {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.escape)
		}
		if got := EscapeLine(tt.in); got != tt.line {
			t.Errorf("EscapeLine(%q) = %q, want %q", tt.in, got, tt.line)
		}
	}
	if s := "no work"; Escape(s) != s {
		t.Error("a clean string is changed")
	}
}

// FuzzEscape: an escaped line shows no hidden character and, read as the
// body of a JSON string, is the text it escaped.
func FuzzEscape(f *testing.F) {
	f.Add("Adds two numbers.\u200b\U000E0049\U000E0067\u202e\n\u00a0")
	f.Add("\xff\xfe plain")
	f.Fuzz(func(t *testing.T, s string) {
		out := EscapeLine(s)
		if strings.ContainsFunc(out, func(r rune) bool { return Hidden(r) || r == '\n' }) {
			t.Fatalf("EscapeLine(%q) = %q shows a hidden character", s, out)
		}
		if !utf8.ValidString(s) || strings.ContainsAny(s, "\"\\\t") {
			return // JSON would have escaped these itself
		}
		var back string
		if err := json.Unmarshal([]byte(`"`+out+`"`), &back); err != nil || back != s {
			t.Fatalf("EscapeLine(%q) = %q reads back as %q (%v)", s, out, back, err)
		}
	})
}
