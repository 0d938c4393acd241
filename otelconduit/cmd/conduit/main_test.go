package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/conduitmcp/conduit/internal/cli"
	"github.com/conduitmcp/conduit/otelconduit/internal/otlptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// The tests run the command in process (run, as main does) with the
// OTEL_* variables set for the exporters, against a loopback OTLP/HTTP
// receiver; they cannot run in parallel.

type result struct {
	code           int
	stdout, stderr string
}

func runConduit(t *testing.T, telemetry bool, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: os.Getenv}
	var code int
	if telemetry {
		code = run(context.Background(), args, env)
	} else {
		code = cli.Main(context.Background(), args, env)
	}
	return result{code, out.String(), errb.String()}
}

// clearOTEL unsets the OTEL_* variables of the test's environment, so a
// developer's own do not change the tests.
func clearOTEL(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") || k == "TRACEPARENT" || k == "TRACESTATE" || k == "BAGGAGE" {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func spansNamed(spans []*tracepb.Span, prefix string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// TestDemoExportsOTLP runs conduit demo with an OTLP endpoint: the
// command's output is the plain build's, and the receiver gets the
// command's span, a span per call and listing under it, and the metric.
func TestDemoExportsOTLP(t *testing.T) {
	clearOTEL(t)
	rcv := otlptest.New(t)
	plain := runConduit(t, false, "demo")
	if plain.code != 0 {
		t.Fatalf("plain demo: %+v", plain)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "demo-test")
	r := runConduit(t, true, "demo")
	if r.code != 0 || r.stdout != plain.stdout {
		t.Fatalf("exit %d, stderr %s; stdout differs from the plain build's: %v", r.code, r.stderr, r.stdout != plain.stdout)
	}
	if f := rcv.Failures(); len(f) > 0 {
		t.Fatalf("the receiver could not read: %v", f)
	}
	spans := rcv.Spans()
	cmd := spansNamed(spans, "conduit demo")
	calls := spansNamed(spans, "tools/call")
	lists := spansNamed(spans, "tools/list")
	if len(cmd) != 1 || len(calls) < 4 || len(lists) < 2 {
		t.Fatalf("%d command spans, %d call spans, %d listing spans", len(cmd), len(calls), len(lists))
	}
	denied, events := 0, map[string]int{}
	for _, s := range append(calls, lists...) {
		if !bytes.Equal(s.TraceId, cmd[0].TraceId) || len(s.ParentSpanId) == 0 {
			t.Errorf("%s is not in the command's trace", s.Name)
		}
		a := otlptest.Attrs(s.Attributes)
		if s.Kind != tracepb.Span_SPAN_KIND_CLIENT || a["mcp.method.name"] == "" || a["conduit.server"] == "" {
			t.Errorf("%s: kind %v, attributes %v", s.Name, s.Kind, a)
		}
		if a["error.type"] == "denied" {
			denied++
			if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("%s: denied, status %v", s.Name, s.Status)
			}
		}
		for _, e := range s.Events {
			events[e.Name]++
		}
	}
	// The demo's policy denies a call, and asks about another.
	if denied == 0 || events["conduit.policy.decision"] < len(calls)-1 || events["conduit.approval"] == 0 {
		t.Errorf("%d denied calls; events %v", denied, events)
	}
	res := otlptest.Attrs(rcv.Traces()[0].ResourceSpans[0].Resource.Attributes)
	if res["service.name"] != "demo-test" || res["service.version"] == "" {
		t.Errorf("resource %v", res)
	}
	found := false
	for _, req := range rcv.Metrics() {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name == "mcp.client.operation.duration" && m.Unit == "s" && len(m.GetHistogram().GetDataPoints()) > 0 {
						found = true
					}
				}
			}
		}
	}
	if !found {
		t.Errorf("no mcp.client.operation.duration among %d metric exports", len(rcv.Metrics()))
	}
}

