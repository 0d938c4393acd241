package otelconduit_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/otelconduit"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// sdk is a real OpenTelemetry SDK whose spans and metrics stay in memory.
type sdk struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
}

func newSDK(t *testing.T) *sdk {
	s := &sdk{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	s.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
	s.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	t.Cleanup(func() {
		s.tp.Shutdown(context.Background())
		s.mp.Shutdown(context.Background())
	})
	return s
}

func (s *sdk) telemetry(t *testing.T, o otelconduit.Options) *otelconduit.Telemetry {
	o.TracerProvider, o.MeterProvider = s.tp, s.mp
	if o.Propagator == nil {
		o.Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	tel, err := otelconduit.New(&o)
	if err != nil {
		t.Fatal(err)
	}
	return tel
}

// ended returns the ended spans named name.
func (s *sdk) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, sp := range s.spans.Ended() {
		if sp.Name() == name {
			out = append(out, sp)
		}
	}
	return out
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// server is an in-process MCP server whose tools cover the outcomes of a
// call. It records the _meta of each request.
type server struct {
	*mcp.Server
	mu   sync.Mutex
	meta map[string][]mcp.Meta // by method
}

func newServer() *server {
	// Its lists change only when it says so (a cache hint of an hour): a
	// gateway's refresh of its lists does not list it again.
	opts := &mcp.ServerOptions{SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = 3_600_000 }}
	s := &server{Server: mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, opts), meta: map[string][]mcp.Meta{}}
	open := json.RawMessage(`{"type":"object"}`)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	for _, name := range []string{"read", "write", "drop", "hooked"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: open}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(name + " result " + string(req.Params.Arguments)), nil
		})
	}
	s.AddTool(&mcp.Tool{Name: "typed", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("typed"), nil })
	s.AddTool(&mcp.Tool{Name: "fail", InputSchema: open}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such file"}
	})
	s.AddTool(&mcp.Tool{Name: "toolerr", InputSchema: open}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := text("it broke")
		r.IsError = true
		return r, nil
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			var m mcp.Meta
			switch r := req.(type) {
			case *mcp.CallToolRequest:
				m = r.Params.Meta
			case *mcp.ListToolsRequest:
				m = r.Params.Meta
			default:
				return next(ctx, method, req)
			}
			s.mu.Lock()
			s.meta[method] = append(s.meta[method], m)
			s.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	return s
}

func (s *server) metas(method string) []mcp.Meta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.meta[method])
}

func (s *server) inMemory(t *testing.T) mcp.Transport {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return ct
}

func governance(tr *conduit.Trace) *conduit.Options {
	return &conduit.Options{Policy: conduit.NewPolicy(conduit.Deny("*/drop"), conduit.Ask("*/write"), conduit.Allow("*")),
		Validate: true,
		Approver: func(_ context.Context, req conduit.ApprovalRequest) conduit.Approval {
			if req.Call.Args["please"] == true {
				return conduit.Approve()
			}
			return conduit.Reject("the user said no")
		},
		Hooks: []conduit.Hook{{
			Name: "guard",
			Before: func(_ context.Context, c *conduit.Call) error {
				if c.Tool == "hooked" {
					return errors.New("not on Sundays")
				}
				return nil
			},
		}},
		Trace: tr}
}

