package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/internal/tokens"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tiktoken-go/tokenizer"
)

// The result budget, measured: what reaches each provider's model of real
// servers' large outputs with the default budget and without one, and
// what cutting costs against answering whole.

// budgetResult is a real output, to answer.
type budgetResult struct {
	name string
	res  *mcp.CallToolResult
}

// budgetResults calls the real servers for their large outputs:
// server-filesystem's read_text_file of 3 MB of Go and its
// directory_tree of GOROOT/src, server-everything's largest results, and
// the bench corpus returned as a text.
func budgetResults(t *testing.T) []budgetResult {
	dir := t.TempDir()
	goroot := runtime.GOROOT()
	code := concatFiles(t, filepath.Join(goroot, "src"), ".go", 3<<20)
	if err := os.WriteFile(filepath.Join(dir, "code.go.txt"), []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(goroot, "src")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := outputsHub(t, ctx, dir, tree)
	var out []budgetResult
	for _, c := range []struct {
		name, tool string
		args       map[string]any
	}{
		{"server-filesystem read_text_file, 3 MB of Go", "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "code.go.txt")}},
		{"server-filesystem directory_tree, GOROOT/src", "fs__directory_tree", map[string]any{"path": tree}},
		{"server-everything get-env", "ev__get-env", nil},
		{"server-everything get-resource-links 10", "ev__get-resource-links", map[string]any{"count": 10}},
		{"server-everything get-annotated-message with an image", "ev__get-annotated-message", map[string]any{"messageType": "success", "includeImage": true}},
	} {
		res, err := h.CallTool(ctx, c.tool, c.args, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		out = append(out, budgetResult{c.name, res})
	}
	corpus, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "bench", "testdata", "corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, budgetResult{"bench corpus.json as a text result (1.7 MB of JSON)", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(corpus)}}}})
	return out
}

// answered is p's answer to res under o, as a turn of one call answers
// it: what the model reads of it, as the provider's fake reads it back
// from the conversation, the answer's size in bytes of JSON, and what the
// budget did (conduit's estimate, images by the provider's rule).
func answered(t testing.TB, p adapters.Provider, res *mcp.CallToolResult, o toolcall.AnswerOptions) (string, int, toolcall.Budgeted) {
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, conduit.ServerTools{Server: "s",
		Tools: []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}}})
	f := adaptertest.FakeOf(p)
	exec, err := adapters.ExecuteToolCalls(context.Background(), sameResult{res}, p, f.Response("", toolcall.Raw{ID: "call_1", Name: "s__t", Args: map[string]any{}}),
		&adapters.ExecOptions{ToolSet: ts, TurnOptions: adapters.TurnOptions{Answers: o, Budget: adapters.BudgetOptions{MaxTurnTokens: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(exec.Results[0])
	if err != nil {
		t.Fatal(err)
	}
	got := f.Answered(p.Wire().Answers(exec.Results))
	if len(got) != 1 || got[0].Error {
		t.Fatalf("%v: answers %+v", p, got)
	}
	return got[0].Text, len(data), exec.Budgets[0]
}

// TestBudgetTable prints the table of BENCHMARKS.md ("Result budget"):
// for each real output and provider, what the model reads of the answer
// without a budget and with the default one: the answer's bytes, conduit's
// estimate (images by the provider's rule; with the budget, what is kept
// and then the notice), and o200k_base's count of the text. It fails when
// an answer with the budget carries more than the budget and its notice.
//
//	CONDUIT_E2E=1 go test -run TestBudgetTable -v .
func TestBudgetTable(t *testing.T) {
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	o200k := func(s string) int {
		n, err := enc.Count(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	t.Logf("| output | provider | without: bytes | estimate | o200k | with: bytes | estimate | o200k |")
	for _, r := range budgetResults(t) {
		for _, p := range adapters.Providers() {
			wText, wBytes, w := answered(t, p, r.res, toolcall.AnswerOptions{MaxResultTokens: -1})
			cText, cBytes, c := answered(t, p, r.res, toolcall.AnswerOptions{})
			with := fmt.Sprint(c.Kept)
			if c.Cut {
				notice := cText[strings.LastIndex(cText, "[conduit: the result was cut"):]
				with = fmt.Sprintf("%d + %d", c.Kept, tokens.Text(notice))
			}
			t.Logf("| %s | %s | %d | %d | %d | %d | %s | %d |", r.name, p, wBytes, w.Tokens, o200k(wText), cBytes, with, o200k(cText))
			if c.Kept > adapters.DefaultMaxResultTokens || w.Cut || w.Kept != w.Tokens {
				t.Errorf("%s, %s: without %+v, with %+v", r.name, p, w, c)
			}
		}
	}
}

// BenchmarkBudget is what the budget costs: each provider's answer to a
// 3.4 MB result as server-filesystem sends it (text, and the same as
// structuredContent), whole (no budget) against cut to the default
// budget; and a turn of four such results answered by ExecuteToolCalls,
// without budgets against with the per-result and turn budgets. Compare
// with benchstat -col /budget.
func BenchmarkBudget(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		b.Skip(err)
	}
	text := strings.Repeat(string(data), 6)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: map[string]any{"content": text}}
	c := toolcall.Call{ID: "call_1", Name: "fs__read_text_file"}
	for _, p := range adapters.Providers() {
		for _, budget := range []struct {
			name string
			o    *toolcall.AnswerOptions
		}{{"whole", &toolcall.AnswerOptions{MaxResultTokens: -1}}, {"cut", nil}} {
			b.Run(fmt.Sprintf("provider=%s/budget=%s", p, budget.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.Answer(c, res, nil, budget.o)
				}
			})
		}
	}
	src := sameResult{res}
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, conduit.ServerTools{Server: "fs",
		Tools: []*mcp.Tool{{Name: "read_text_file", InputSchema: map[string]any{"type": "object"}}}})
	var calls []toolcall.Raw
	for i := range 4 {
		calls = append(calls, toolcall.Raw{ID: fmt.Sprint("call_", i), Name: "fs__read_text_file", Args: map[string]any{}})
	}
	response := adaptertest.FakeOf(adapters.Anthropic).Response("", calls...)
	for _, budget := range []struct {
		name string
		o    adapters.ExecOptions
	}{
		{"whole", adapters.ExecOptions{ToolSet: ts, TurnOptions: adapters.TurnOptions{Answers: toolcall.AnswerOptions{MaxResultTokens: -1}, Budget: adapters.BudgetOptions{MaxTurnTokens: -1}}}},
		{"cut", adapters.ExecOptions{ToolSet: ts}},
	} {
		b.Run("provider=anthropic-turn-of-4/budget="+budget.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := adapters.ExecuteToolCalls(context.Background(), src, adapters.Anthropic, response, &budget.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// sameResult is a Source that answers every call with one result, so a
// turn's cost is the answers'.
type sameResult struct{ res *mcp.CallToolResult }

func (s sameResult) ListTools(context.Context) (*conduit.ToolSet, error) {
	return conduit.NewToolSet(nil), nil
}
func (s sameResult) ListToolsFor(context.Context, *conduit.ListOptions) (*conduit.ToolSet, error) {
	return conduit.NewToolSet(nil), nil
}
func (s sameResult) CallTool(context.Context, string, any, *conduit.CallOptions) (*mcp.CallToolResult, error) {
	return s.res, nil
}
