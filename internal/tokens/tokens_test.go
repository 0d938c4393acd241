package tokens

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"hello", 1},
		{" hello", 1},
		{"hello world", 2},
		{"international", 3},
		{"HelloWorld", 2},
		{"12345", 2},
		{"a, b", 3},
		{"{\"a\":1}", 5},
		{"\t\t}\n", 2},
		{"    \"name\"", 4},
		{"日本語のテキスト", 7},
		{"привет", 2},
	} {
		if got := Text(c.s); got != c.want {
			t.Errorf("Text(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}

// TestCounterPieces: a text written in pieces counts as the whole when no
// UTF-8 sequence is split.
func TestCounterPieces(t *testing.T) {
	s := sample(t)
	want := Text(s)
	var c Counter
	for i := 0; i < len(s); {
		j := min(len(s), i+7)
		for j < len(s) && !utf8.RuneStart(s[j]) {
			j++
		}
		c.WriteString(s[i:j])
		i = j
	}
	if c.Tokens() != want {
		t.Fatalf("in pieces %d, whole %d", c.Tokens(), want)
	}
}

func TestTextAllocs(t *testing.T) {
	s := sample(t)
	if n := testing.AllocsPerRun(10, func() { Text(s) }); n != 0 {
		t.Fatalf("Text allocates %v times", n)
	}
}

// sample is real text: Go's copy of Newton's Opticks, and some source.
func sample(t testing.TB) string {
	data, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		t.Skip(err)
	}
	src, err := os.ReadFile("tokens.go")
	if err != nil {
		t.Fatal(err)
	}
	return string(data) + strings.Repeat(string(src), 4) + "日本語のテキスト, Привет, мир!"
}

func BenchmarkText(b *testing.B) {
	s := sample(b)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Text(s)
	}
}

// byteWise counts s one byte at a time through add, as feed does under a
// limit: the reference for feed's fast paths.
func byteWise(s string) int {
	var c Counter
	feed(&c, s, math.MaxInt)
	return c.Tokens()
}

func TestFastPaths(t *testing.T) {
	s := sample(t)
	if got, want := Text(s), byteWise(s); got != want {
		t.Fatalf("Text %d, byte-wise %d", got, want)
	}
}

// FuzzFastPaths: feed's fast paths count what add does byte by byte.
func FuzzFastPaths(f *testing.F) {
	for _, s := range []string{"the deploy of service 4 moved", "a  b\tc\n d", "x1 y", "A b", "é a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Text(s), byteWise(s); got != want {
			t.Fatalf("%q: Text %d, byte-wise %d", s, got, want)
		}
	})
}
