package otelconduit_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/otelconduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
)

// TestGatewayServerSpans serves a hub through a gateway with the server
// middleware, as the otelconduit build of conduit serve does: each request
// the gateway receives is a SERVER span, child of the client's trace
// context; the hub's CLIENT span for the call is its child; the server
// behind the gateway receives the CLIENT span's context; and
// mcp.server.operation.duration counts the requests by outcome.
func TestGatewayServerSpans(t *testing.T) {
	s := newSDK(t)
	srv := newServer()
	tel := s.telemetry(t, otelconduit.Options{})
	ctx := context.Background()
	cs := serveGateway(t, []conduit.Server{{ID: "fs", Transport: srv.inMemory(t)}}, &gateway.Options{
		Hub:        &conduit.Options{Policy: conduit.NewPolicy(conduit.Deny("*/drop"), conduit.Allow("*")), Trace: tel.Trace()},
		Middleware: []mcp.Middleware{tel.ServerMiddleware()},
	})

	s.spans.Reset()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__read", Arguments: map[string]any{},
		Meta: mcp.Meta{"traceparent": clientTraceparen}})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", res, err)
	}
	servers := s.ended("tools/call fs__read")
	if len(servers) != 1 {
		t.Fatalf("%d SERVER spans named tools/call fs__read", len(servers))
	}
	sv := servers[0]
	if sv.SpanKind() != trace.SpanKindServer {
		t.Errorf("kind %v, want server", sv.SpanKind())
	}
	if p := sv.Parent(); p.TraceID().String() != clientTraceID || p.SpanID().String() != clientSpanID || !p.IsRemote() {
		t.Errorf("the SERVER span's parent is %v, want the client's span", p)
	}
	a := attrs(sv.Attributes())
	for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "fs__read",
		"gen_ai.operation.name": "execute_tool", "network.transport": "pipe"} {
		if a[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, a[k], v, a)
		}
	}
	if a["mcp.protocol.version"] == "" || a["error.type"] != "" {
		t.Errorf("attributes %v", a)
	}
	calls := s.ended("tools/call read")
	if len(calls) != 1 {
		t.Fatalf("%d CLIENT spans", len(calls))
	}
	call := calls[0]
	if p := call.Parent(); p.SpanID() != sv.SpanContext().SpanID() || p.TraceID() != sv.SpanContext().TraceID() {
		t.Errorf("the call's parent is %v, want the SERVER span %v", p, sv.SpanContext())
	}
	if len(call.Links()) != 0 {
		t.Errorf("the call links %v: its parent is the SERVER span", call.Links())
	}
	metas := srv.metas("tools/call")
	if sent := sentContext(metas[len(metas)-1]); sent.SpanID() != call.SpanContext().SpanID() || sent.TraceID().String() != clientTraceID {
		t.Errorf("the server got %v, want the call's span", sent)
	}

	// A tool's error result: the SERVER span, a root without the
	// client's context, says tool_error.
	s.spans.Reset()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__toolerr", Arguments: map[string]any{}}); err != nil || !res.IsError {
		t.Fatalf("toolerr: %v %v", res, err)
	}
	failed := s.ended("tools/call fs__toolerr")
	if len(failed) != 1 || failed[0].Parent().IsValid() || attrs(failed[0].Attributes())["error.type"] != "tool_error" {
		t.Fatalf("the failed call's SERVER span: %v", failed)
	}
	// A tool the policy denies is not served: the SDK's JSON-RPC error.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__drop", Arguments: map[string]any{}}); err == nil {
		t.Fatal("a denied tool was called")
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if l := s.ended("tools/list"); len(l) == 0 || l[len(l)-1].SpanKind() != trace.SpanKindServer {
		t.Errorf("tools/list: %d spans", len(l))
	}

	var rm metricdata.ResourceMetrics
	if err := s.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "mcp.server.operation.duration" || m.Unit != "s" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
				a := attrs(dp.Attributes.ToSlice())
				if _, ok := a["mcp.session.id"]; ok {
					t.Errorf("a session id in the metric's attributes: %v", a)
				}
				counts[a["mcp.method.name"]+" "+a["gen_ai.tool.name"]+" "+a["error.type"]] += dp.Count
			}
		}
	}
	// The denied tool is not served: its name, the client's, is not an
	// attribute of the metric.
	for k, n := range map[string]uint64{"tools/call fs__read ": 1, "tools/call fs__toolerr tool_error": 1, "tools/list  ": 1,
		"tools/call  -32602": 1} {
		if counts[k] != n {
			t.Errorf("%q: %d, want %d (all: %v)", k, counts[k], n, counts)
		}
	}
	for k := range counts {
		if strings.Contains(k, "fs__drop") {
			t.Errorf("the metric names a tool that is not served: %q", k)
		}
	}
}

// A request without params, and one without a session, are served and
// recorded: the middleware reads nothing it was not given.
func TestServerMiddlewareBareRequests(t *testing.T) {
	s := newSDK(t)
	mw := s.telemetry(t, otelconduit.Options{}).ServerMiddleware()
	h := mw(func(context.Context, string, mcp.Request) (mcp.Result, error) { return &mcp.ListToolsResult{}, nil })
	for _, req := range []struct {
		method string
		req    mcp.Request
	}{
		{"tools/list", &mcp.ListToolsRequest{}},
		{"tools/call", &mcp.CallToolRequest{}},
		{"prompts/get", &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "review"}}},
		{"notifications/initialized", &mcp.InitializedRequest{}},
		// A name from the client is cut in the span's name.
		{"tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: strings.Repeat("x", 1000)}}},
	} {
		if _, err := h(context.Background(), req.method, req.req); err != nil {
			t.Fatalf("%s: %v", req.method, err)
		}
	}
	var names []string
	for _, sp := range s.spans.Ended() {
		names = append(names, sp.Name()+" "+sp.SpanKind().String())
	}
	if want := []string{"tools/list server", "tools/call server", "prompts/get review server", "tools/call " + strings.Repeat("x", 128) + " server"}; !slices.Equal(names, want) {
		t.Errorf("spans %v, want %v (notifications are not recorded)", names, want)
	}
}
