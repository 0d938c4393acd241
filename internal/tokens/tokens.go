// Package tokens estimates how many tokens a model reads. It counts text,
// and images by each provider's documented rule. It cuts text and JSON to
// a number of tokens at clean boundaries ([Fit] over a result's pieces).
// It does the counting and cutting under the result budget. The adapters
// apply it to rendered answers, adapters.CutForModel to MCP results. It
// knows nothing of MCP or of providers' payloads.
//
// # The text estimator
//
// No provider's tokenizer can run here. Anthropic's and Gemini's are not
// public. OpenAI's o200k_base needs a 3.6 MB vocabulary and a regular
// expression engine. [Text] instead follows the first step of a BPE
// tokenizer: o200k's split of text into pieces. The pieces are words with
// one leading space or mark, runs of up to three digits, runs of
// punctuation with a leading space, and runs of white space. Each piece
// costs what o200k typically makes of it:
//
//   - a word of up to six letters is one token, plus one per four letters
//     past that;
//   - capitals after the first count three times;
//   - a word glued to digits, as in hashes, has no free letters;
//   - Greek or Cyrillic costs one per four letters, other alphabets one
//     per three;
//   - CJK ideographs, kana or Hangul cost four per five;
//   - digits cost one per three, punctuation one per two marks, white
//     space one per eight characters.
//
// It reads each byte once through a table, and allocates nothing.
//
// The constants were fitted against o200k_base on real outputs. Those
// were code, prose, JSON, directory trees, environment variables, a
// package lock full of hashes, and eight languages (BENCHMARKS.md, "Result
// budget"). The estimate errs on the side of counting more than o200k. A
// budget protects the context, and a short count lets through more than
// the model can hold. Anthropic's and Gemini's tokenizers count the same
// text differently; the adapters' budget corrects for them.
package tokens

import (
	"unicode"
	"unicode/utf8"
)

// The byte classes of the estimator.
const (
	cLower   = iota // a-z
	cUpper          // A-Z
	cDigit          // 0-9
	cSpace          // space
	cWhite          // tab, and the other white space but line breaks
	cNewline        // \n, \r
	cPunct          // every other ASCII byte, controls included
	cHigh           // a byte of a multi-byte UTF-8 sequence, or an invalid one
)

var classes = func() (t [256]uint8) {
	for i := range t {
		b := byte(i)
		switch {
		case b >= 'a' && b <= 'z':
			t[i] = cLower
		case b >= 'A' && b <= 'Z':
			t[i] = cUpper
		case b >= '0' && b <= '9':
			t[i] = cDigit
		case b == '\n' || b == '\r':
			t[i] = cNewline
		case b == ' ':
			t[i] = cSpace
		case b == '\t' || b == '\v' || b == '\f':
			t[i] = cWhite
		case b < utf8.RuneSelf:
			t[i] = cPunct
		default:
			t[i] = cHigh
		}
	}
	return t
}()

// The kinds of piece.
const (
	pNone     = iota
	pWord     // letters, with one leading space or mark
	pIdeo     // CJK ideographs, kana, Hangul: a token each
	pDigits   // digits: a token per three
	pPunct    // punctuation and symbols
	pSpace    // spaces or tabs not followed by a word
	pNewline  // line breaks, with the spaces before them
	pPunctEOL // marks that line breaks ended
)

// The constants of the estimate (see the package doc), fitted against
// o200k_base.
const (
	wordFree  = 6 // letters a word's first token covers
	wordStep  = 4 // letters each further token covers
	capUnits  = 6 // a capital after a word's first counts as three letters
	nearStep  = 4 // letters of Greek, Cyrillic, Armenian per token, past the first
	otherStep = 3 // letters of other scripts per token, past the first
	ideoFree  = 5 // of every five ideographs, one is free
	digitStep = 3 // digits per token, as o200k splits numbers
	punctStep = 2 // marks of punctuation per token
	spaceStep = 8 // white space per token in a run
)

