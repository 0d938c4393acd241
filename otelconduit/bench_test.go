package otelconduit_test

import (
	"context"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/otelconduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkEvents is the bridge's own cost for one allowed call, its
// events driven directly (CallStart, Decided, RequestMeta, CallDone): over
// the no-op providers, and over the SDK with a batching span processor
// (whose exporter discards) and a metric reader. The whole call's cost is
// bench/'s BenchmarkOTel.
func BenchmarkEvents(b *testing.B) {
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	for _, c := range []struct {
		name string
		o    otelconduit.Options
	}{
		{"noop", otelconduit.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}},
		{"sdk", otelconduit.Options{
			TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter())),
			MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.o.Propagator = prop
			tel, err := otelconduit.New(&c.o)
			if err != nil {
				b.Fatal(err)
			}
			tr := tel.Trace()
			tool := &conduit.Tool{Server: "fs", Exposed: "fs__read_text_file"}
			rule := conduit.Allow("fs/read_*")
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "20 lines"}}}
			req := &conduit.RequestInfo{Transport: "streamable-http", Address: "127.0.0.1", Port: 8080,
				SessionID: "P56WAEON3UWGIMQL7MWEC2UO5K", ProtocolVersion: "2025-11-25", Elapsed: 300 * time.Microsecond}
			b.ReportAllocs()
			for b.Loop() {
				call := &conduit.Call{ID: "call_1", Exposed: tool.Exposed, Principal: "u"}
				ctx := tr.CallStart(conduit.CallStartInfo{Context: context.Background(), Call: call})
				call.Server, call.Tool, call.Def = "fs", "read_text_file", tool
				tr.Decided(conduit.StepInfo{Context: ctx, Call: call, Decision: conduit.DecisionAllow, Rule: rule, Matched: true})
				tr.RequestMeta(conduit.RequestMetaInfo{Context: ctx, Method: "tools/call", Server: "fs", Call: call})
				tr.CallDone(conduit.CallDoneInfo{Context: ctx, Call: call, Result: res, Elapsed: 400 * time.Microsecond, Request: req})
			}
		})
	}
}
