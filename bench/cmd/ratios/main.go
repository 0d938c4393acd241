// Command ratios reads the output of the benchmarks (go test -bench, any
// -count) and prints the table of BENCHMARKS.md: each measured ratio, the
// median and range of its runs, and its target.
//
//	go test -run '^$' -bench . -count 6 . | tee bench.txt
//	go run ./cmd/ratios bench.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

type target struct {
	measure string
	bench   string // benchmark name without the -N suffix
	metric  string
	op      string // "<=", ">=" or "" (report only)
	limit   float64
	against string
}

var targets = []target{
	{"One governed call, Hub.CallTool, in memory", "Ratio/InMemory/hub", "x-p50", "<=", 1.10, "raw ClientSession.CallTool"},
	{"One governed call, adapters.ExecuteToolCalls, in memory", "Ratio/InMemory/adapters", "x-p50", "<=", 1.10, "raw ClientSession.CallTool"},
	{"(fairer floor) adapters.ExecuteToolCalls, in memory", "Ratio/InMemory/adapters-vs-glue", "x-p50", "", 0, "raw call + response decoding and answer by hand"},
	{"One governed call, Hub.CallTool, loopback HTTP", "Ratio/HTTP/hub", "x-p50", "<=", 1.03, "raw SDK, same HTTP server"},
	{"One governed call, adapters.ExecuteToolCalls, loopback HTTP", "Ratio/HTTP/adapters", "x-p50", "<=", 1.03, "raw SDK, same HTTP server"},
	{"(fairer floor) adapters.ExecuteToolCalls, loopback HTTP", "Ratio/HTTP/adapters-vs-glue", "x-p50", "", 0, "raw call + response decoding and answer by hand"},
	{"Batch of 32 calls of 50 ms, MaxConcurrency 32 (wall), in memory", "Batch/InMemory/ratio", "x-p50", "<=", 1.3, "one such call"},
	{"(floor) 32 raw SDK calls of 50 ms from 32 goroutines, in memory", "Batch/InMemory/ratio-raw32", "x-p50", "", 0, "one governed call"},
	{"Batch of 32 calls of 50 ms, MaxConcurrency 32 (wall), loopback HTTP", "Batch/HTTP/ratio", "x-p50", "<=", 1.3, "one such call"},
	{"(floor) 32 raw SDK calls of 50 ms from 32 goroutines, loopback HTTP", "Batch/HTTP/ratio-raw32", "x-p50", "", 0, "one governed call"},
	{"adapters.Tools, 1,000 tools, OpenAI Chat (strict)", "Tools/openai-chat/ratio", "x-p50", "<=", 2, "json.Marshal of the output"},
	{"adapters.Tools, 1,000 tools, OpenAI Responses (strict)", "Tools/openai-responses/ratio", "x-p50", "<=", 2, "json.Marshal of the output"},
	{"adapters.Tools, 1,000 tools, Anthropic", "Tools/anthropic/ratio", "x-p50", "<=", 2, "json.Marshal of the output"},
	{"adapters.Tools, 1,000 tools, Gemini", "Tools/gemini/ratio", "x-p50", "<=", 2, "json.Marshal of the output"},
	{"Hub listing, 50 servers × 14 tools, 20 ms each", "List/fs/ratio", "x-p50", "<=", 1.5, "one such server"},
	{"Hub listing, 50 servers × 1 tool, 20 ms each", "List/one/ratio", "x-p50", "<=", 1.5, "one such server"},
	{"(floor) Hub listing, 50 servers × 14 tools", "List/fs/ratio-raw", "x-p50", "", 0, "50 raw sessions listed concurrently"},
	{"(floor) Hub listing, 50 servers × 1 tool", "List/one/ratio-raw", "x-p50", "", 0, "50 raw sessions listed concurrently"},
	{"New stdio session per call (spawn, initialize, call, close)", "Stdio/ratio", "x-p50", ">=", 20, "conduit's persistent session"},
	{"mark3labs/mcp-go raw call, loopback HTTP", "MCPGo/ratio", "x-p50", "", 0, "conduit's governed call"},
	{"One call through conduit serve (transparent, policy), loopback HTTP both hops", "Gateway/vs-forwarder", "x-p50", "<=", 1.10, "hand-written Go SDK forwarder, same two hops"},
	{"The same with a bearer token", "Gateway/auth-vs-forwarder", "x-p50", "", 0, "hand-written Go SDK forwarder, same two hops"},
	{"One call through conduit serve", "Gateway/vs-direct", "x-p50", "", 0, "a direct call to the server (one hop)"},
	{"(floor) One call through the hand-written forwarder", "Gateway/forwarder-vs-direct", "x-p50", "", 0, "a direct call to the server (one hop)"},
	{"(parts) Hub.CallTool, in memory, AllowAll only", "Parts/none", "x-p50", "", 0, "raw ClientSession.CallTool"},
	{"(parts) + four-rule policy and approver", "Parts/policy", "x-p50", "", 0, "raw ClientSession.CallTool"},
	{"(parts) + argument validation", "Parts/validate", "x-p50", "", 0, "raw ClientSession.CallTool"},
	{"(parts) + a Before hook", "Parts/before", "x-p50", "", 0, "raw ClientSession.CallTool"},
	{"(parts) + its After hook", "Parts/after", "x-p50", "", 0, "raw ClientSession.CallTool"},
	{"(parts) + ShapeLLM (= Ratio/InMemory/hub)", "Parts/shape", "x-p50", "", 0, "raw ClientSession.CallTool"},
	{"(parts) the same, its hook Inline", "Parts/inline", "x-p50", "", 0, "raw ClientSession.CallTool"},
	{"OpenTelemetry (otelconduit), no-op providers, in memory", "OTel/InMemory/noop", "x-p50", "<=", 1.03, "the same governed call, no Trace"},
	{"OpenTelemetry, batching OTLP/HTTP exporters, in memory", "OTel/InMemory/batch", "x-p50", "<=", 1.03, "the same governed call, no Trace"},
	{"(sampled) the same, one call in ten sampled", "OTel/InMemory/batch-sampled-10pc", "x-p50", "", 0, "the same governed call, no Trace"},
	{"(floor) a bare span per call, same SDK and exporter", "OTel/InMemory/span-floor", "x-p50", "", 0, "the same governed call, no Trace"},
	{"(floor) no Trace, a traceparent in each call's _meta", "OTel/InMemory/meta-floor", "x-p50", "", 0, "the same governed call, no _meta"},
	{"OpenTelemetry (otelconduit), no-op providers, loopback HTTP", "OTel/HTTP/noop", "x-p50", "<=", 1.03, "the same governed call, no Trace"},
	{"OpenTelemetry, batching OTLP/HTTP exporters, loopback HTTP", "OTel/HTTP/batch", "x-p50", "<=", 1.03, "the same governed call, no Trace"},
	{"(sampled) the same, one call in ten sampled", "OTel/HTTP/batch-sampled-10pc", "x-p50", "", 0, "the same governed call, no Trace"},
	{"(floor) a bare span per call, same SDK and exporter", "OTel/HTTP/span-floor", "x-p50", "", 0, "the same governed call, no Trace"},
	{"(floor) no Trace, a traceparent in each call's _meta", "OTel/HTTP/meta-floor", "x-p50", "", 0, "the same governed call, no _meta"},
}

