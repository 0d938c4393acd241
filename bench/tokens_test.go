package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/internal/tokens"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tiktoken-go/tokenizer"
)

// tokenSample is a text a model reads, from a real output.
type tokenSample struct {
	name, kind string
	text       string
}

// TestTokenEstimate measures internal/tokens.Text against OpenAI's
// o200k_base (tiktoken-go/tokenizer, which carries the vocabulary) on what
// a model reads of real outputs: server-filesystem's read_text_file of a
// 3 MB file and its directory_tree of a large tree, server-everything's
// largest results, each as the four providers' answers carry it, and the
// bench corpus, a package lock, code and prose in seven languages. It
// prints the table of BENCHMARKS.md ("Result budget") and fails when a
// sample's estimate falls under 0.95 of o200k's count or over 1.6 times it.
//
//	CONDUIT_E2E=1 go test -run TestTokenEstimate -v .
func TestTokenEstimate(t *testing.T) {
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	samples := append(serverSamples(t), fileSamples(t)...)
	t.Logf("%-44s %-6s %10s %10s %10s %7s %9s", "sample", "kind", "bytes", "o200k", "estimate", "ratio", "est MB/s")
	var sumReal, sumEst int
	var worstLow, worstHigh float64 = 10, 0
	dump := os.Getenv("CONDUIT_TOKEN_SAMPLES") // a directory to write the samples to
	for i, s := range samples {
		if dump != "" {
			os.WriteFile(filepath.Join(dump, fmt.Sprintf("%02d-%s.txt", i, s.kind)), []byte(s.text), 0o600)
		}
		real, err := enc.Count(s.text)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		start := time.Now()
		est := tokens.Text(s.text)
		rate := float64(len(s.text)) / time.Since(start).Seconds() / 1e6
		ratio := float64(est) / float64(max(real, 1))
		worstLow, worstHigh = min(worstLow, ratio), max(worstHigh, ratio)
		sumReal += real
		sumEst += est
		t.Logf("%-44s %-6s %10d %10d %10d %7.3f %9.0f", s.name, s.kind, len(s.text), real, est, ratio, rate)
		if real >= 100 && (ratio < 0.95 || ratio > 1.6) {
			t.Errorf("%s: estimate %d for o200k's %d (%.3f), outside 0.95-1.6", s.name, est, real, ratio)
		}
	}
	t.Logf("all %d samples: o200k %d, estimate %d, ratio %.3f (%.3f to %.3f)", len(samples), sumReal, sumEst, float64(sumEst)/float64(sumReal), worstLow, worstHigh)
}