func newHub(t *testing.T, servers []conduit.Server, o *conduit.Options) *conduit.Hub {
	h, err := conduit.NewHub(context.Background(), servers, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestCallSpans checks the span of each outcome of a governed call: its
// name, kind, attributes, events and status, and that nothing of the
// arguments or results is recorded unless asked for.
func TestCallSpans(t *testing.T) {
	s := newSDK(t)
	srv := newServer()
	hub := newHub(t, []conduit.Server{{ID: "fs", Transport: srv.inMemory(t)}}, governance(s.telemetry(t, otelconduit.Options{}).Trace()))
	ctx := context.Background()
	if _, err := hub.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	secret := "arg-" + strconv.Itoa(12345)
	for _, c := range []struct {
		name   string
		args   map[string]any
		span   string
		want   map[string]string // attributes, "" meaning absent, "*" any value
		events []string
		status codes.Code
		desc   string
	}{
		{"fs__read", map[string]any{"path": secret}, "tools/call read",
			map[string]string{"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read",
				"gen_ai.tool.call.id": "call-fs__read", "conduit.server": "fs", "error.type": "", "mcp.protocol.version": "*",
				"gen_ai.tool.call.arguments": "", "gen_ai.tool.call.result": "", "network.transport": "", "server.address": ""},
			[]string{"conduit.policy.decision"}, codes.Unset, ""},
		{"fs__drop", map[string]any{"path": secret}, "tools/call drop",
			map[string]string{"error.type": "denied", "mcp.protocol.version": ""},
			[]string{"conduit.policy.decision"}, codes.Error, ""},
		{"fs__write", map[string]any{"path": secret}, "tools/call write",
			map[string]string{"error.type": "denied"},
			[]string{"conduit.policy.decision", "conduit.approval"}, codes.Error, ""},
		{"fs__write", map[string]any{"please": true}, "tools/call write",
			map[string]string{"error.type": ""},
			[]string{"conduit.policy.decision", "conduit.approval"}, codes.Unset, ""},
		{"fs__hooked", map[string]any{}, "tools/call hooked",
			map[string]string{"error.type": "denied"},
			[]string{"conduit.policy.decision", "conduit.hook.denial"}, codes.Error, ""},
		{"fs__typed", map[string]any{"n": secret}, "tools/call typed",
			map[string]string{"error.type": "invalid_arguments"},
			[]string{"conduit.policy.decision", "conduit.validation.failure"}, codes.Error, ""},
		{"fs__fail", map[string]any{}, "tools/call fail",
			map[string]string{"error.type": "-32602", "rpc.response.status_code": "-32602"},
			[]string{"conduit.policy.decision"}, codes.Error, "no such file"},
		{"fs__toolerr", map[string]any{}, "tools/call toolerr",
			map[string]string{"error.type": "tool_error", "rpc.response.status_code": ""},
			[]string{"conduit.policy.decision"}, codes.Error, ""},
		{"fs__nope", map[string]any{}, "tools/call",
			map[string]string{"error.type": "unknown_tool", "gen_ai.tool.name": "fs__nope", "conduit.server": ""},
			nil, codes.Error, ""},
	} {
		s.spans.Reset()
		hub.CallTool(ctx, c.name, c.args, &conduit.CallOptions{ID: "call-" + c.name})
		spans := s.spans.Ended()
		if len(spans) != 1 {
			t.Fatalf("%s: %d spans", c.name, len(spans))
		}
		sp := spans[0]
		got := attrs(sp.Attributes())
		if sp.Name() != c.span || sp.SpanKind() != trace.SpanKindClient {
			t.Errorf("%s: span %q kind %v", c.name, sp.Name(), sp.SpanKind())
		}
		for k, v := range c.want {
			if g, ok := got[k]; v == "*" && g != "" {
				continue
			} else if g != v || (v == "" && ok) {
				t.Errorf("%s: %s = %q (set %v), want %q", c.name, k, g, ok, v)
			}
		}
		var events []string
		for _, e := range sp.Events() {
			events = append(events, e.Name)
			for _, kv := range e.Attributes {
				if strings.Contains(kv.Value.Emit(), "said no") || strings.Contains(kv.Value.Emit(), "Sundays") || strings.Contains(kv.Value.Emit(), secret) {
					t.Errorf("%s: event %s records %s = %q without RecordMessages", c.name, e.Name, kv.Key, kv.Value.Emit())
				}
			}
		}
		if !slices.Equal(events, c.events) {
			t.Errorf("%s: events %v, want %v", c.name, events, c.events)
		}
		if sp.Status().Code != c.status || sp.Status().Description != c.desc {
			t.Errorf("%s: status %+v, want %v %q", c.name, sp.Status(), c.status, c.desc)
		}
		for _, kv := range sp.Attributes() {
			if strings.Contains(kv.Value.Emit(), secret) || strings.Contains(kv.Value.Emit(), "result") {
				t.Errorf("%s: %s = %q: arguments or results recorded without being asked", c.name, kv.Key, kv.Value.Emit())
			}
		}
	}
	// The events' attributes.
	s.spans.Reset()
	hub.CallTool(ctx, "fs__write", map[string]any{"please": true}, nil)
	ev := s.spans.Ended()[0].Events()
	if a := attrs(ev[0].Attributes); a["conduit.policy.decision"] != "ask" || a["conduit.policy.rule"] != "ask */write" || a["conduit.policy.matched"] != "true" {
		t.Errorf("decision event %v", a)
	}
	if a := attrs(ev[1].Attributes); a["conduit.approval.allowed"] != "true" || a["conduit.approval.halt"] != "false" || a["conduit.approval.duration"] == "" {
		t.Errorf("approval event %v", a)
	}
}

// TestOptIn checks the opt-in attributes: arguments, results and messages.
func TestOptIn(t *testing.T) {
	s := newSDK(t)
	srv := newServer()
	tel := s.telemetry(t, otelconduit.Options{RecordArguments: true, RecordResults: true, RecordMessages: true})
	hub := newHub(t, []conduit.Server{{ID: "fs", Transport: srv.inMemory(t)}}, governance(tel.Trace()))
	ctx := context.Background()
	hub.CallTool(ctx, "fs__read", map[string]any{"path": "/a"}, nil)
	hub.CallTool(ctx, "fs__write", map[string]any{}, nil)
	hub.CallTool(ctx, "fs__hooked", map[string]any{}, nil)
	hub.CallTool(ctx, "fs__typed", map[string]any{"n": "x"}, nil)
	var spans []sdktrace.ReadOnlySpan
	for _, sp := range s.spans.Ended() {
		if strings.HasPrefix(sp.Name(), "tools/call") {
			spans = append(spans, sp)
		}
	}
	if len(spans) != 4 {
		t.Fatalf("%d spans", len(spans))
	}
	read := attrs(spans[0].Attributes())
	if read["gen_ai.tool.call.arguments"] != `{"path":"/a"}` {
		t.Errorf("arguments %q", read["gen_ai.tool.call.arguments"])
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(read["gen_ai.tool.call.result"]), &res); err != nil || len(res.Content) != 1 ||
		res.Content[0].(*mcp.TextContent).Text != `read result {"path":"/a"}` {
		t.Errorf("result %q: %v", read["gen_ai.tool.call.result"], err)
	}
	// A failed call records no result, but its message and reasons.
	for i, want := range []struct{ event, reason, desc string }{
		{"conduit.approval", "the user said no", "The call to fs__write was denied: the user said no."},
		{"conduit.hook.denial", "not on Sundays", "The call to fs__hooked was refused by guard: not on Sundays"},
		{"conduit.validation.failure", `x has type "string"`, `Invalid arguments for fs__typed`},
	} {
		sp := spans[i+1]
		if _, ok := attrs(sp.Attributes())["gen_ai.tool.call.result"]; ok {
			t.Errorf("%s: a result recorded for a failed call", sp.Name())
		}
		ev := sp.Events()[len(sp.Events())-1]
		if ev.Name != want.event || !strings.Contains(attrs(ev.Attributes)["conduit.reason"], want.reason) {
			t.Errorf("%s: event %s %v, want %s with %q", sp.Name(), ev.Name, attrs(ev.Attributes), want.event, want.reason)
		}
		if !strings.HasPrefix(sp.Status().Description, want.desc) {
			t.Errorf("%s: status %q, want %q", sp.Name(), sp.Status().Description, want.desc)
		}
	}
}

// TestHTTPPropagationAndPeer runs calls over Streamable HTTP: the server
// receives the trace context in params._meta, naming the call's span as
// its parent; the span has the session and server attributes; and no part
// of the URL but its host and port, nor any header, is recorded.
func TestHTTPPropagationAndPeer(t *testing.T) {
	s := newSDK(t)
	srv := newServer()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil))
	t.Cleanup(hs.Close)
	tel := s.telemetry(t, otelconduit.Options{})
	url := strings.Replace(hs.URL, "http://", "http://me:pa55word@", 1) + "/mcp?token=s3cret"
	hub := newHub(t, []conduit.Server{{ID: "web", URL: url, Headers: map[string]string{"Authorization": "Bearer t0ken"}}},
		&conduit.Options{Policy: conduit.AllowAll(), Trace: tel.Trace()})

	// A parent span of the caller's: the listing and the call are its
	// children.
	ctx, parent := s.tp.Tracer("test").Start(context.Background(), "agent turn")
	if _, err := hub.CallTool(ctx, "web__read", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	parent.End()
	list, call := s.ended("tools/list"), s.ended("tools/call read")
	if len(list) != 1 || len(call) != 1 {
		t.Fatalf("%d listing spans, %d call spans", len(list), len(call))
	}
	if call[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("the call's parent is %v, not the caller's span", call[0].Parent().SpanID())
	}
	// The call lists the tools first (no ToolSet given), inside its span.
	if list[0].Parent().SpanID() != call[0].SpanContext().SpanID() {
		t.Errorf("the listing's parent is %v, not the call's span", list[0].Parent().SpanID())
	}
	port := hs.Listener.Addr().String()
	port = port[strings.LastIndex(port, ":")+1:]
	for _, sp := range []sdktrace.ReadOnlySpan{list[0], call[0]} {
		a := attrs(sp.Attributes())
		if a["network.transport"] != "tcp" || a["network.protocol.name"] != "http" || a["server.address"] != "127.0.0.1" ||
			a["server.port"] != port || a["mcp.session.id"] == "" || a["mcp.protocol.version"] == "" || a["conduit.server"] != "web" {
			t.Errorf("%s: attributes %v", sp.Name(), a)
		}
		if sp.Name() == "tools/list" && (a["conduit.list.items"] != "7" || a["mcp.method.name"] != "tools/list") {
			t.Errorf("tools/list attributes %v", a)
		}
		for _, kv := range sp.Attributes() {
			for _, secret := range []string{"pa55word", "s3cret", "t0ken", "/mcp"} {
				if strings.Contains(kv.Value.Emit(), secret) {
					t.Errorf("%s: %s = %q holds %q", sp.Name(), kv.Key, kv.Value.Emit(), secret)
				}
			}
		}
	}
	// What the server received: the W3C trace context of each request's
	// span, which a server's instrumentation extracts as its parent.
	for _, c := range []struct {
		method string
		span   sdktrace.ReadOnlySpan
	}{{"tools/list", list[0]}, {"tools/call", call[0]}} {
		metas := srv.metas(c.method)
		if len(metas) != 1 {
			t.Fatalf("%s: %d requests", c.method, len(metas))
		}
		carrier := propagation.MapCarrier{}
		for k, v := range metas[0] {
			if s, ok := v.(string); ok {
				carrier[k] = s
			}
		}
		sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
		if !sc.IsValid() || sc.TraceID() != parent.SpanContext().TraceID() || sc.SpanID() != c.span.SpanContext().SpanID() {
			t.Errorf("%s: the server got _meta %v: span context %v, want the span %v", c.method, metas[0], sc, c.span.SpanContext())
		}
	}
}

// TestMetric checks mcp.client.operation.duration: one data point set per
// request sent, none for a call that was not, with the conventions'
// attributes and bucket boundaries.
func TestMetric(t *testing.T) {
	s := newSDK(t)
	srv := newServer()
	hub := newHub(t, []conduit.Server{{ID: "fs", Transport: srv.inMemory(t)}}, governance(s.telemetry(t, otelconduit.Options{}).Trace()))
	ctx := context.Background()
	for _, name := range []string{"fs__read", "fs__read", "fs__fail", "fs__toolerr", "fs__drop", "fs__hooked"} {
		hub.CallTool(ctx, name, map[string]any{}, nil)
	}
	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var hist metricdata.Histogram[float64]
	found := false
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelconduit.ScopeName || sm.Scope.SchemaURL != "https://opentelemetry.io/schemas/1.41.0" {
			continue
		}
		for _, m := range sm.Metrics {
			if m.Name == "mcp.client.operation.duration" && m.Unit == "s" {
				hist, found = m.Data.(metricdata.Histogram[float64])
			}
		}
	}
	if !found {
		t.Fatalf("no mcp.client.operation.duration in %+v", rm.ScopeMetrics)
	}
	counts := map[string]uint64{}
	for _, dp := range hist.DataPoints {
		a := attrs(dp.Attributes.ToSlice())
		key := a["mcp.method.name"] + " " + a["gen_ai.tool.name"] + " " + a["error.type"] + " " + a["rpc.response.status_code"]
		counts[key] += dp.Count
		if !slices.Equal(dp.Bounds, []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}) {
			t.Errorf("bounds %v", dp.Bounds)
		}
		if _, ok := a["mcp.session.id"]; ok {
			t.Errorf("a session id in the metric's attributes: %v", a)
		}
		if a["mcp.method.name"] == "tools/call" && (a["gen_ai.operation.name"] != "execute_tool" || a["mcp.protocol.version"] == "") {
			t.Errorf("attributes %v", a)
		}
	}
	want := map[string]uint64{
		"tools/list   ":                  1,
		"tools/call read  ":              2,
		"tools/call fail -32602 -32602":  1,
		"tools/call toolerr tool_error ": 1,
	}
	if len(counts) != len(want) {
		t.Errorf("data points %v, want %v", counts, want)
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%q: %d, want %d (all: %v)", k, counts[k], n, counts)
		}
	}
}