var suffix = regexp.MustCompile(`-\d+$`)

func main() {
	flag.Parse()
	var in io.Reader = os.Stdin
	if flag.NArg() > 0 {
		f, err := os.Open(flag.Arg(0))
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		in = f
	}
	// values[benchmark][metric] = one value per run
	values := map[string]map[string][]float64{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := suffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		if values[name] == nil {
			values[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			values[name][f[i+1]] = append(values[name][f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("| Measure | Against | Benchmark | Runs | Ratio, median (min–max) | Target | |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, t := range targets {
		vs := values[t.bench][t.metric]
		if len(vs) == 0 {
			fmt.Printf("| %s | %s | %s | 0 | not run | %s | |\n", t.measure, t.against, t.bench, goal(t))
			continue
		}
		slices.Sort(vs)
		med := median(vs)
		verdict := ""
		switch {
		case t.op == "<=" && med <= t.limit, t.op == ">=" && med >= t.limit:
			verdict = "met"
		case t.op != "":
			verdict = "**missed**"
		}
		fmt.Printf("| %s | %s | %s | %d | %s (%s–%s) | %s | %s |\n", t.measure, t.against, t.bench, len(vs),
			num(med), num(vs[0]), num(vs[len(vs)-1]), goal(t), verdict)
	}
}

func goal(t target) string {
	if t.op == "" {
		return "report"
	}
	return strings.NewReplacer("<=", "≤ ", ">=", "≥ ").Replace(t.op) + num(t.limit) + "×"
}

func num(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
