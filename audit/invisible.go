package audit

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/conduitmcp/conduit/internal/textsafe"
)

// The invisible-character rule: what it counts (conduit's one table,
// internal/textsafe), less an emoji's own joiners and selectors, and the
// length of a description as a model reads it without them.

// invisibleChars reports the invisible characters of s, less an emoji's
// own variation selector and zero-width joiner.
func invisibleChars(s string) (msg, ex string, ok bool) {
	runes := []rune(s)
	counts := map[textsafe.Class]int{}
	var order []textsafe.Class
	var tags strings.Builder
	first := -1
	for i, r := range runes {
		class := textsafe.ClassOf(r)
		if class == textsafe.None || benignInvisible(runes, i) {
			continue
		}
		if first < 0 {
			first = i
		}
		if counts[class] == 0 {
			order = append(order, class)
		}
		counts[class]++
		if r >= 0xe0020 && r <= 0xe007e {
			tags.WriteRune(r - 0xe0000)
		}
	}
	if first < 0 {
		return "", "", false
	}
	var parts []string
	total := 0
	for _, c := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
		total += counts[c]
	}
	msg = fmt.Sprintf("%d invisible %s (%s)", total, plural(total, "character", "characters"), strings.Join(parts, ", "))
	if tags.Len() > 0 {
		msg += fmt.Sprintf("; the tag characters spell %q", tags.String())
	}
	lo, hi := max(0, first-excerptRunes/2), min(len(runes), first+excerptRunes)
	ex = textsafe.EscapeLine(string(runes[lo:hi]))
	if lo > 0 {
		ex = "…" + ex
	}
	if hi < len(runes) {
		ex += "…"
	}
	return msg, ex, true
}

// benignInvisible reports whether runes[i] belongs to an emoji: a
// variation selector after a symbol (⚠️), a joiner between two symbols
// (👩‍💻), a selector before a keycap (1️⃣).
func benignInvisible(runes []rune, i int) bool {
	r := runes[i]
	prev, next := rune(0), rune(0)
	if i > 0 {
		prev = runes[i-1]
	}
	if i+1 < len(runes) {
		next = runes[i+1]
	}
	switch r {
	case 0xfe0f, 0xfe0e:
		return emojiBase(prev) || next == 0x20e3
	case 0x200d:
		return (emojiBase(prev) || prev == 0xfe0f) && emojiBase(next)
	}
	return false
}

func emojiBase(r rune) bool {
	return unicode.Is(unicode.So, r) || (r >= 0x1f000 && r <= 0x1faff) || (r >= 0x2600 && r <= 0x27bf)
}

// visibleLen is the length in bytes of s as listing cleans it
// (toolcall.Description) before the cut: invalid UTF-8 replaced, the
// invisible characters removed.
func visibleLen(s string) int {
	n := 0
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if !textsafe.Invisible(r) {
			n += utf8.RuneLen(r)
		}
	}
	return n
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
