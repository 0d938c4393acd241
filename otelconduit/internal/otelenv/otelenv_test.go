package otelenv

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/otelconduit/internal/otlptest"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func clearOTEL(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") || k == "TRACEPARENT" || k == "TRACESTATE" || k == "BAGGAGE" {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		env             map[string]string
		traces, metrics bool
		warn            string
	}{
		{nil, false, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "RCV"}, true, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "RCV/v1/traces"}, true, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "RCV/v1/metrics"}, false, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, false, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console,otlp", "OTEL_METRICS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "RCV"}, true, false, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "jaeger", "OTEL_EXPORTER_OTLP_ENDPOINT": "RCV"}, false, true, "OTEL_TRACES_EXPORTER=jaeger: only otlp is built in"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "RCV", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, true, true, "metrics are sent as http/protobuf"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "RCV", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"}, true, false, `OTLP protocol "grpc"`},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "RCV", "OTEL_PROPAGATORS": "b3,tracecontext"}, true, true, `OTEL_PROPAGATORS: "b3" is not built in`},
	} {
		clearOTEL(t)
		rcv := otlptest.New(t)
		for k, v := range c.env {
			t.Setenv(k, strings.Replace(v, "RCV", rcv.URL, 1))
		}
		s, err := FromEnv(context.Background())
		if err != nil {
			t.Fatalf("%v: %v", c.env, err)
		}
		if s.Traces != c.traces || s.Metrics != c.metrics || s.Telemetry == nil {
			t.Errorf("%v: traces %v metrics %v, want %v %v", c.env, s.Traces, s.Metrics, c.traces, c.metrics)
		}
		if got := strings.Join(s.Warnings, "; "); (c.warn == "") != (got == "") || !strings.Contains(got, c.warn) {
			t.Errorf("%v: warnings %q, want %q", c.env, got, c.warn)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("%v: shutdown: %v", c.env, err)
		}
	}
	clearOTEL(t)
	t.Setenv("OTEL_SDK_DISABLED", "true")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "RCV")
	if s, err := FromEnv(context.Background()); s != nil || err != nil {
		t.Errorf("OTEL_SDK_DISABLED: %v %v", s, err)
	}
}

// TestCommandJoinsEnvTrace checks that a command's context continues the
// trace of TRACEPARENT, and that its requests carry it on, even with
// nothing exported.
func TestCommandJoinsEnvTrace(t *testing.T) {
	clearOTEL(t)
	t.Setenv("TRACEPARENT", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	t.Setenv("BAGGAGE", "tenant=acme")
	s, err := FromEnv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, end := s.Command(context.Background(), "exec")
	defer end(0)
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("span context %v", sc)
	}
	carrier := propagation.MapCarrier{}
	s.prop.Inject(ctx, carrier)
	if !strings.HasPrefix(carrier["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-") || carrier["baggage"] != "tenant=acme" {
		t.Errorf("injected %v", carrier)
	}

	t.Setenv("OTEL_PROPAGATORS", "none")
	s, err = FromEnv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, end = s.Command(context.Background(), "exec")
	defer end(0)
	carrier = propagation.MapCarrier{}
	s.prop.Inject(ctx, carrier)
	if len(carrier) != 0 || trace.SpanContextFromContext(ctx).IsValid() {
		t.Errorf("OTEL_PROPAGATORS=none: injected %v", carrier)
	}
	if f := s.prop.Fields(); len(f) != 0 {
		t.Errorf("fields %v", f)
	}
}

// TestAuditRecordsExported checks that an audit record of the console
// reaches the collector as an OTLP log record, with its fields as
// attributes and never the arguments themselves.
func TestAuditRecordsExported(t *testing.T) {
	clearOTEL(t)
	rcv := otlptest.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	s, err := FromEnv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !s.Logs {
		t.Fatal("logs are not exported with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	no := false
	s.Telemetry.AuditRecord(context.Background(), gateway.AuditRecord{
		Time: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC), Kind: "call", Principal: "alice",
		Server: "github", Tool: "create_issue", ArgsDigest: "sha256:abc", Decision: "ask",
		Approver: "console:bob", Approved: &no, Outcome: "denied",
	})
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := rcv.LogRecords()
	if len(recs) != 1 {
		t.Fatalf("%d log records, want 1 (failures: %v)", len(recs), rcv.Failures())
	}
	r := recs[0]
	attrs := otlptest.Attrs(r.Attributes)
	for k, want := range map[string]string{
		"conduit.audit.principal": "alice", "conduit.audit.tool": "create_issue",
		"conduit.audit.decision": "ask", "conduit.audit.approver": "console:bob",
		"conduit.audit.approved": "false", "conduit.audit.outcome": "denied",
		"conduit.audit.argsDigest": "sha256:abc",
	} {
		if attrs[k] != want {
			t.Errorf("%s = %q, want %q (all: %v)", k, attrs[k], want, attrs)
		}
	}
	if r.EventName != "conduit.audit" || r.SeverityText != "WARN" {
		t.Errorf("event %q severity %q, want conduit.audit, WARN", r.EventName, r.SeverityText)
	}
	if body := r.Body.GetStringValue(); !strings.Contains(body, "alice") || !strings.Contains(body, "github/create_issue") {
		t.Errorf("body %q", body)
	}
}
