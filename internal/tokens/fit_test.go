package tokens

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFit(t *testing.T) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog.\n", 400)
	rows := make([]any, 500)
	for i := range rows {
		rows[i] = map[string]any{"id": i, "name": "row"}
	}
	data, _ := json.Marshal(rows)
	jsonText := string(data)
	small := Piece{Text: "a short line", Tokens: Text("a short line")}
	image := Piece{Whole: true, Tokens: 1000}
	piece := func(s string) Piece { return Piece{Text: s, Tokens: Text(s)} }

	// Within the budget, everything is kept.
	if f := Fit([]Piece{small, image}, 5000); f.Over() || f.Keep != 2 || f.HasCut || f.Kept != f.Tokens {
		t.Fatalf("within: %+v", f)
	}
	// No budget.
	if f := Fit([]Piece{piece(text)}, 0); f.Over() || f.Keep != 1 {
		t.Fatalf("no budget: %+v", f)
	}
	// A text cut at a line break, after the pieces that fit whole.
	f := Fit([]Piece{small, image, piece(text), small}, 1500)
	if !f.Over() || f.Keep != 2 || !f.HasCut || !strings.HasPrefix(text, f.Cut) || !strings.HasSuffix(f.Cut, "\n") {
		t.Fatalf("text: %+v", f)
	}
	if f.Kept > 1500 || f.Kept != small.Tokens+image.Tokens+Text(f.Cut) || f.JSON {
		t.Fatalf("kept %d: %+v", f.Kept, f)
	}
	if f.Lines != 402 || f.KeptLines != 1+strings.Count(f.Cut, "\n") || f.Bytes != len(text)+2*len(small.Text) {
		t.Fatalf("lines %d/%d, bytes %d/%d", f.KeptLines, f.Lines, f.KeptBytes, f.Bytes)
	}
	// A JSON text is cut into valid JSON, and lines say nothing of it.
	f = Fit([]Piece{piece(jsonText)}, 300)
	if !f.JSON || !f.HasCut || !json.Valid([]byte(f.Cut)) || f.Kept > 300 || f.Lines != 0 {
		t.Fatalf("json: %+v", f)
	}
	// An image that does not fit is dropped, with what follows.
	f = Fit([]Piece{small, image, small}, 500)
	if f.Keep != 1 || f.HasCut || f.Kept != small.Tokens {
		t.Fatalf("image: %+v", f)
	}
	// Nothing fits.
	f = Fit([]Piece{image}, 10)
	if f.Keep != 0 || f.HasCut || f.Kept != 0 || !f.Over() {
		t.Fatalf("nothing: %+v", f)
	}
}

func TestTextUpTo(t *testing.T) {
	s := strings.Repeat("héllo wörld, 日本語 and 12345 digits; ", 20000)
	whole := Text(s)
	if got := TextUpTo(s, 0); got != whole {
		t.Fatalf("no limit: %d, want %d", got, whole)
	}
	if got := TextUpTo(s, whole); got != whole {
		t.Fatalf("at the limit: %d, want %d", got, whole)
	}
	got := TextUpTo(s, 1000)
	if got <= 1000 || got > 1000+20000 {
		t.Fatalf("over: %d", got)
	}
	// Chunks end at characters: a text of multi-byte runes counts as a
	// whole.
	cjk := strings.Repeat("日本語のテキスト", 10000)
	if TextUpTo(cjk, 1<<30) != Text(cjk) {
		t.Fatal("split runes")
	}
}

// FuzzFit: what Fit keeps is within the budget, its cut is a beginning of
// the piece it cuts, valid UTF-8, and valid JSON when it cut JSON.
func FuzzFit(f *testing.F) {
	f.Add("line one\nline two\n", `{"a":[1,2,3]}`, uint16(5), uint16(40), uint16(3))
	f.Add("日本語\nテキスト", `[["x"],{"y":"z"}]`, uint16(1), uint16(0), uint16(7))
	f.Fuzz(func(t *testing.T, a, b string, image, budget, order uint16) {
		a, b = strings.ToValidUTF8(a, "\uFFFD"), strings.ToValidUTF8(b, "\uFFFD")
		pieces := []Piece{{Text: a, Tokens: Text(a)}, {Whole: true, Tokens: int(image % 2000)}, {Text: b, Tokens: Text(b)}}
		if order%2 == 1 {
			pieces[0], pieces[2] = pieces[2], pieces[0]
		}
		n := int(budget % 3000)
		fit := Fit(pieces, n)
		if n > 0 && fit.Kept > n {
			t.Fatalf("kept %d of budget %d", fit.Kept, n)
		}
		if fit.Keep > len(pieces) || (fit.HasCut && fit.Keep >= len(pieces)) {
			t.Fatalf("keep %d", fit.Keep)
		}
		if !fit.HasCut {
			return
		}
		cut := pieces[fit.Keep]
		if !utf8.ValidString(fit.Cut) || cut.Whole {
			t.Fatalf("cut %q of %+v", fit.Cut, cut)
		}
		if fit.JSON {
			if !json.Valid([]byte(fit.Cut)) {
				t.Fatalf("cut JSON %q", fit.Cut)
			}
		} else if !strings.HasPrefix(cut.Text, fit.Cut) {
			t.Fatalf("cut %q is not a beginning of %q", fit.Cut, cut.Text)
		}
	})
}
