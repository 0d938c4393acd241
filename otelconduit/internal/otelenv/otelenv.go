// Package otelenv sets up OpenTelemetry for a command from the standard
// OTEL_* environment variables. It makes OTLP/HTTP exporters for traces and
// metrics when the variables ask for them, and a bridge over them. The
// conduit command of otelconduit/cmd/conduit runs it before the CLI.
package otelenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/otelconduit"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Setup is OpenTelemetry as the environment configured it.
type Setup struct {
	// Telemetry is the bridge over the providers below.
	Telemetry *otelconduit.Telemetry
	// Traces, Metrics and Logs report what is exported. Logs are the
	// audit trail's records.
	Traces, Metrics, Logs bool
	// Warnings are the variables that ask for what is not supported,
	// each in a sentence for stderr.
	Warnings []string

	tp     trace.TracerProvider
	prop   propagation.TextMapPropagator
	tracer trace.Tracer
	stop   []func(context.Context) error
}

// FromEnv reads the environment and sets up what it asks for. It reads it
// with os.Getenv, since the exporters read it too.
//
//   - Traces are exported when OTEL_TRACES_EXPORTER is "otlp". They are also
//     exported when it is unset and OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. "none" turns them off.
//     Metrics go likewise, with OTEL_METRICS_EXPORTER and
//     OTEL_EXPORTER_OTLP_METRICS_ENDPOINT. A command that was given no
//     endpoint sends nothing. It does not guess a collector.
//   - The protocol is OTLP over HTTP (OTEL_EXPORTER_OTLP_PROTOCOL). It is
//     http/protobuf, the default, or http/json for traces. grpc is not built
//     in. A signal that asks for it is not exported.
//   - The exporters read the rest themselves: endpoints, headers, timeout,
//     compression, certificates, metrics temporality. The SDK reads
//     OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_METRIC_EXPORT_* and the limits.
//     The resource reads OTEL_SERVICE_NAME (default conduit) and
//     OTEL_RESOURCE_ATTRIBUTES.
//   - OTEL_PROPAGATORS is tracecontext, baggage or none (default
//     tracecontext,baggage). They inject into each request's _meta. They
//     extract the command's parent from TRACEPARENT, TRACESTATE and BAGGAGE
//     in the environment (environment variables as context carriers). So a
//     command run by a traced program joins its trace.
//
// With nothing to export, the bridge runs over the no-op providers. It still
// propagates a TRACEPARENT. With OTEL_SDK_DISABLED=true, FromEnv returns
// nil.
func FromEnv(ctx context.Context) (*Setup, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	s := &Setup{}
	var err error
	s.prop, err = propagators(os.Getenv("OTEL_PROPAGATORS"), &s.Warnings)
	if err != nil {
		return nil, err
	}
	s.Traces = s.wants("traces", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", true)
	s.Metrics = s.wants("metrics", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", false)
	s.Logs = s.wants("logs", "OTEL_LOGS_EXPORTER", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", false)

	var mp metric.MeterProvider = metricnoop.NewMeterProvider()
	var lp otellog.LoggerProvider = lognoop.NewLoggerProvider()
	s.tp = tracenoop.NewTracerProvider()
	if s.Traces || s.Metrics || s.Logs {
		res, err := resource.New(ctx,
			resource.WithAttributes(semconv.ServiceName("conduit"), semconv.ServiceVersion(conduit.Version)),
			resource.WithFromEnv(), resource.WithTelemetrySDK())
		if err != nil && !errors.Is(err, resource.ErrPartialResource) {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
		}
		if s.Traces {
			exp, err := otlptracehttp.New(ctx)
			if err != nil {
				return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
			s.tp = tp
			s.stop = append(s.stop, tp.Shutdown)
		}
		if s.Metrics {
			exp, err := otlpmetrichttp.New(ctx)
			if err != nil {
				s.Shutdown(ctx)
				return nil, fmt.Errorf("the OTLP metric exporter: %w", err)
			}
			m := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
			mp = m
			s.stop = append(s.stop, m.Shutdown)
		}
		if s.Logs {
			exp, err := otlploghttp.New(ctx)
			if err != nil {
				s.Shutdown(ctx)
				return nil, fmt.Errorf("the OTLP log exporter: %w", err)
			}
			l := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)), sdklog.WithResource(res))
			lp = l
			s.stop = append(s.stop, l.Shutdown)
		}
	}
	s.tracer = s.tp.Tracer(otelconduit.ScopeName, trace.WithInstrumentationVersion(conduit.Version))
	s.Telemetry, err = otelconduit.New(&otelconduit.Options{TracerProvider: s.tp, MeterProvider: mp, LoggerProvider: lp, Propagator: s.prop})
	if err != nil {
		s.Shutdown(ctx)
		return nil, err
	}
	return s, nil
}

// wants reports whether a signal is to be exported, noting what is not
// supported.
func (s *Setup) wants(signal, exporterVar, endpointVar, protocolVar string, json bool) bool {
	exporter := strings.ToLower(strings.TrimSpace(os.Getenv(exporterVar)))
	switch exporter {
	case "none":
		return false
	case "":
		if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv(endpointVar) == "" {
			return false
		}
	case "otlp":
	default:
		// Several may be listed; only otlp is built in.
		if !strings.Contains(","+strings.ReplaceAll(exporter, " ", "")+",", ",otlp,") {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s=%s: only otlp is built in; %s are not exported", exporterVar, exporter, signal))
			return false
		}
	}
	protocol := os.Getenv(protocolVar)
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "", "http/protobuf":
	case "http/json":
		if !json {
			s.Warnings = append(s.Warnings, fmt.Sprintf("OTLP %s are sent as http/protobuf: the exporter has no http/json", signal))
		}
	default:
		s.Warnings = append(s.Warnings, fmt.Sprintf("OTLP protocol %q: only http/protobuf and http/json are built in; %s are not exported", protocol, signal))
		return false
	}
	return true
}

