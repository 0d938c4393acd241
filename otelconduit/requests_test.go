package otelconduit_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/otelconduit"
	"github.com/conduitmcp/conduit/pins"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// clientTrace is a trace context as a gateway's client sends it in
// params._meta.
const (
	clientTraceID    = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID     = "00f067aa0ba902b7"
	clientTraceparen = "00-" + clientTraceID + "-" + clientSpanID + "-01"
)

// sentContext is the span context a server received in _meta.
func sentContext(m mcp.Meta) trace.SpanContext {
	carrier := propagation.MapCarrier{}
	for k, v := range m {
		if s, ok := v.(string); ok {
			carrier[k] = s
		}
	}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
}

// serveGateway serves servers through a gateway, as conduit serve does,
// to an in-process client, which it returns; the test's cleanup ends
// both.
func serveGateway(t *testing.T, servers []conduit.Server, o *gateway.Options) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	g, err := gateway.New(ctx, servers, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	ct, st := mcp.NewInMemoryTransports()
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- g.Serve(sctx, st, nil) }()
	t.Cleanup(func() { stop(); <-served })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestGatewayContinuesClientTrace serves a hub through a gateway, as
// conduit serve does: a client's tools/call carries a traceparent in
// params._meta; conduit's span for the call is its child, and the server
// behind the gateway receives conduit's span context, not the client's.
func TestGatewayContinuesClientTrace(t *testing.T) {
	s := newSDK(t)
	srv := newServer()
	tel := s.telemetry(t, otelconduit.Options{})
	ctx := context.Background()
	cs := serveGateway(t, []conduit.Server{{ID: "fs", Transport: srv.inMemory(t)}},
		&gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll(), Trace: tel.Trace()}})

	s.spans.Reset()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__read", Arguments: map[string]any{},
		Meta: mcp.Meta{"traceparent": clientTraceparen, "tracestate": "rojo=00f067aa0ba902b7"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", res, err)
	}
	calls := s.ended("tools/call read")
	if len(calls) != 1 {
		t.Fatalf("%d call spans", len(calls))
	}
	call := calls[0]
	if got := call.Parent(); got.TraceID().String() != clientTraceID || got.SpanID().String() != clientSpanID || !got.IsRemote() {
		t.Errorf("the call's parent is %v, want the client's span", got)
	}
	if ts := call.Parent().TraceState().String(); ts != "rojo=00f067aa0ba902b7" {
		t.Errorf("tracestate %q", ts)
	}
	metas := srv.metas("tools/call")
	sent := sentContext(metas[len(metas)-1])
	if sent.TraceID() != call.SpanContext().TraceID() || sent.SpanID() != call.SpanContext().SpanID() {
		t.Errorf("the server got %v (_meta %v), want the call's span %v", sent, metas[len(metas)-1], call.SpanContext())
	}
	if a := attrs(call.Attributes()); a["jsonrpc.request.id"] == "" {
		t.Errorf("no jsonrpc.request.id over the in-memory transport: %v", a)
	}
	// A call without a trace context is a root: no span of the process
	// holds the gateway's requests.
	s.spans.Reset()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__read", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if c := s.ended("tools/call read"); len(c) != 1 || c[0].Parent().IsValid() {
		t.Errorf("a call without the client's context: %d spans, parent %v", len(c), c[0].Parent())
	}
}

// featureServer is an in-process server with a prompt, a resource and
// completions.
func featureServer(t *testing.T) mcp.Transport {
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"go"}}}, nil
		},
	})
	srv.AddPrompt(&mcp.Prompt{Name: "review", Arguments: []*mcp.PromptArgument{{Name: "lang"}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "review"}}}}, nil
		})
	srv.AddResource(&mcp.Resource{Name: "readme", URI: "docs://readme"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "hi"}}}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return ct
}

