package tokens

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Piece is one piece of a result as a model reads it, in order, for
// [Fit]: a text, or something kept whole or not at all (an image, a block
// whose text must not be cut).
type Piece struct {
	Text   string // a text piece's text
	Tokens int    // the piece's estimate
	Whole  bool   // kept whole or dropped, never cut
}

// Fitted is what [Fit] kept of pieces: the first Keep whole, then, when
// HasCut, the beginning Cut of the piece after them. The counts describe
// the cut for the notice a model reads after it.
type Fitted struct {
	Keep   int
	Cut    string
	HasCut bool
	// Tokens and Kept are the estimates of all the pieces and of what is
	// kept.
	Tokens, Kept int
	// JSON reports that the piece cut is a JSON text, cut into valid JSON.
	JSON bool
	// Bytes and Lines count the texts' bytes and lines, KeptBytes and
	// KeptLines those kept; the lines are 0 when they say little (JSON,
	// or a single line).
	Bytes, KeptBytes, Lines, KeptLines int
}

// Over reports that the pieces were over the budget: something was cut or
// dropped.
func (f Fitted) Over() bool { return f.Kept < f.Tokens }

// Fit keeps pieces in order while they fit budget tokens. The first that
// does not fit is cut (a JSON text, whose structure matters, into valid
// JSON; any other text at a line break or a character), or dropped when it
// is Whole or nothing of it fits; the pieces after it are dropped. Within
// the budget (or with budget 0 or less) every piece is kept.
func Fit(pieces []Piece, budget int) Fitted {
	var f Fitted
	for _, p := range pieces {
		f.Tokens += p.Tokens
		if !p.Whole {
			f.Bytes += len(p.Text)
			f.Lines += Lines(p.Text)
		}
	}
	f.Kept = f.Tokens
	if budget <= 0 || f.Tokens <= budget {
		f.Keep, f.KeptBytes, f.KeptLines = len(pieces), f.Bytes, f.Lines
		f.trimLines()
		return f
	}
	left := budget
	for _, p := range pieces {
		if p.Tokens > left {
			break
		}
		left -= p.Tokens
		f.Keep++
		if !p.Whole {
			f.KeptBytes += len(p.Text)
			f.KeptLines += Lines(p.Text)
		}
	}
	if p := pieces[f.Keep]; !p.Whole && left > 0 {
		var cut string
		if f.JSON = IsJSON(p.Text); f.JSON {
			cut, _ = CutJSON(strings.TrimSpace(p.Text), left)
		} else {
			cut = CutText(p.Text, left)
		}
		if cut != "" {
			f.Cut, f.HasCut = cut, true
			left -= Text(cut)
			f.KeptBytes += len(cut)
			f.KeptLines += strings.Count(cut, "\n")
		}
	}
	f.Kept = budget - left
	f.trimLines()
	return f
}

func (f *Fitted) trimLines() {
	if f.JSON || f.Lines <= 1 {
		f.Lines, f.KeptLines = 0, 0
	}
}

// Lines counts the lines of a text: its line breaks, and one for an
// unterminated last line.
func Lines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// IsJSON reports a text that is a JSON object or array: its structure
// matters, and Fit cuts it into valid JSON.
func IsJSON(s string) bool {
	t := strings.TrimSpace(s)
	return t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t))
}

// TextUpTo returns the estimated tokens of s, counting no further than
// needed to know that they are more than limit: a result over limit is
// some count past it, not the whole's. With limit 0 or less it is Text.
// A text of megabytes costs what its first limit tokens do.
func TextUpTo(s string, limit int) int {
	if limit <= 0 {
		return Text(s)
	}
	const chunk = 16 << 10
	var c Counter
	for len(s) > 0 {
		n := min(chunk, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++ // a rune is never split between writes
		}
		feed(&c, s[:n], 0)
		s = s[n:]
		if c.Tokens() > limit {
			break
		}
	}
	return c.Tokens()
}
