// Code mode's measures: what the model reads, nested-call overhead, start-up.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/codemode"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tiktoken-go/tokenizer"
)

// codeDocs is the held-out corpus: 200 documents of about 2 KB each
// (about 410 KB in all), every seventh of which mentions a zebra.
func codeDocs() []string {
	words := strings.Fields("the savanna grass river herd acacia dry season rain water lion antelope giraffe dust heat shade trail camp ranger map")
	docs := make([]string, 200)
	for i := range docs {
		var b strings.Builder
		fmt.Fprintf(&b, "Field note %d. ", i)
		for j := 0; b.Len() < 2040; j++ {
			b.WriteString(words[(i*7+j*3)%len(words)])
			b.WriteByte(' ')
		}
		if i%7 == 0 {
			b.WriteString("A zebra crossed. ")
		}
		docs[i] = b.String()
	}
	return docs
}

// codeHub serves the corpus (list_docs, read_doc) in memory behind a hub
// that allows every call.
func codeHub(tb testing.TB, docs []string) *conduit.Hub {
	tb.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "corpus", Version: "1"}, nil)
	type idArgs struct {
		ID int `json:"id"`
	}
	type listOut struct {
		IDs []int `json:"ids"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "list_docs", Description: "List the documents' ids."}, func(ctx context.Context, r *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, listOut, error) {
		ids := make([]int, len(docs))
		for i := range ids {
			ids[i] = i
		}
		return nil, listOut{IDs: ids}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "read_doc", Description: "Read one document's text."}, func(ctx context.Context, r *mcp.CallToolRequest, a idArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: docs[a.ID]}}}, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	go func() { _ = srv.Run(ctx, st) }()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "corpus", Transport: ct}}, &conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { hub.Close() })
	return hub
}

const zebraCode = `const {ids} = await corpus.list_docs({});
let n = 0;
for (const id of ids) {
  const text: string = await corpus.read_doc({id});
  if (text.includes("zebra")) n++;
}
return {documents: ids.length, zebras: n};`

// TestCodeModeFootprint measures what the model reads to count the
// documents that mention a zebra: one by one (a call for the list, then
// one per document, every answer in its context) against one run_code
// call. It prints the table's row; it asserts only the count.
func TestCodeModeFootprint(t *testing.T) {
	docs := codeDocs()
	hub := codeHub(t, docs)
	ctx := context.Background()
	p := adapters.Anthropic
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	count := func(v any) (int, int) {
		b, _ := json.Marshal(v)
		n, _ := enc.Count(string(b))
		return len(b), n
	}
	// One by one: the list, then the 200 reads in one response (the
	// fewest round trips a model calling one by one can make).
	direct, err := adapters.Tools(ctx, hub, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := adapters.ExecuteToolCalls(ctx, hub, p, adaptertest.FakeOf(p).Response("", toolcall.Raw{ID: "l", Name: "corpus__list_docs", Args: map[string]any{}}), &adapters.ExecOptions{ToolSet: direct.ToolSet})
	if err != nil {
		t.Fatal(err)
	}
	raws := make([]toolcall.Raw, len(docs))
	for i := range raws {
		raws[i] = toolcall.Raw{ID: "r" + strconv.Itoa(i), Name: "corpus__read_doc", Args: map[string]any{"id": i}}
	}
	reads, err := adapters.ExecuteToolCalls(ctx, hub, p, adaptertest.FakeOf(p).Response("", raws...),
		&adapters.ExecOptions{ToolSet: direct.ToolSet, TurnOptions: adapters.TurnOptions{
			Answers: toolcall.AnswerOptions{MaxResultTokens: -1}, Budget: adapters.BudgetOptions{MaxTurnTokens: -1},
			Limits: adapters.ResponseLimits{MaxToolCalls: 1000}}})
	if err != nil {
		t.Fatal(err)
	}
	oneBytes, oneTokens := count(append(list.Results, reads.Results...))
	// Code mode: one run_code call.
	code, err := adapters.Tools(ctx, hub, p, &adapters.ToolsOptions{Listing: adapters.ListingOptions{CodeMode: adapters.CodeModeOptions{On: true}}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := adapters.ExecuteToolCalls(ctx, hub, p, adaptertest.FakeOf(p).Response("", toolcall.Raw{ID: "c", Name: "run_code", Args: map[string]any{"code": zebraCode}}),
		&adapters.ExecOptions{ToolSet: code.ToolSet, CodeMode: adapters.CodeModeOptions{On: true}})
	if err != nil || run.Errors[0] != nil {
		t.Fatal(err, run.Errors)
	}
	codeBytes, codeTokens := count(run.Results)
	if b, _ := json.Marshal(run.Results); !strings.Contains(string(b), `zebras\":29`) {
		t.Fatalf("run_code answered %s", b)
	}
	callBytes, _ := count(map[string]any{"code": zebraCode})
	dBytes, dTokens := count(direct.Tools)
	cBytes, cTokens := count(code.Tools)
	corpus := 0
	for _, d := range docs {
		corpus += len(d)
	}
	fmt.Fprintf(os.Stdout, "corpus: %d documents, %d bytes\n", len(docs), corpus)
	fmt.Fprintf(os.Stdout, "answers read, one by one: %d bytes, %d tokens, 201 calls, 2 round trips at best (201 calling one at a time)\n", oneBytes, oneTokens)
	fmt.Fprintf(os.Stdout, "answers read, code mode:  %d bytes, %d tokens, 1 call, 1 round trip (the code it writes: %d bytes)\n", codeBytes, codeTokens, callBytes)
	fmt.Fprintf(os.Stdout, "code mode / one by one: %.3f%% of the bytes, %.3f%% of the tokens\n", 100*float64(codeBytes)/float64(oneBytes), 100*float64(codeTokens)/float64(oneTokens))
	fmt.Fprintf(os.Stdout, "tool definitions: direct %d bytes (%d tokens), run_code %d bytes (%d tokens)\n", dBytes, dTokens, cBytes, cTokens)
}