// propagators is OTEL_PROPAGATORS' propagator.
func propagators(v string, warnings *[]string) (propagation.TextMapPropagator, error) {
	if strings.TrimSpace(v) == "" {
		v = "tracecontext,baggage"
	}
	var ps []propagation.TextMapPropagator
	for name := range strings.SplitSeq(v, ",") {
		switch name = strings.ToLower(strings.TrimSpace(name)); name {
		case "tracecontext":
			ps = append(ps, propagation.TraceContext{})
		case "baggage":
			ps = append(ps, propagation.Baggage{})
		case "none":
			return propagation.NewCompositeTextMapPropagator(), nil
		case "":
		default:
			*warnings = append(*warnings, fmt.Sprintf("OTEL_PROPAGATORS: %q is not built in (tracecontext, baggage, none)", name))
		}
	}
	return propagation.NewCompositeTextMapPropagator(ps...), nil
}

// envCarrier reads propagation keys from the environment, upper-cased
// (TRACEPARENT for traceparent).
type envCarrier struct{}

func (envCarrier) Get(key string) string { return os.Getenv(strings.ToUpper(key)) }
func (envCarrier) Set(string, string)    {}
func (envCarrier) Keys() []string        { return nil }

// Command starts the span of one command, the parent of its calls and
// listings. The span is under the trace the environment names, if any. end
// ends it with the command's exit status.
func (s *Setup) Command(ctx context.Context, name string) (_ context.Context, end func(exit int)) {
	ctx = s.prop.Extract(ctx, envCarrier{})
	ctx, span := s.tracer.Start(ctx, "conduit "+name, trace.WithSpanKind(trace.SpanKindInternal))
	return ctx, func(exit int) {
		if span.IsRecording() {
			span.SetAttributes(semconv.ProcessExitCode(exit))
			if exit != 0 {
				span.SetStatus(codes.Error, fmt.Sprintf("exit status %d", exit))
			}
		}
		span.End()
	}
}

// Shutdown flushes what was recorded and stops the exporters, within
// ctx.
func (s *Setup) Shutdown(ctx context.Context) error {
	var errs []error
	for _, stop := range s.stop {
		errs = append(errs, stop(ctx))
	}
	s.stop = nil
	return errors.Join(errs...)
}