// serverSamples are the model's reading of real servers' large results,
// per provider.
func serverSamples(t *testing.T) []tokenSample {
	dir := t.TempDir()
	goroot := runtime.GOROOT()
	code := concatFiles(t, filepath.Join(goroot, "src"), ".go", 3<<20)
	if err := os.WriteFile(filepath.Join(dir, "code.go.txt"), []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	prose, err := os.ReadFile(filepath.Join(goroot, "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prose.txt"), prose, 0o600); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(goroot, "src", "net")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := outputsHub(t, ctx, dir, tree)
	calls := []struct {
		name, kind, tool string
		args             map[string]any
	}{
		{"filesystem read_text_file, 3 MB of Go", "code", "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "code.go.txt")}},
		{"filesystem read_text_file, Opticks", "prose", "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "prose.txt")}},
		{"filesystem directory_tree, GOROOT/src/net", "json", "fs__directory_tree", map[string]any{"path": tree}},
		{"everything get-env", "json", "ev__get-env", nil},
		{"everything get-resource-links 10", "text", "ev__get-resource-links", map[string]any{"count": 10}},
		{"everything get-structured-content", "json", "ev__get-structured-content", map[string]any{"location": "Chicago"}},
	}
	var out []tokenSample
	for _, c := range calls {
		res, err := h.CallTool(ctx, c.tool, c.args, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		seen := map[string]bool{}
		for _, p := range []string{"anthropic", "openai-chat", "openai-responses", "gemini"} {
			text := modelText(t, p, res)
			if seen[text] {
				continue // the same reading as another provider's
			}
			seen[text] = true
			out = append(out, tokenSample{name: c.name + " (" + p + ")", kind: c.kind, text: text})
		}
	}
	return out
}

// outputsHub is a hub of the real server-filesystem over dirs, as fs,
// and server-everything, as ev, with no limit on a result's size, its
// tools listed; it is closed with t.
func outputsHub(t *testing.T, ctx context.Context, dirs ...string) *conduit.Hub {
	fsCmd, fsArgs := testenv.Filesystem(t, dirs...)
	evCmd, evArgs := testenv.Everything(t)
	h, err := conduit.NewHub(ctx, []conduit.Server{
		{ID: "fs", Command: fsCmd, Args: fsArgs},
		{ID: "ev", Command: evCmd, Args: evArgs},
	}, &conduit.Options{Policy: conduit.AllowAll(), Limits: conduit.Limits{MaxResultBytes: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if _, err := h.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

// modelText is what a model reads of res in provider p's answer: its text,
// with images left out (they are counted by the providers' image rules).
func modelText(t *testing.T, p string, res *mcp.CallToolResult) string {
	c := toolcall.Call{ID: "call_1", Name: "t"}
	o := &toolcall.AnswerOptions{MaxResultTokens: -1} // the whole, to measure
	var texts []string
	switch p {
	case "anthropic":
		for _, b := range adapters.Anthropic.Answer(c, res, nil, o)["content"].([]any) {
			if m := b.(map[string]any); m["type"] == "text" {
				texts = append(texts, m["text"].(string))
			}
		}
	case "openai-chat":
		texts = append(texts, adapters.OpenAIChat.Answer(c, res, nil, o)["content"].(string))
	case "openai-responses":
		switch o := adapters.OpenAIResponses.Answer(c, res, nil, o)["output"].(type) {
		case string:
			texts = append(texts, o)
		case []any:
			for _, it := range o {
				if m := it.(map[string]any); m["type"] == "input_text" {
					texts = append(texts, m["text"].(string))
				}
			}
		}
	case "gemini":
		out := adapters.Gemini.Answer(c, res, nil, o)["functionResponse"].(map[string]any)["response"].(map[string]any)["output"]
		if s, ok := out.(string); ok {
			texts = append(texts, s)
		} else {
			data, err := json.Marshal(out)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, string(data))
		}
	}
	return strings.Join(texts, "\n")
}

// fileSamples are outputs found in files: the bench corpus, a package
// lock, code, prose in seven languages.
func fileSamples(t *testing.T) []tokenSample {
	root := testenv.RepoRoot()
	read := func(path string) string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	out := []tokenSample{
		{"bench corpus.json (1,000 tool definitions)", "json", read(filepath.Join(root, "bench", "testdata", "corpus.json"))},
		{"bench servers/github.json (a tools/list)", "json", read(filepath.Join(root, "bench", "testdata", "servers", "github.json"))},
		{"package-lock.json (hashes)", "json", read(filepath.Join(root, "package-lock.json"))},
		{"Go SDK README.md", "prose", read(filepath.Join(sdkDir(t), "README.md"))},
		{"Go SDK server.go", "code", read(filepath.Join(sdkDir(t), "mcp", "server.go"))},
		{"Go SDK streamable.go", "code", read(filepath.Join(sdkDir(t), "mcp", "streamable.go"))},
	}
	langs, err := filepath.Glob(filepath.Join(root, "bench", "testdata", "budget", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range langs {
		out = append(out, tokenSample{"prose, " + strings.TrimSuffix(filepath.Base(l), ".txt"), "lang", read(l)})
	}
	return out
}

// sdkDir is the Go SDK's module directory.
func sdkDir(t *testing.T) string {
	dir := filepath.Join(os.Getenv("GOMODCACHE"), "github.com", "modelcontextprotocol", "go-sdk@v1.8.0")
	if os.Getenv("GOMODCACHE") == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, "go", "pkg", "mod", "github.com", "modelcontextprotocol", "go-sdk@v1.8.0")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skip("the Go SDK's source is not in the module cache:", err)
	}
	return dir
}

// concatFiles joins the files under dir whose names end in ext, in
// lexical order, up to n bytes.
func concatFiles(t *testing.T, dir, ext string, n int) string {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ext) {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(paths)
	var b strings.Builder
	for _, p := range paths {
		if b.Len() >= n {
			break
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "// %s\n%s", strings.TrimPrefix(p, dir), data)
	}
	s := b.String()
	if len(s) > n {
		s = s[:strings.LastIndexByte(s[:n], '\n')+1]
	}
	return s
}