// TestRequestSpans checks the spans of prompts/get, resources/read and
// completion/complete and of the listings they need: names, parents,
// attributes, the policy's decision on the request's own span, and the
// metric.
func TestRequestSpans(t *testing.T) {
	s := newSDK(t)
	tel := s.telemetry(t, otelconduit.Options{})
	hub := newHub(t, []conduit.Server{{ID: "docs", Transport: featureServer(t)}},
		&conduit.Options{Policy: conduit.AllowAll(), Trace: tel.Trace()})
	ctx, turn := s.tp.Tracer("test").Start(context.Background(), "turn")
	if _, err := hub.GetPrompt(ctx, "docs__review", map[string]string{"lang": "go"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.ReadResource(ctx, "docs://readme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "docs__review"},
		Argument: mcp.CompleteParamsArgument{Name: "lang", Value: "g"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.GetPrompt(ctx, "docs__nope", nil, nil); err == nil {
		t.Fatal("an unknown prompt was got")
	}
	turn.End()
	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, sp := range s.spans.Ended() {
		byName[sp.Name()] = append(byName[sp.Name()], sp)
	}
	one := func(name string) sdktrace.ReadOnlySpan {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d spans %q (all: %v)", len(byName[name]), name, byName)
		}
		return byName[name][0]
	}
	get, read, comp := one("prompts/get review"), one("resources/read"), one("completion/complete review")
	for _, c := range []struct {
		sp   sdktrace.ReadOnlySpan
		want map[string]string
	}{
		{get, map[string]string{"mcp.method.name": "prompts/get", "gen_ai.prompt.name": "review", "conduit.tool.exposed": "docs__review", "conduit.server": "docs"}},
		{read, map[string]string{"mcp.method.name": "resources/read", "mcp.resource.uri": "docs://readme", "conduit.server": "docs"}},
		{comp, map[string]string{"mcp.method.name": "completion/complete", "gen_ai.prompt.name": "review"}},
	} {
		a := attrs(c.sp.Attributes())
		for k, v := range c.want {
			if a[k] != v {
				t.Errorf("%s: %s = %q, want %q", c.sp.Name(), k, a[k], v)
			}
		}
		if a["jsonrpc.request.id"] == "" || a["mcp.protocol.version"] == "" || a["error.type"] != "" || a["gen_ai.operation.name"] != "" {
			t.Errorf("%s: attributes %v", c.sp.Name(), a)
		}
		if c.sp.SpanKind() != trace.SpanKindClient || c.sp.Parent().SpanID() != turn.SpanContext().SpanID() {
			t.Errorf("%s: kind %v, parent %v", c.sp.Name(), c.sp.SpanKind(), c.sp.Parent())
		}
		if ev := c.sp.Events(); len(ev) != 1 || ev[0].Name != "conduit.policy.decision" {
			t.Errorf("%s: events %v, want the policy's decision", c.sp.Name(), ev)
		}
	}
	// The listings the first request needed are within it.
	for _, name := range []string{"prompts/list", "resources/list", "resources/templates/list"} {
		l := one(name)
		if a := attrs(l.Attributes()); a["mcp.method.name"] != name || a["conduit.server"] != "docs" || a["conduit.list.items"] == "" {
			t.Errorf("%s: attributes %v", name, a)
		}
	}
	if one("prompts/list").Parent().SpanID() != get.SpanContext().SpanID() || one("resources/list").Parent().SpanID() != read.SpanContext().SpanID() {
		t.Error("a listing is not within the request that needed it")
	}
	if a := attrs(one("prompts/get").Attributes()); a["error.type"] != "unknown_tool" {
		t.Errorf("unknown prompt: %v", a)
	}

	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				a := attrs(dp.Attributes.ToSlice())
				got = append(got, a["mcp.method.name"]+" "+a["gen_ai.prompt.name"])
				if _, ok := a["mcp.resource.uri"]; ok {
					t.Errorf("a URI in the metric's attributes: %v", a)
				}
			}
		}
	}
	slices.Sort(got)
	want := []string{"completion/complete review", "prompts/get review", "prompts/list ", "resources/list ", "resources/read ", "resources/templates/list "}
	if !slices.Equal(got, want) {
		t.Errorf("data points %q, want %q", got, want)
	}
}

