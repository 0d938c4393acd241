package cli

import (
	"context"
	"slices"
	"strings"
	"testing"
)

type spanKey struct{}

// TestCommandSpan checks that every command runs in the context its
// Telemetry.Command made, except serve, whose requests each start their
// own trace (or continue their client's).
func TestCommandSpan(t *testing.T) {
	env, _, _ := testEnv("")
	var started, ended []string
	env.Telemetry = &Telemetry{Command: func(ctx context.Context, name string) (context.Context, func(int)) {
		started = append(started, name)
		return context.WithValue(ctx, spanKey{}, name), func(int) { ended = append(ended, name) }
	}}
	for _, name := range []string{"list", "serve"} {
		var seen any
		env.run(context.Background(), command{name: name, run: func(ctx context.Context, _ *Env, _ []string) error {
			seen = ctx.Value(spanKey{})
			return nil
		}}, nil)
		if want := map[string]any{"list": "list", "serve": nil}[name]; seen != want {
			t.Errorf("%s ran in span %v, want %v", name, seen, want)
		}
	}
	if !slices.Equal(started, []string{"list"}) || !slices.Equal(ended, []string{"list"}) {
		t.Errorf("command spans started %v, ended %v", started, ended)
	}
}

// TestExportWarning checks when the root build warns that it exports
// nothing: as the otelconduit build would export.
func TestExportWarning(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string // the variable named, "" for no warning
	}{
		{map[string]string{}, ""},
		{map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_PROPAGATORS": "tracecontext"}, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4318/v1/metrics"}, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"OTEL_METRICS_EXPORTER": "console, otlp"}, "OTEL_METRICS_EXPORTER"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "console"}, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, ""},
	} {
		got := ExportWarning(func(k string) string { return c.env[k] })
		switch {
		case c.want == "" && got != "":
			t.Errorf("%v: warned %q", c.env, got)
		case c.want != "" && (!strings.Contains(got, c.want+" is set") || !strings.Contains(got, "otelconduit/cmd/conduit")):
			t.Errorf("%v: %q, want a warning naming %s and the exporting build", c.env, got, c.want)
		}
	}
}