// TestAfterHookOutcome checks that an after-hook's denial fails the span
// but not the operation the metric records: the request succeeded.
func TestAfterHookOutcome(t *testing.T) {
	s := newSDK(t)
	srv := newServer()
	tel := s.telemetry(t, otelconduit.Options{})
	hub := newHub(t, []conduit.Server{{ID: "fs", Transport: srv.inMemory(t)}}, &conduit.Options{Policy: conduit.AllowAll(),
		Hooks: []conduit.Hook{{Name: "dlp", After: func(context.Context, *conduit.Call, *mcp.CallToolResult) (*mcp.CallToolResult, error) {
			return nil, errors.New("withheld")
		}}},
		Trace: tel.Trace()})
	if _, err := hub.CallTool(context.Background(), "fs__read", map[string]any{}, nil); !errors.Is(err, conduit.ErrDenied) {
		t.Fatalf("err = %v", err)
	}
	sp := s.ended("tools/call read")[0]
	last := sp.Events()[len(sp.Events())-1]
	if a := attrs(sp.Attributes()); a["error.type"] != "denied" || last.Name != "conduit.hook.denial" ||
		attrs(last.Attributes)["conduit.hook.stage"] != "after" {
		t.Errorf("span %v, events %v", a, sp.Events())
	}
	var rm metricdata.ResourceMetrics
	s.reader.Collect(context.Background(), &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				if a := attrs(dp.Attributes.ToSlice()); a["mcp.method.name"] == "tools/call" && a["error.type"] != "" {
					t.Errorf("the operation failed: %v", a)
				}
			}
		}
	}
}

