package tokens

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutText(t *testing.T) {
	s := strings.Repeat("The quick brown fox jumps over the lazy dog.\n", 100)
	out := CutText(s, 50)
	if Text(out) > 50 || !strings.HasPrefix(s, out) || !strings.HasSuffix(out, "\n") || len(out) < 100 {
		t.Fatalf("CutText = %q (%d tokens)", out, Text(out))
	}
	if CutText(s, 1<<20) != s || CutText(s, 0) != "" {
		t.Fatal("within the budget, or no budget")
	}
	// No line break in the last quarter: cut at a character.
	cjk := strings.Repeat("日本語のテキスト", 50)
	out = CutText(cjk, 20)
	if !utf8.ValidString(out) || Text(out) > 20 || out == "" {
		t.Fatalf("CutText = %q", out)
	}
}

func TestCutJSON(t *testing.T) {
	for _, c := range []struct {
		in     string
		budget int
		want   string
	}{
		{`[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]`, 12, `[1,2,3,4,5]`},
		{`{"a":[{"b":"hello world, hello world, hello world"},{"c":2}],"d":3}`, 12, `{"a":[{"b":"hello world"}]}`},
		{`{"key_that_is_long":12345678901234567890}`, 3, `{}`},
		{`12345678901234567890`, 2, ``},
		{`"a long string of words that goes on"`, 4, `"a long string"`},
		{`{"a":"x\"y\u00e9z and more words here to cut"}`, 8, `{"a":"x\"y"}`},
	} {
		got, ok := CutJSON(c.in, c.budget)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("CutJSON(%s, %d) = %s, %v; want %s", c.in, c.budget, got, ok, c.want)
		}
		if ok && (!json.Valid([]byte(got)) || Text(got) > c.budget) {
			t.Errorf("CutJSON(%s, %d) = %s: invalid or over (%d)", c.in, c.budget, got, Text(got))
		}
	}
}

// FuzzCut: a cut never exceeds its budget, is a beginning of the text
// (for JSON, once closed), never splits a UTF-8 sequence, and a cut of
// valid JSON is valid JSON.
func FuzzCut(f *testing.F) {
	for _, s := range []string{"hello world\nline two\n", `{"a":[1,"two",{"b":null}],"c":"\u00e9\"x"}`, "日本語\nテキスト", `[[[[]]],"a\\"]`, `"\ud83d\ude00 smile"`, "a\tb  c\r\n"} {
		f.Add(s, uint16(3))
	}
	f.Fuzz(func(t *testing.T, s string, budget uint16) {
		s = strings.ToValidUTF8(s, "\uFFFD")
		b := int(budget % 2000)
		out := CutText(s, b)
		if !strings.HasPrefix(s, out) || !utf8.ValidString(out) {
			t.Fatalf("CutText(%q, %d) = %q", s, b, out)
		}
		if n := Text(out); n > b && b > 0 {
			t.Fatalf("CutText(%q, %d) = %q, %d tokens", s, b, out, n)
		}
		if !json.Valid([]byte(s)) {
			return
		}
		out, ok := CutJSON(s, b)
		if !ok {
			return
		}
		if !json.Valid([]byte(out)) || !utf8.ValidString(out) {
			t.Fatalf("CutJSON(%q, %d) = %q: not valid JSON", s, b, out)
		}
		if n := Text(out); n > b {
			t.Fatalf("CutJSON(%q, %d) = %q, %d tokens", s, b, out, n)
		}
	})
}

// TestImages checks the rules against the providers' own examples.
func TestImages(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(int, int) int
		w, h int
		want int
	}{
		{"anthropic 200x200 (docs: ~54)", AnthropicImage, 200, 200, 54},
		{"anthropic 1000x1000 (docs: ~1334)", AnthropicImage, 1000, 1000, 1334},
		{"anthropic 1092x1092 (docs: ~1590)", AnthropicImage, 1092, 1092, 1590},
		{"anthropic 4000x3000, scaled", AnthropicImage, 4000, 3000, 1600},
		{"anthropic unknown", AnthropicImage, 0, 0, 1600},
		{"openai tiles 1024x1024 high (docs: 765)", openAITiles, 1024, 1024, 765},
		{"openai tiles 2048x4096 high (docs: 1105)", openAITiles, 2048, 4096, 1105},
		{"openai 1024x1024, patches", OpenAIImage, 1024, 1024, 1024},
		{"openai 32x32", OpenAIImage, 32, 32, 255},
		{"openai unknown", OpenAIImage, 0, 0, 1536},
		{"gemini 384x384", GeminiImage, 384, 384, 258},
		{"gemini 1600x900", GeminiImage, 1600, 900, 258 * 6},
	} {
		if got := c.f(c.w, c.h); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
