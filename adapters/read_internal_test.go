package adapters

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/conduitmcp/conduit/internal/tokens"
)

// FuzzReadResult: whatever the kept text and the model's arguments,
// read_result answers without a panic, in valid UTF-8 for a valid text,
// within its page, and a range it reads is the text's own.
func FuzzReadResult(f *testing.F) {
	f.Add("line one\nline two\nline three\n", int64(2), int64(1), int64(-1), "")
	f.Add("日本語\nテキスト\n", int64(1), int64(0), int64(4), "")
	f.Add(strings.Repeat("abc ", 500), int64(1), int64(0), int64(-1), "b.c")
	f.Add("x\n\n\ny", int64(3), int64(5), int64(-1), "(?i)Y$")
	f.Fuzz(func(t *testing.T, text string, line, count, offset int64, pattern string) {
		args := map[string]any{"result": "R-1", "line": float64(line), "lines": float64(count)}
		if offset >= 0 {
			args["offset"] = float64(offset)
		}
		if pattern != "" {
			args["pattern"] = pattern
		}
		a, err := parseReadArgs(args)
		if err != nil {
			return // answered with an error result
		}
		const page = 200
		var out string
		switch {
		case a.pattern != nil:
			out, err = grep(context.Background(), a, text, page)
		case a.offset >= 0:
			out, err = byBytes(a, text, page)
		default:
			out, err = byLines(a, text, page)
		}
		if err != nil {
			if _, ok := err.(readError); !ok {
				t.Fatalf("error %v", err)
			}
			return
		}
		header, body, _ := strings.Cut(out, "\n")
		if !strings.HasPrefix(header, "["+ReadToolName+": ") {
			t.Fatalf("header %q", header)
		}
		if utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8: %q", out)
		}
		if n := tokens.Text(out); n > page+2 {
			t.Fatalf("%d tokens for a page of %d: %q", n, page, out)
		}
		if a.pattern == nil && !strings.Contains(text, body) {
			t.Fatalf("the range %q is not the text's", body)
		}
	})
}