// TestStrictFallbackEvent checks that a strict-mode fallback is an event of
// the span in the listing's context.
func TestStrictFallbackEvent(t *testing.T) {
	s := newSDK(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	// An open map does not convert to OpenAI strict mode.
	srv.AddTool(&mcp.Tool{Name: "tag", InputSchema: json.RawMessage(`{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"}}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	tel := s.telemetry(t, otelconduit.Options{})
	hub := newHub(t, []conduit.Server{{ID: "t", Transport: ct}}, &conduit.Options{Policy: conduit.AllowAll(), Trace: tel.Trace()})
	ctx, turn := s.tp.Tracer("test").Start(context.Background(), "turn")
	listing, err := adapters.Tools(ctx, hub, adapters.OpenAIChat, &adapters.ToolsOptions{Trace: tel.AdaptersTrace()})
	if err != nil {
		t.Fatal(err)
	}
	turn.End()
	if len(listing.Fallbacks) != 1 {
		t.Fatalf("fallbacks %v", listing.Fallbacks)
	}
	sp := s.ended("turn")[0]
	if len(sp.Events()) != 1 || sp.Events()[0].Name != "conduit.strict_fallback" {
		t.Fatalf("events %v", sp.Events())
	}
	if a := attrs(sp.Events()[0].Attributes); a["conduit.tool.exposed"] != "t__tag" || !strings.Contains(a["conduit.strict.reason"], "labels") {
		t.Errorf("event attributes %v", a)
	}
}

// TestResultBudgetEvent checks that a result cut to its budget is an
// event of the span in the Execute's context.
func TestResultBudgetEvent(t *testing.T) {
	s := newSDK(t)
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "log", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a line of the log\n", 20000)}}}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	tel := s.telemetry(t, otelconduit.Options{})
	hub := newHub(t, []conduit.Server{{ID: "t", Transport: ct}}, &conduit.Options{Policy: conduit.AllowAll()})
	o := &adapters.ExecOptions{TurnOptions: adapters.TurnOptions{Trace: tel.AdaptersTrace()}}
	o.Answers.MaxResultTokens = 500
	ctx, turn := s.tp.Tracer("test").Start(context.Background(), "turn")
	_, err = adapters.ExecuteToolCalls(ctx, hub, adapters.OpenAIChat,
		`{"choices": [{"message": {"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t__log", "arguments": "{}"}}]}}]}`, o)
	if err != nil {
		t.Fatal(err)
	}
	turn.End()
	sp := s.ended("turn")[0]
	if len(sp.Events()) != 1 || sp.Events()[0].Name != "conduit.result_budget" {
		t.Fatalf("events %v", sp.Events())
	}
	if a := attrs(sp.Events()[0].Attributes); a["conduit.tool.exposed"] != "t__log" || a["conduit.result.budget"] != "500" || a["conduit.result.cut"] != "true" {
		t.Errorf("event attributes %v", a)
	}
}

// TestNoopProviders checks the bridge over OpenTelemetry's no-op
// providers: calls work, and nothing is sent in _meta.
func TestNoopProviders(t *testing.T) {
	srv := newServer()
	tel, err := otelconduit.New(&otelconduit.Options{
		TracerProvider: tracenoop.NewTracerProvider(),
		Propagator:     propagation.TraceContext{},
	})
	if err != nil {
		t.Fatal(err)
	}
	hub := newHub(t, []conduit.Server{{ID: "fs", Transport: srv.inMemory(t)}}, governance(tel.Trace()))
	res, err := hub.CallTool(context.Background(), "fs__read", map[string]any{}, nil)
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("%v %v", res, err)
	}
	for _, m := range srv.metas("tools/call") {
		if _, ok := m["traceparent"]; ok {
			t.Errorf("_meta %v: trace context without a span", m)
		}
	}
}