// TestRequestContinuesMeta checks that a request whose CallOptions.Meta
// has a trace context continues it, linking the caller's span.
func TestRequestContinuesMeta(t *testing.T) {
	s := newSDK(t)
	tel := s.telemetry(t, otelconduit.Options{})
	hub := newHub(t, []conduit.Server{{ID: "docs", Transport: featureServer(t)}},
		&conduit.Options{Policy: conduit.AllowAll(), Trace: tel.Trace()})
	ctx, ambient := s.tp.Tracer("test").Start(context.Background(), "ambient")
	defer ambient.End()
	if _, err := hub.GetPrompt(ctx, "docs__review", nil, &conduit.CallOptions{Meta: mcp.Meta{"traceparent": clientTraceparen}}); err != nil {
		t.Fatal(err)
	}
	sp := s.ended("prompts/get review")[0]
	if sp.Parent().SpanID().String() != clientSpanID {
		t.Errorf("parent %v, want the one in _meta", sp.Parent())
	}
	if l := sp.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != ambient.SpanContext().SpanID() {
		t.Errorf("links %v, want the ambient span", l)
	}
}

// TestLocalSpan checks a local tool's span: the GenAI execute_tool span,
// not an MCP client's.
func TestLocalSpan(t *testing.T) {
	s := newSDK(t)
	tel := s.telemetry(t, otelconduit.Options{})
	hub := newHub(t, []conduit.Server{{ID: "fs", Transport: newServer().inMemory(t)}}, &conduit.Options{Policy: conduit.AllowAll(), Trace: tel.Trace()})
	lt := &conduit.LocalTool{
		Tool: &conduit.Tool{Tool: &mcp.Tool{Name: "now", InputSchema: json.RawMessage(`{"type":"object"}`)}, Server: "app", Exposed: "app__now"},
		Answer: func(context.Context, *conduit.Call) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "noon"}}}, nil
		},
	}
	if _, err := hub.CallLocal(context.Background(), lt, map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	spans := s.ended("execute_tool now")
	if len(spans) != 1 {
		t.Fatalf("spans %v", s.spans.Ended())
	}
	a := attrs(spans[0].Attributes())
	if spans[0].SpanKind() != trace.SpanKindInternal || a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] != "now" {
		t.Errorf("kind %v, attributes %v", spans[0].SpanKind(), a)
	}
	if _, ok := a["mcp.method.name"]; ok {
		t.Errorf("a local call has mcp.method.name: %v", a)
	}
}

// TestPinDriftEvent checks that a tool left out for its pin is an event
// of the listing caller's span, and of a span of its own without one.
func TestPinDriftEvent(t *testing.T) {
	s := newSDK(t)
	tel := s.telemetry(t, otelconduit.Options{})
	pinned := pins.New()
	if err := pinned.Pin("fs", []*mcp.Tool{{Name: "read", Description: "reads", InputSchema: json.RawMessage(`{"type":"object"}`)}}); err != nil {
		t.Fatal(err)
	}
	srv := newServer()
	hub := newHub(t, []conduit.Server{{ID: "fs", Transport: srv.inMemory(t)}},
		&conduit.Options{Policy: conduit.AllowAll(), Pins: pinned, Trace: tel.Trace()})
	ctx, turn := s.tp.Tracer("test").Start(context.Background(), "turn")
	if _, err := hub.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	turn.End()
	var drift []map[string]string
	for _, e := range s.ended("turn")[0].Events() {
		if e.Name == "conduit.pin_drift" {
			drift = append(drift, attrs(e.Attributes))
		}
	}
	found := false
	for _, a := range drift {
		if a["conduit.pin.tool"] == "read" {
			found = a["conduit.pin.drift"] == "changed" && a["conduit.server"] == "fs" && a["conduit.pin.pinned"] != "" && a["conduit.pin.listed"] != ""
		}
	}
	if !found {
		t.Errorf("drift events %v, want read changed", drift)
	}

	// Without a span in the listing's context, the event has its own.
	pinned.Forget("fs")
	if err := pinned.Pin("fs", []*mcp.Tool{{Name: "write", InputSchema: json.RawMessage(`{"type":"object"}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.ListTools(context.Background()); err != nil {
		t.Fatal(err)
	}
	if own := s.ended("conduit.pin_drift"); len(own) == 0 || len(own[0].Events()) != 1 || own[0].Parent().IsValid() {
		t.Errorf("spans of their own: %v", own)
	}
}
