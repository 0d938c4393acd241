// Command conduit is conduit's command
// (github.com/conduitmcp/conduit/cmd/conduit) built with OpenTelemetry. It
// has the same commands and flags. Every call, listing and prompt or
// resource request of a command becomes a span. These spans sit under one
// span for the command ("conduit exec"). The command also records the
// mcp.client.operation.duration metric. It exports both over OTLP/HTTP when
// the standard environment variables ask.
//
// conduit serve has no command span. Each request it serves is a SERVER span
// (and mcp.server.operation.duration). That span is the root of a trace, or
// the child of the one its client sent in params._meta. Its calls are CLIENT
// spans under it. The servers behind it receive the context of those:
//
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 conduit exec --provider openai-chat --response r.json
//
// Traces are exported when OTEL_TRACES_EXPORTER is otlp. They are also
// exported when it is unset and OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. Metrics go likewise, with
// OTEL_METRICS_EXPORTER and OTEL_EXPORTER_OTLP_METRICS_ENDPOINT. The
// exporters and the SDK read the rest of the OTEL_* variables:
//
//   - headers;
//   - protocol, http/protobuf or http/json;
//   - timeout, sampler and batching;
//   - OTEL_SERVICE_NAME, default conduit;
//   - OTEL_RESOURCE_ATTRIBUTES.
//
// OTEL_PROPAGATORS chooses what is injected into each request's params._meta
// (default tracecontext,baggage). It also chooses what is read from
// TRACEPARENT, TRACESTATE and BAGGAGE in the environment. So a command
// started by a traced program joins its trace. OTEL_SDK_DISABLED=true turns
// it all off. Arguments and results are never recorded.
//
// It is a separate main, in the nested module otelconduit. So the root
// module's go.mod (and its conduit) carries no OpenTelemetry SDK. Build it
// in the module's directory:
//
//	cd otelconduit && go build -o conduit ./cmd/conduit
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/conduitmcp/conduit/internal/cli"
	"github.com/conduitmcp/conduit/otelconduit/internal/otelenv"
	"go.opentelemetry.io/otel"
)

// flushTimeout bounds the export of what a command recorded, after it ends.
// A collector that is down must not hold the command.
const flushTimeout = 5 * time.Second

func main() {
	// An interrupt cancels the work, so servers are stopped and calls
	// cancelled before the exit.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}

// run is main's work: OpenTelemetry from the environment, the command,
// and the flush.
func run(ctx context.Context, args []string, env *cli.Env) int {
	setup, err := otelenv.FromEnv(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "conduit: OpenTelemetry is off: %v\n", err)
		return cli.Main(ctx, args, env)
	}
	if setup == nil {
		return cli.Main(ctx, args, env)
	}
	for _, w := range setup.Warnings {
		fmt.Fprintf(env.Stderr, "conduit: OpenTelemetry: %s\n", w)
	}
	// The SDK reports export failures through the global handler.
	otel.SetErrorHandler(stderrHandler{env.Stderr})
	env.Telemetry = &cli.Telemetry{
		Trace:        setup.Telemetry.Trace(),
		ListingTrace: setup.Telemetry.AdaptersTrace(),
		Server:       setup.Telemetry.ServerMiddleware(),
		Audit:        setup.Telemetry.AuditRecord,
		Command:      setup.Command,
	}
	code := cli.Main(ctx, args, env)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	if err := setup.Shutdown(fctx); err != nil {
		fmt.Fprintf(env.Stderr, "conduit: OpenTelemetry: %v\n", err)
	}
	return code
}

type stderrHandler struct{ w io.Writer }

func (h stderrHandler) Handle(err error) { fmt.Fprintf(h.w, "conduit: OpenTelemetry: %v\n", err) }