// BenchmarkCodeMode: a nested call against the same call made directly
// (100 reads each op), a run's start-up, and a run's memory (B/op is the
// Go side; the engine's heap is bounded by codemode.Limits.Memory).
func BenchmarkCodeMode(b *testing.B) {
	docs := codeDocs()
	hub := codeHub(b, docs)
	ctx := context.Background()
	ts, err := hub.ListTools(ctx)
	if err != nil {
		b.Fatal(err)
	}
	const loop = `for (let id = 0; id < 100; id++) await corpus.read_doc({id});`
	b.Run("direct-100", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for id := range 100 {
				if _, err := hub.CallTool(ctx, "corpus__read_doc", map[string]any{"id": id}, &conduit.CallOptions{ToolSet: ts}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("nested-100", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := codemode.Execute(ctx, loop, &codemode.Run{Source: hub, ToolSet: ts}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The ratio the table reports: both sides alternately in one loop,
	// their order swapped every iteration, the ratio of their medians.
	b.Run("ratio-nested-vs-direct", func(b *testing.B) {
		// Wall time, and the process's CPU time: the other processes of a
		// loaded machine delay the first far more than the second.
		var direct, nested, directCPU, nestedCPU []float64
		i := 0
		for b.Loop() {
			sides := []func(){
				func() {
					start, cpu := time.Now(), cpuTime()
					for id := range 100 {
						if _, err := hub.CallTool(ctx, "corpus__read_doc", map[string]any{"id": id}, &conduit.CallOptions{ToolSet: ts}); err != nil {
							b.Fatal(err)
						}
					}
					direct = append(direct, float64(time.Since(start)))
					directCPU = append(directCPU, float64(cpuTime()-cpu))
				},
				func() {
					start, cpu := time.Now(), cpuTime()
					if _, err := codemode.Execute(ctx, loop, &codemode.Run{Source: hub, ToolSet: ts}); err != nil {
						b.Fatal(err)
					}
					nested = append(nested, float64(time.Since(start)))
					nestedCPU = append(nestedCPU, float64(cpuTime()-cpu))
				},
			}
			if i%2 == 1 {
				sides[0], sides[1] = sides[1], sides[0]
			}
			sides[0]()
			sides[1]()
			i++
		}
		b.ReportMetric(median(nested)/median(direct), "nested/direct")
		if median(directCPU) > 0 {
			// Where the process's CPU time is not read, there is none.
			b.ReportMetric(median(nestedCPU)/median(directCPU), "cpu-nested/direct")
		}
		b.ReportMetric(median(nested)/100, "ns/nested-call")
		b.ReportMetric(median(direct)/100, "ns/direct-call")
	})
	b.Run("startup", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := codemode.Execute(ctx, "return 1", &codemode.Run{Source: hub, ToolSet: ts}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("startup-typescript", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := codemode.Execute(ctx, "const n: number = 1; return n", &codemode.Run{Source: hub, ToolSet: ts}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCodeModeMemory: a run's memory, for a small script and for
// the corpus script (list, then 200 reads). B/op is what the Go side
// allocates per run; go-heap-B/run is what stays on Go's heap after a
// GC, per run. The engine's heap is outside Go's, and the engine exposes
// no usage figure. engine-peak-B is its peak per run, found as the
// smallest codemode.Limits.Memory under which the run still succeeds
// (the engine counts every allocation against it), to 4 KiB.
func BenchmarkCodeModeMemory(b *testing.B) {
	docs := codeDocs()
	hub := codeHub(b, docs)
	ctx := context.Background()
	ts, err := hub.ListTools(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, sc := range []struct{ name, code string }{
		{"small", `const t = await corpus.read_doc({id: 1}); return t.length`},
		{"corpus", zebraCode},
		// The corpus again, every text kept until the end: the peak grows
		// by what the code holds.
		{"corpus-kept", `const {ids} = await corpus.list_docs({});
const texts = [];
for (const id of ids) texts.push(await corpus.read_doc({id}));
return texts.filter((t) => t.includes("zebra")).length`},
	} {
		b.Run(sc.name, func(b *testing.B) {
			runWith := func(mem int) error {
				_, err := codemode.Execute(ctx, sc.code, &codemode.Run{Source: hub, ToolSet: ts,
					Options: &codemode.Options{Limits: codemode.Limits{Memory: mem}}})
				return err
			}
			if err := runWith(0); err != nil {
				b.Fatal(err)
			}
			lo, hi := 4<<10, codemode.DefaultMemory // fails at lo, succeeds at hi
			for hi-lo > 4<<10 {
				mid := (lo + hi) / 2
				if runWith(mid) == nil {
					hi = mid
				} else {
					lo = mid
				}
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if err := runWith(0); err != nil {
					b.Fatal(err)
				}
				n++
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(hi), "engine-peak-B")
			b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(n), "go-heap-B/run")
		})
	}
}

// BenchmarkCodeModeParallel: 20 reads of a server that takes 5 ms a
// call, awaited one by one against Promise.all. It reports the calls the
// server saw in flight at most; ns/op shows the wall time saved.
func BenchmarkCodeModeParallel(b *testing.B) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	var mu sync.Mutex
	now, most := 0, 0
	type idArgs struct {
		ID int `json:"id"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "read", Description: "Read slowly."}, func(ctx context.Context, r *mcp.CallToolRequest, a idArgs) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		now++
		most = max(most, now)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		now--
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(a.ID)}}}, nil, nil
	})
	st, ct := mcp.NewInMemoryTransports()
	go func() { _ = srv.Run(context.Background(), st) }()
	hub, err := conduit.NewHub(context.Background(), []conduit.Server{{ID: "slow", Transport: ct}}, &conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { hub.Close() })
	ctx := context.Background()
	ts, err := hub.ListTools(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, sc := range []struct{ name, code string }{
		{"one-by-one-20", `const out = []; for (let id = 0; id < 20; id++) out.push(await slow.read({id})); return out.length`},
		{"promise-all-20", `const ids = Array.from({length: 20}, (_, i) => i); return (await Promise.all(ids.map((id) => slow.read({id})))).length`},
	} {
		b.Run(sc.name, func(b *testing.B) {
			mu.Lock()
			most = 0
			mu.Unlock()
			for b.Loop() {
				if _, err := codemode.Execute(ctx, sc.code, &codemode.Run{Source: hub, ToolSet: ts}); err != nil {
					b.Fatal(err)
				}
			}
			mu.Lock()
			b.ReportMetric(float64(most), "most-in-flight")
			mu.Unlock()
		})
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}