// webServer is a Streamable HTTP server with one tool, web's get, whose
// result is RESULT-TEXT; meta returns the _meta of its last call.
func webServer(t *testing.T) (hs *httptest.Server, meta func() mcp.Meta) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	var mu sync.Mutex
	var last mcp.Meta
	srv.AddTool(&mcp.Tool{Name: "get", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			last = req.Params.Meta
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "RESULT-TEXT"}}}, nil
		})
	hs = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs, func() mcp.Meta {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// TestCallOverHTTP runs conduit call against a Streamable HTTP server,
// traces as OTLP/JSON, under a parent named by TRACEPARENT: the server
// receives the call's trace context in _meta, and nothing of the URL's
// secrets, the headers, the arguments or the result reaches the receiver.
func TestCallOverHTTP(t *testing.T) {
	clearOTEL(t)
	rcv := otlptest.New(t)
	hs, meta := webServer(t)
	cfg := map[string]any{
		"mcpServers": map[string]any{"web": map[string]any{
			"url":     hs.URL + "/mcp?token=URL-SECRET",
			"headers": map[string]string{"Authorization": "Bearer HEADER-SECRET"},
		}},
		"policy": []any{map[string]any{"allow": []string{"web/*"}}},
	}
	data, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	t.Setenv("TRACEPARENT", "00-"+traceID+"-00f067aa0ba902b7-01")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rcv.URL+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")

	r := runConduit(t, true, "call", "--config", path, "web__get", `{"q": "ARG-SECRET"}`)
	if r.code != 0 || !strings.Contains(r.stdout, "RESULT-TEXT") {
		t.Fatalf("%+v", r)
	}
	if f := rcv.Failures(); len(f) > 0 {
		t.Fatalf("the receiver could not read: %v", f)
	}
	for _, ct := range rcv.ContentTypes() {
		if ct != "application/json" {
			t.Errorf("content type %s, want OTLP/JSON", ct)
		}
	}
	if n := len(rcv.Metrics()); n != 0 {
		t.Errorf("%d metric exports: no metrics endpoint was set", n)
	}
	calls := spansNamed(rcv.Spans(), "tools/call get")
	cmd := spansNamed(rcv.Spans(), "conduit call")
	if len(calls) != 1 || len(cmd) != 1 {
		t.Fatalf("spans %v", rcv.Spans())
	}
	if hex.EncodeToString(cmd[0].TraceId) != traceID || hex.EncodeToString(cmd[0].ParentSpanId) != "00f067aa0ba902b7" {
		t.Errorf("the command's span is not a child of TRACEPARENT: trace %x parent %x", cmd[0].TraceId, cmd[0].ParentSpanId)
	}
	a := otlptest.Attrs(calls[0].Attributes)
	if a["server.address"] != "127.0.0.1" || a["network.transport"] != "tcp" || a["mcp.session.id"] == "" {
		t.Errorf("attributes %v", a)
	}
	tp, _ := meta()["traceparent"].(string)
	if want := "00-" + traceID + "-" + hex.EncodeToString(calls[0].SpanId) + "-01"; tp != want {
		t.Errorf("the server got traceparent %q, want %q", tp, want)
	}
	for _, secret := range []string{"URL-SECRET", "HEADER-SECRET", "Bearer", "ARG-SECRET", "RESULT-TEXT", "/mcp"} {
		if rcv.Contains(secret) {
			t.Errorf("the export holds %q", secret)
		}
	}
}

// TestDisabled checks OTEL_SDK_DISABLED and the variables that ask for
// what is not built in: nothing is sent, the command still works.
func TestDisabled(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		warn string
	}{
		{map[string]string{"OTEL_SDK_DISABLED": "true"}, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_METRICS_EXPORTER": "prometheus"}, "only otlp is built in"},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, `OTLP protocol "grpc"`},
	} {
		clearOTEL(t)
		rcv := otlptest.New(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		r := runConduit(t, true, "demo")
		if r.code != 0 || !strings.Contains(r.stdout, "notes__search_notes") {
			t.Errorf("%v: %+v", c.env, r)
		}
		if len(rcv.Spans()) != 0 || len(rcv.Metrics()) != 0 {
			t.Errorf("%v: %d spans, %d metric exports sent", c.env, len(rcv.Spans()), len(rcv.Metrics()))
		}
		if c.warn != "" && !strings.Contains(r.stderr, c.warn) {
			t.Errorf("%v: stderr %q lacks %q", c.env, r.stderr, c.warn)
		}
	}
}

// TestServeServerSpans runs conduit serve over stdio, as an MCP client
// would start it, with a trace context in the tools/call's _meta: the
// export holds the request's SERVER span, a child of the client's
// context; the call's CLIENT span under it; and the server behind gets
// the CLIENT span's context.
func TestServeServerSpans(t *testing.T) {
	clearOTEL(t)
	rcv := otlptest.New(t)
	hs, meta := webServer(t)
	cfg := map[string]any{
		"mcpServers": map[string]any{"web": map[string]any{"url": hs.URL + "/mcp"}},
		"policy":     []any{map[string]any{"allow": []string{"web/*"}}},
	}
	data, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rcv.URL+"/v1/traces")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // serve's default store, the test's own
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"

	// The client's side of stdio: requests in, answers read until the
	// call's, then stdin closes and serve ends.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	env := &cli.Env{Stdin: inR, Stdout: outW, Stderr: &errb, Getenv: os.Getenv}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"serve", "--config", path}, env)
		outW.Close()
	}()
	send := func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	await := func(id string) string {
		for lines.Scan() {
			if strings.Contains(lines.Text(), `"id":`+id+`,`) || strings.Contains(lines.Text(), `"id":`+id+`}`) {
				return lines.Text()
			}
		}
		t.Fatalf("no answer %s: %v (stderr %s)", id, lines.Err(), errb.String())
		return ""
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}`)
	await("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"web__get","arguments":{},"_meta":{"traceparent":"00-` + traceID + `-` + parentID + `-01"}}}`)
	if got := await("2"); !strings.Contains(got, "RESULT-TEXT") {
		t.Fatalf("the call's answer: %s", got)
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d: %s", code, errb.String())
	}

	servers := spansNamed(rcv.Spans(), "tools/call web__get")
	calls := spansNamed(rcv.Spans(), "tools/call get")
	if len(servers) != 1 || len(calls) != 1 {
		t.Fatalf("spans %v", rcv.Spans())
	}
	sv, call := servers[0], calls[0]
	if sv.Kind != tracepb.Span_SPAN_KIND_SERVER || hex.EncodeToString(sv.TraceId) != traceID || hex.EncodeToString(sv.ParentSpanId) != parentID {
		t.Errorf("the SERVER span: kind %v, trace %x, parent %x; want a child of the client's", sv.Kind, sv.TraceId, sv.ParentSpanId)
	}
	if call.Kind != tracepb.Span_SPAN_KIND_CLIENT || !bytes.Equal(call.ParentSpanId, sv.SpanId) {
		t.Errorf("the CLIENT span: kind %v, parent %x; want the SERVER span %x", call.Kind, call.ParentSpanId, sv.SpanId)
	}
	tp, _ := meta()["traceparent"].(string)
	if want := "00-" + traceID + "-" + hex.EncodeToString(call.SpanId) + "-01"; tp != want {
		t.Errorf("the server got traceparent %q, want %q", tp, want)
	}
	if rcv.Contains("RESULT-TEXT") {
		t.Error("the export holds the result")
	}
}