// Counter counts tokens in text given in pieces, as [Text] does the
// whole: Write the text, then Tokens. Its zero value is ready; it does not
// allocate. A text split anywhere counts as the whole, but for a UTF-8
// sequence split across two writes, whose bytes count as marks.
type Counter struct {
	total int // tokens of the pieces done and of the current one so far
	kind  int // the current piece
	n     int // its length: ASCII letters, digits, marks or spaces
	other int // a word's letters of other scripts
	paid  int // the units of a word that the tokens charged cover
	upper bool
	// pend is a single space, other white space or mark that may join a
	// word that follows (kind is then pNone): it costs a token only if
	// none does. A space may also lead a run of marks.
	pend int
	// glued is set on a word that follows digits without a break, as in
	// hashes and base64, which o200k splits finely.
	glued bool
	// spaceLast is set on a run of white space that ends with a space.
	spaceLast bool
}

// What pend holds.
const (
	pendNone = iota
	pendSpace
	pendWhite
	pendMark
)

// Tokens returns the estimate for everything written so far.
func (c *Counter) Tokens() int {
	if c.pend != pendNone {
		return c.total + 1
	}
	return c.total
}

// Write counts p. It never fails.
func (c *Counter) Write(p []byte) (int, error) {
	feed(c, p, 0)
	return len(p), nil
}

// WriteString counts s. It never fails.
func (c *Counter) WriteString(s string) (int, error) {
	feed(c, s, 0)
	return len(s), nil
}

// Text returns the estimated tokens of s.
func Text(s string) int {
	var c Counter
	feed(&c, s, 0)
	return c.Tokens()
}

// feed counts s in c. When limit > 0 it stops before the first byte that would
// take the estimate of what was fed over limit, and returns that byte's
// offset in s (len(s) when none does): the estimate of s[:stop] is then at
// most limit.
func feed[T ~string | ~[]byte](c *Counter, s T, limit int) (stop int) {
	for i := 0; i < len(s); {
		b := s[i]
		cls := int(classes[b])
		if cls == cLower && c.kind == pWord && c.n > 0 && limit == 0 {
			// The common case, kept out of add: a word goes on.
			c.n += 2
			if c.n > c.paid {
				c.paid += 2 * wordStep
				c.total++
			}
			c.upper = false
			i++
			continue
		}
		if b == ' ' && limit == 0 && c.kind == pWord && c.pend == pendNone && i+1 < len(s) && classes[s[i+1]] == cLower {
			// The next common case: a space, then a new word in lower
			// case. It is what add does for the two bytes.
			c.total++
			c.kind, c.n, c.other, c.paid, c.upper, c.glued = pWord, 2, 0, 2*wordFree, false, false
			c.spaceLast = true
			i += 2
			continue
		}
		size := 1
		r := rune(b)
		if cls == cHigh {
			r, size = decodeRune(s[i:])
			cls = runeClass(r)
		}
		if limit > 0 {
			before := *c
			c.add(cls, r)
			if c.Tokens() > limit {
				*c = before
				return i
			}
		} else {
			c.add(cls, r)
		}
		i += size
	}
	return len(s)
}

// decodeRune decodes the rune at the start of s, without allocating for
// either type of s.
func decodeRune[T ~string | ~[]byte](s T) (rune, int) {
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], s[:min(len(s), utf8.UTFMax)])
	return utf8.DecodeRune(buf[:n])
}

// The classes of non-ASCII runes, after the byte classes.
const (
	cLetter = iota + cHigh + 1 // a letter of an alphabet, or a mark
	cIdeo                      // an ideograph, kana or Hangul
)

func runeClass(r rune) int {
	switch {
	case r == utf8.RuneError:
		return cPunct
	case isIdeo(r):
		return cIdeo
	case unicode.IsLetter(r) || unicode.IsMark(r):
		return cLetter
	case unicode.IsNumber(r):
		return cDigit
	case r == 0x85 || r == 0x2028 || r == 0x2029:
		return cNewline
	case unicode.IsSpace(r):
		return cWhite
	}
	return cPunct
}

// isIdeo reports the scripts whose characters o200k takes about one
// token each: CJK ideographs, kana, Hangul.
func isIdeo(r rune) bool {
	return (r >= 0x1100 && r <= 0x11FF) || // Hangul Jamo
		(r >= 0x2E80 && r <= 0x9FFF) || // CJK radicals, kana, CJK ideographs
		(r >= 0xAC00 && r <= 0xD7AF) || // Hangul syllables
		(r >= 0xF900 && r <= 0xFAFF) || // CJK compatibility ideographs
		(r >= 0x20000 && r <= 0x3FFFF) // CJK extensions
}

