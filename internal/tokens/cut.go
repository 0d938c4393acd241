package tokens

import (
	"strings"
	"unicode/utf8"
)

// CutText returns the longest beginning of s whose estimate is at most
// budget tokens, ended at a line break when there is one in its last
// quarter, and never inside a UTF-8 sequence. It returns s itself when s
// is within the budget, "" when budget is not positive.
func CutText(s string, budget int) string {
	if budget <= 0 {
		return ""
	}
	var c Counter
	stop := feed(&c, s, budget)
	if stop >= len(s) {
		return s
	}
	kept := s[:stop] // feed stops at the start of a rune
	if i := strings.LastIndexByte(kept, '\n'); i >= 0 && i >= len(kept)-len(kept)/4 {
		kept = kept[:i+1]
	}
	return kept
}

// CutJSON returns valid JSON text of at most budget tokens made of the
// beginning of s, which must be valid JSON: the elements and members that
// fit, whole, with the arrays and objects left open closed, and the last
// string value that fits in part cut at a character. A number or literal
// is never cut. ok is false when nothing fits (the budget is smaller than
// the closing brackets, or s is a number); out is then "".
func CutJSON(s string, budget int) (out string, ok bool) {
	if Text(s) <= budget {
		return s, true
	}
	limit := budget
	for range 8 {
		if limit <= 0 {
			return "", false
		}
		var c Counter
		stop := feed(&c, s, limit)
		out, ok = closeJSON(s, stop)
		if !ok {
			return "", false
		}
		n := Text(out)
		if n <= budget {
			return out, true
		}
		limit -= n - budget // room for the closing brackets
	}
	return "", false
}

// closeJSON returns s[:stop] cut back to its last point where closing the
// open string, arrays and objects makes valid JSON, and so closed.
func closeJSON(s string, stop int) (string, bool) {
	var (
		stack     []byte // '}' or ']' for each open container
		keyNext   []bool // per open object: the next string is a key
		safe      = -1   // s[:safe] + closers is valid
		safeDepth int
		safeQuote bool // cut inside a string value: close it first
		inStr     bool
		isKey     bool
		esc       int // bytes of an escape still to come
		inScalar  bool
	)
	mark := func(at int, quote bool) { safe, safeDepth, safeQuote = at, len(stack), quote }
	// valueDone is called after a complete value ending before at.
	valueDone := func(at int) {
		if len(stack) == 0 || stack[len(stack)-1] == ']' || !keyNext[len(keyNext)-1] {
			mark(at, false)
		}
	}
	for i := 0; i < stop; i++ {
		b := s[i]
		if inStr {
			switch {
			case esc > 0:
				if esc == 1 && s[i-1] == '\\' && b == 'u' {
					esc = 5
				}
				esc--
			case b == '\\':
				esc = 1
			case b == '"':
				inStr = false
				if isKey {
					continue
				}
				valueDone(i + 1)
				continue
			}
			if !isKey && esc == 0 && i+1 < len(s) && utf8.RuneStart(s[i+1]) && s[i+1] != '"' {
				mark(i+1, true)
			}
			continue
		}
		if inScalar {
			switch b {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				inScalar = false
				valueDone(i)
			default:
				continue
			}
		}
		switch b {
		case '"':
			inStr, esc = true, 0
			isKey = len(stack) > 0 && stack[len(stack)-1] == '}' && keyNext[len(keyNext)-1]
			if !isKey {
				mark(i+1, true)
			}
		case '{', '[':
			if b == '{' {
				stack = append(stack, '}')
			} else {
				stack = append(stack, ']')
			}
			keyNext = append(keyNext, b == '{')
			mark(i+1, false)
		case '}', ']':
			stack, keyNext = stack[:len(stack)-1], keyNext[:len(keyNext)-1]
			valueDone(i + 1)
		case ':':
			keyNext[len(keyNext)-1] = false
		case ',':
			if len(keyNext) > 0 && stack[len(stack)-1] == '}' {
				keyNext[len(keyNext)-1] = true
			}
		case ' ', '\t', '\n', '\r':
		default:
			inScalar = true
		}
	}
	if safe < 0 {
		return "", false
	}
	var b strings.Builder
	b.Grow(safe + safeDepth + 1)
	b.WriteString(s[:safe])
	if safeQuote {
		b.WriteByte('"')
	}
	for i := safeDepth - 1; i >= 0; i-- {
		b.WriteByte(stack[i])
	}
	return b.String(), true
}
