package cli

import (
	"context"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Telemetry observes the commands. The conduit built from
// otelconduit/cmd/conduit sets Env.Telemetry to export OpenTelemetry. The
// root module's conduit leaves it nil. So its go.mod carries no
// OpenTelemetry SDK.
type Telemetry struct {
	// Trace is every hub's Options.Trace.
	Trace *conduit.Trace
	// ListingTrace is told of every listing's events, beside the
	// command's own use of them.
	ListingTrace *adapters.Trace
	// Server is receiving middleware for conduit serve's sessions (see
	// gateway.Options.Middleware): otelconduit's SERVER spans.
	Server mcp.Middleware
	// Audit, when set, is given each record of conduit serve's audit
	// trail (with --console): otelconduit's log records.
	Audit func(context.Context, gateway.AuditRecord)
	// Command, when set, is called as a command starts (serve excepted). It
	// returns the context the command runs in. It also returns the function
	// to call with its exit status when it ends.
	Command func(ctx context.Context, name string) (context.Context, func(exit int))
}

// hubTrace is the Trace of a hub: the command's own, else the Env's.
func (env *Env) hubTrace(own *conduit.Trace) *conduit.Trace {
	if own != nil || env.Telemetry == nil {
		return own
	}
	return env.Telemetry.Trace
}

// listingTrace is own (nil for none) with the Env's listing trace beside.
func (env *Env) listingTrace(own *adapters.Trace) *adapters.Trace {
	if env.Telemetry == nil || env.Telemetry.ListingTrace == nil {
		return own
	}
	tel := env.Telemetry.ListingTrace
	if own == nil {
		return tel
	}
	return &adapters.Trace{
		StrictFallback: both(own.StrictFallback, tel.StrictFallback),
		ResultBudget:   both(own.ResultBudget, tel.ResultBudget),
	}
}

// both calls f and then g, either of which may be nil.
func both[I any](f, g func(I)) func(I) {
	switch {
	case f == nil:
		return g
	case g == nil:
		return f
	}
	return func(i I) { f(i); g(i) }
}

// serverMiddleware is the receiving middleware of conduit serve's
// sessions.
func (env *Env) serverMiddleware() []mcp.Middleware {
	if env.Telemetry == nil || env.Telemetry.Server == nil {
		return nil
	}
	return []mcp.Middleware{env.Telemetry.Server}
}

// run runs c, within the Env's command span when there is one. serve has
// none. It runs until stopped, and a span that long would be the parent of
// every request it ever served. It would be exported only at the end. Each
// of its requests is a SERVER span (Telemetry.Server). That span is the root
// of a trace, or a child of the trace context its client sent in
// params._meta.
func (env *Env) run(ctx context.Context, c command, args []string) int {
	if env.Telemetry == nil || env.Telemetry.Command == nil || c.name == "serve" {
		return finish(env, c.name, c.run(ctx, env, args))
	}
	ctx, end := env.Telemetry.Command(ctx, c.name)
	code := finish(env, c.name, c.run(ctx, env, args))
	end(code)
	return code
}

// ExportWarning is what the root module's conduit says when the OTEL_*
// variables in getenv ask for OpenTelemetry export. That conduit exports
// nothing. The variables are read as the otelconduit build reads them. They
// ask when OTEL_TRACES_EXPORTER or OTEL_METRICS_EXPORTER lists otlp. They
// also ask when it is unset and an OTLP endpoint is set. The warning keeps
// the traces a user expects from being missed in silence. It is "" when they
// do not ask, or OTEL_SDK_DISABLED is true.
func ExportWarning(getenv func(string) string) string {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return ""
	}
	for _, signal := range []struct{ exporter, endpoint string }{
		{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{"OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"},
	} {
		v := strings.ToLower(strings.ReplaceAll(getenv(signal.exporter), " ", ""))
		asking := ""
		if v != "" {
			// Only otlp is what the otelconduit build would export.
			if strings.Contains(","+v+",", ",otlp,") {
				asking = signal.exporter
			}
		} else {
			for _, e := range []string{signal.endpoint, "OTEL_EXPORTER_OTLP_ENDPOINT"} {
				if getenv(e) != "" {
					asking = e
					break
				}
			}
		}
		if asking != "" {
			return "conduit: " + asking + " is set, but this build of conduit does not export OpenTelemetry; " +
				"the build of github.com/conduitmcp/conduit/otelconduit/cmd/conduit does (see docs/telemetry.md)"
		}
	}
	return ""
}