// add counts one byte of class cls (r is the rune of a non-ASCII class).
// Its cases follow o200k's pre-tokenizer: a word takes one white space or
// mark before it, but not a mark after a space (" \"name" is two pieces);
// a space leads a run of marks; marks take the line breaks after them;
// white space before a line break goes with it, and the last of a run of
// white space goes with what follows.
func (c *Counter) add(cls int, r rune) {
	switch cls {
	case cLower, cUpper, cLetter:
		upper := cls == cUpper || (cls == cLetter && unicode.IsUpper(r))
		if c.kind != pWord || (upper && !c.upper) {
			// A new word: after anything else, taking a pending space or
			// mark with it, or a camel-case hump.
			glued := c.kind == pDigits && c.pend == pendNone
			c.pend = pendNone
			c.start(pWord)
			c.glued = glued
		}
		c.upper = upper
		if cls == cLetter {
			// Alphabets near Latin's (Greek, Cyrillic, Armenian) merge
			// into longer tokens than the others.
			step := otherStep
			if r < 0x0590 {
				step = nearStep
			}
			c.other++
			if c.other > 1 && (c.other-1)%step == 0 {
				c.total++
			}
			return
		}
		// In units of half a letter: capitals after a word's first cost
		// capUnits, as o200k knows few words in capitals; a word glued to
		// digits gets no free letters.
		switch {
		case c.n == 0 && c.glued:
			c.n, c.paid = 2, 2
		case c.n == 0:
			c.n, c.paid = 2, 2*wordFree // the word's first token
		case upper:
			c.n += capUnits
		default:
			c.n += 2
		}
		for c.n > c.paid {
			c.paid += 2 * wordStep
			c.total++
		}
	case cIdeo:
		if c.kind != pIdeo {
			c.pend = pendNone // a space or mark before them joins them
			c.start(pIdeo)
		}
		c.n++
		if c.n%ideoFree != 0 && c.n > 1 {
			c.total++
		}
	case cDigit:
		c.flushPend()
		if c.kind != pDigits {
			c.start(pDigits)
		}
		c.step(digitStep)
	case cNewline:
		switch {
		case c.pend == pendMark:
			// Line breaks end a run of marks: "{\n", ".\n".
			c.pend = pendNone
			c.start(pPunctEOL)
		case c.kind == pPunct || c.kind == pPunctEOL:
			c.kind = pPunctEOL
		case c.kind == pNewline:
			c.step(spaceStep)
		default:
			// White space before line breaks goes with them.
			c.pend = pendNone
			if c.kind != pSpace {
				c.start(pNewline)
			}
			c.kind = pNewline
		}
	case cSpace, cWhite:
		switch {
		case c.kind == pSpace:
			c.step(spaceStep)
		case c.pend == pendSpace || c.pend == pendWhite:
			// A run of white space, of which the last may yet join what
			// follows: counting it with the run errs by one at most.
			c.pend = pendNone
			c.start(pSpace)
			c.step(spaceStep)
			c.step(spaceStep)
		default:
			c.flushPend()
			c.kind, c.pend = pNone, pendWhite
			if cls == cSpace {
				c.pend = pendSpace
			}
		}
		c.spaceLast = cls == cSpace
	default: // cPunct
		switch {
		case c.kind == pPunct:
			c.step(punctStep)
		case c.pend == pendSpace || (c.kind == pSpace && c.spaceLast):
			// " (": a space leads a run of marks.
			c.pend = pendNone
			c.start(pPunct)
			c.step(punctStep)
		case c.pend == pendMark:
			c.pend = pendNone
			c.start(pPunct)
			c.step(punctStep)
			c.step(punctStep)
		default:
			c.flushPend()
			c.kind, c.pend = pNone, pendMark
		}
	}
}

func (c *Counter) flushPend() {
	if c.pend != pendNone {
		c.pend = pendNone
		c.total++
	}
}

// start begins a piece of kind k, charged its first token.
func (c *Counter) start(k int) {
	c.kind, c.n, c.other, c.paid, c.upper, c.glued = k, 0, 0, 0, false, false
	c.total++
}

// step adds one unit to the current piece, which takes a token per every
// units of them after its first.
func (c *Counter) step(every int) {
	c.n++
	if c.n > every && (c.n-1)%every == 0 {
		c.total++
	}
}
