package audit

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/conduitmcp/conduit/internal/textsafe"
)

// Reading prose: cleaning it for the patterns, its sentences and
// negations, the tokens that may name a tool, and excerpts.

const excerptRunes = 60 // of context each side of a match

// clean prepares prose for the patterns: invisible characters removed
// (so that a zero-width space cannot split a word a pattern looks for),
// whitespace runs one space (one newline when they hold one: a line ends
// a sentence), typographic apostrophes plain.
func clean(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	var space rune // ' ' or '\n' to write before the next character
	for _, r := range s {
		switch {
		case r == '\u2019' || r == '\u2018':
			r = '\''
		case r == '\n':
			space = '\n'
			continue
		case unicode.IsSpace(r):
			if space == 0 {
				space = ' '
			}
			continue
		case textsafe.Invisible(r):
			continue
		}
		if space != 0 && b.Len() > 0 {
			b.WriteRune(space)
		}
		space = 0
		b.WriteRune(r)
	}
	return b.String()
}

// sentence returns the sentence of c that holds the match m.
func sentence(c string, m []int) string {
	start := 0
	// A full stop ends a sentence only when a space follows it (not the
	// dot of .env or mcp.json); a line ends one always.
	for i := m[0] - 1; i > 0; i-- {
		if c[i] == '\n' || (strings.IndexByte(".!?;", c[i-1]) >= 0 && c[i] == ' ') {
			start = i
			break
		}
	}
	end := len(c)
	for i := m[1]; i < len(c); i++ {
		if c[i] == '\n' || (strings.IndexByte(".!?;", c[i]) >= 0 && (i+1 == len(c) || c[i+1] == ' ')) {
			end = i
			break
		}
	}
	return c[start:end]
}

// negated reports whether the sentence holding position i says not,
// never, avoid, without or no before it.
func negated(c string, i int) bool {
	start := strings.LastIndexAny(c[:i], ".!?;:\n") + 1
	return negation.MatchString(c[start:i])
}

// firstMatch returns the first match of any pattern; with negatable, a
// match whose sentence says not, never, avoid... before it is skipped.
func firstMatch(c, l string, patterns []pattern, negatable bool) []int {
	for _, p := range patterns {
		for _, m := range p.all(c, l) {
			if negatable && negated(c, m[0]) {
				continue
			}
			return m
		}
	}
	return nil
}

// namesParameter reports whether a sentence designates the parameter
// name: quoted, or "the context parameter" (a bare word is often prose:
// "this command").
func namesParameter(s, name string) bool {
	for _, q := range []string{"'", `"`, "`"} {
		if strings.Contains(s, q+name+q) {
			return true
		}
	}
	for i := 0; ; {
		j := strings.Index(s[i:], name)
		if j < 0 {
			return false
		}
		start := i + j
		i = start + len(name)
		if start > 0 && isWordByte(s[start-1]) {
			continue
		}
		rest := strings.TrimLeft(s[i:], " ")
		if len(rest) == len(s[i:]) {
			continue // no space after the name
		}
		for _, w := range []string{"parameter", "param", "field", "argument"} {
			if strings.HasPrefix(rest, w) && (len(rest) == len(w) || !isWordByte(rest[len(w)]) || rest[len(w)] == 's') {
				return true
			}
		}
	}
}

// tokens returns the spans of c that may name a tool: runs of letters,
// digits and _ . / -, less the . / - they begin or end with.
func tokens(c string) [][]int {
	var out [][]int
	start := -1
	flush := func(end int) {
		for end > start && strings.IndexByte("./-", c[end-1]) >= 0 {
			end--
		}
		for start < end && strings.IndexByte("./-", c[start]) >= 0 {
			start++
		}
		if end-start >= 2 {
			out = append(out, []int{start, end})
		}
		start = -1
	}
	for i := 0; i < len(c); i++ {
		if isWordByte(c[i]) || strings.IndexByte("./-", c[i]) >= 0 {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			flush(i)
		}
	}
	if start >= 0 {
		flush(len(c))
	}
	return out
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// excerpt is the text around c[m[0]:m[1]], on one line.
func excerpt(c string, m []int) string {
	if c == "" {
		return ""
	}
	start, end := m[0], m[1]
	for n := 0; start > 0 && n < excerptRunes; n++ {
		_, size := utf8.DecodeLastRuneInString(c[:start])
		start -= size
	}
	for n := 0; end < len(c) && n < excerptRunes; n++ {
		_, size := utf8.DecodeRuneInString(c[end:])
		end += size
	}
	out := textsafe.EscapeLine(c[start:end])
	if start > 0 {
		out = "…" + out
	}
	if end < len(c) {
		out += "…"
	}
	return out
}
