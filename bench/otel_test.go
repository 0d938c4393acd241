package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/bench/internal/samples"
	"github.com/conduitmcp/conduit/otelconduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// otelSetups are the Traces BenchmarkOTel measures: otelconduit's over
// OpenTelemetry's no-op providers (the bridge installed, nothing
// configured); over the SDK with a batching span processor and a
// periodic metric reader whose OTLP/HTTP exporters send to a loopback
// collector that reads and discards what it is sent (so the export's
// marshalling and HTTP run on the same 2 cores as the calls), every call
// sampled or one in ten; the SDK's own floor; and the floor of a
// traceparent in _meta, which the in-process server pays for.
var otelSetups = []struct {
	name string
	make func(b *testing.B) *conduit.Trace
}{
	{"noop", func(b *testing.B) *conduit.Trace {
		return newTelemetry(b, &otelconduit.Options{
			TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider(),
		}).Trace()
	}},
	{"batch", func(b *testing.B) *conduit.Trace {
		tp, mp := otlpProviders(b, sdktrace.ParentBased(sdktrace.AlwaysSample()))
		return newTelemetry(b, &otelconduit.Options{TracerProvider: tp, MeterProvider: mp}).Trace()
	}},
	{"batch-sampled-10pc", func(b *testing.B) *conduit.Trace {
		tp, mp := otlpProviders(b, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)))
		return newTelemetry(b, &otelconduit.Options{TracerProvider: tp, MeterProvider: mp}).Trace()
	}},
	// The floor of batch: a bare span per call (no attribute, event,
	// propagation or metric) through the same span processor and
	// exporter, which is what the OpenTelemetry SDK costs by itself.
	{"span-floor", func(b *testing.B) *conduit.Trace {
		tp, _ := otlpProviders(b, sdktrace.ParentBased(sdktrace.AlwaysSample()))
		tracer := tp.Tracer("floor")
		return &conduit.Trace{
			CallStart: func(i conduit.CallStartInfo) context.Context {
				ctx, _ := tracer.Start(i.Context, "tools/call")
				return ctx
			},
			CallDone: func(i conduit.CallDoneInfo) { trace.SpanFromContext(i.Context).End() },
		}
	}},
	// The floor of the trace context in _meta: no Trace, the call's
	// CallOptions.Meta carries a traceparent. The in-process server
	// decodes it (over HTTP the base sends no _meta at all).
	{"meta-floor", nil},
}

// floorMeta is meta-floor's _meta.
var floorMeta = mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}

// tracedEnv is an env whose hub has the setup's Trace, or whose calls
// carry floorMeta for meta-floor.
func tracedEnv(b *testing.B, kind transportKind, mk func(*testing.B) *conduit.Trace) *env {
	if mk == nil {
		e := newEnv(b, kind)
		o := *e.copts
		o.Meta = floorMeta
		e.copts = &o
		return e
	}
	tr := mk(b)
	return newEnvWith(b, kind, func(o *conduit.Options) { o.Trace = tr })
}

// otlpProviders are an SDK tracer provider with a batching span processor
// and a meter provider with a periodic reader, both exporting OTLP/HTTP
// to a loopback collector that discards what it reads.
func otlpProviders(b *testing.B, sampler sdktrace.Sampler) (*sdktrace.TracerProvider, *sdkmetric.MeterProvider) {
	ctx := context.Background()
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(collector.Close)
	spans, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(collector.URL+"/v1/traces"))
	if err != nil {
		b.Fatal(err)
	}
	metrics, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(collector.URL+"/v1/metrics"))
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithSampler(sampler))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)))
	b.Cleanup(func() { tp.Shutdown(ctx); mp.Shutdown(ctx) })
	return tp, mp
}

func newTelemetry(b *testing.B, o *otelconduit.Options) *otelconduit.Telemetry {
	// What the conduit command injects into _meta.
	o.Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	tel, err := otelconduit.New(o)
	if err != nil {
		b.Fatal(err)
	}
	return tel
}

// BenchmarkOTel measures what OpenTelemetry adds to a governed call: the
// call of BenchmarkRatio's hub side (Hub.CallTool with the full
// governance, shaped for a model), on a hub without a Trace (base) and on
// one whose Trace is otelconduit's (subject), as interleaved pairs. x-p50
// is the figure for the 3 % target.
func BenchmarkOTel(b *testing.B) {
	for _, k := range []struct {
		name string
		kind transportKind
	}{{"InMemory", inMemory}, {"HTTP", loopbackHTTP}} {
		b.Run(k.name, func(b *testing.B) {
			base := newEnv(b, k.kind)
			for _, s := range otelSetups {
				b.Run(s.name, func(b *testing.B) {
					traced := tracedEnv(b, k.kind, s.make)
					samples.Pair(b, must(b, base.hubCall), must(b, traced.hubCall))
				})
			}
		})
	}
}

// BenchmarkOTelCall is BenchmarkOTel's sides alone, in memory, for their
// allocations: none (no Trace), then each of otelSetups.
func BenchmarkOTelCall(b *testing.B) {
	b.Run("none", func(b *testing.B) {
		e := newEnv(b, inMemory)
		f := must(b, e.hubCall)
		b.ReportAllocs()
		for b.Loop() {
			f()
		}
	})
	for _, s := range otelSetups {
		b.Run(s.name, func(b *testing.B) {
			e := tracedEnv(b, inMemory, s.make)
			f := must(b, e.hubCall)
			b.ReportAllocs()
			for b.Loop() {
				f()
			}
		})
	}
}
