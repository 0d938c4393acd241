// Package textsafe is conduit's one table of the characters that hide
// text from a person while a model still reads it. It is also the one way
// they are written out for a reviewer. Listing removes them from what a
// model reads. The audit reports them. Pin diffs and the lock file escape
// them. All use this table, so they never disagree about a character.
package textsafe

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Class is a kind of invisible character. The zero value, None, is a
// character that is not invisible.
type Class int

// The classes, each a set of code points that render as nothing. Their
// union is:
//
//   - the control characters (Cc) but tab, newline and carriage return;
//   - every format character (Cf);
//   - the line and paragraph separators (Zl, Zp);
//   - every variation selector (Variation_Selector);
//   - the rest of Unicode's default-ignorable code points
//     (Other_Default_Ignorable_Code_Point). These are fillers, the
//     combining grapheme joiner, and unassigned code points that renderers
//     must show as nothing. Examples are U+FFF0–U+FFF8 and the rest of
//     U+E0000–U+E0FFF.
const (
	None Class = iota
	// Control: C0 controls but tab, newline and carriage return, DEL, and
	// C1 controls (U+0000–U+001F, U+007F–U+009F).
	Control
	// Bidi: the bidirectional controls that can reorder what a reader
	// sees (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069).
	Bidi
	// ZeroWidth: the zero-width spaces, joiners and invisible operators
	// (U+034F, U+180E, U+200B–U+200D, U+2060–U+2064, U+FEFF).
	ZeroWidth
	// Tag: the tag characters U+E0000–U+E007F, which can spell a whole
	// hidden ASCII text (U+E0041 is a hidden "A").
	Tag
	// VariationSelector: U+180B–U+180D, U+180F, U+FE00–U+FE0F and
	// U+E0100–U+E01EF.
	VariationSelector
	// Filler: letters that show as nothing (the Hangul fillers U+115F,
	// U+1160, U+3164, U+FFA0 and the Khmer inherent vowels U+17B4,
	// U+17B5).
	Filler
	// LineSeparator: U+2028 and U+2029, which many renderers show as
	// nothing.
	LineSeparator
	// Format: every other format character (the soft hyphen U+00AD,
	// U+206A–U+206F, the interlinear annotation characters U+FFF9–U+FFFB,
	// ...) and the unassigned default-ignorable code points.
	Format
)

var classNames = [...]string{
	None:              "visible",
	Control:           "control characters",
	Bidi:              "bidi controls",
	ZeroWidth:         "zero-width",
	Tag:               "tags",
	VariationSelector: "variation selectors",
	Filler:            "fillers",
	LineSeparator:     "line separators",
	Format:            "other format characters",
}

// String names the class in the plural, as a report counts them
// ("2 zero-width", "3 bidi controls").
func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

// ClassOf returns the class of r, or None when r is not invisible.
func ClassOf(r rune) Class {
	switch {
	case r < 0x20:
		if r == '\t' || r == '\n' || r == '\r' {
			return None
		}
		return Control
	case r < 0x7f:
		return None
	case r < 0xa0:
		return Control
	case r < 0xad:
		return None
	}
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return Bidi
	case r == 0x034f, r == 0x180e, r >= 0x200b && r <= 0x200d, r >= 0x2060 && r <= 0x2064, r == 0xfeff:
		return ZeroWidth
	case r >= 0xe0000 && r <= 0xe007f:
		return Tag
	case r >= 0x180b && r <= 0x180d, r == 0x180f, r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef:
		return VariationSelector
	case r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5, r == 0x3164, r == 0xffa0:
		return Filler
	case r == 0x2028, r == 0x2029:
		return LineSeparator
	case r == 0x2065, r >= 0xfff0 && r <= 0xfff8, r >= 0xe0080 && r <= 0xe0fff:
		// Unassigned, but default-ignorable: a renderer shows nothing.
		return Format
	}
	if unicode.Is(unicode.Cf, r) {
		return Format
	}
	return None
}

// Invisible reports whether r shows as nothing: whether it is in one of
// the classes. Tab, newline and carriage return are not invisible.
func Invisible(r rune) bool { return ClassOf(r) != None }

// Hidden reports whether a reviewer's terminal would show r as nothing,
// or as something other than it is. That is an invisible character, or
// one that is not printable (a space other than U+0020, private use,
// unassigned). U+2800, the blank braille pattern, is hidden too: it shows
// as a space. So is U+FFFD, which also stands for invalid UTF-8. Space,
// tab and newline are not hidden.
func Hidden(r rune) bool {
	switch {
	case r == ' ' || r == '\t' || r == '\n':
		return false
	case r < utf8.RuneSelf:
		return r < 0x20 || r == 0x7f
	case r == utf8.RuneError || r == 0x2800:
		return true
	}
	return Invisible(r) || !unicode.IsPrint(r)
}

// Escape writes each hidden character of s (see [Hidden]) as a JSON
// string escape: \u and four lowercase hex digits. Beyond U+FFFF it
// writes a UTF-16 surrogate pair, so U+E0041 is \udb40\udc41. The rest
// stays as it is. The escapes are those of encoding/json and RFC 8785.
// So JSON text still decodes to the same value. A reviewer can paste what
// he reads into a JSON string.
func Escape(s string) string { return escape(s, false) }

// EscapeLine is [Escape] for text shown on one line: newlines are written
// as \n too.
func EscapeLine(s string) string { return escape(s, true) }

func escape(s string, line bool) string {
	hidden := func(r rune) bool { return Hidden(r) || line && r == '\n' }
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	const hex = "0123456789abcdef"
	u := func(b *strings.Builder, r rune) {
		b.WriteString(`\u`)
		b.WriteByte(hex[r>>12&0xf])
		b.WriteByte(hex[r>>8&0xf])
		b.WriteByte(hex[r>>4&0xf])
		b.WriteByte(hex[r&0xf])
	}
	var b strings.Builder
	b.Grow(len(s) + 12)
	for _, r := range s {
		switch {
		case r == '\n' && line:
			b.WriteString(`\n`)
		case !hidden(r):
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			u(&b, r1)
			u(&b, r2)
		default:
			u(&b, r)
		}
	}
	return b.String()
}
