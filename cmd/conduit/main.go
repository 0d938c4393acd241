// Command conduit connects MCP servers to an LLM's tool calling under a
// policy: it lists the servers of an mcpServers configuration file in a
// provider's tool format, runs a model's tool calls through the policy, and
// answers them in the same format. 'conduit demo' shows it all with no
// network and no API key; 'conduit help' lists the commands.
//
// This build exports no OpenTelemetry, so that the root module's go.mod
// carries no SDK; when the OTEL_* variables ask for export it says so
// once on stderr. The build that exports is otelconduit/cmd/conduit.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/conduitmcp/conduit/internal/cli"
)

func main() {
	// An interrupt cancels the work, so servers are stopped and calls
	// cancelled before the exit.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := cli.OSEnv()
	if w := cli.ExportWarning(env.Getenv); w != "" {
		fmt.Fprintln(env.Stderr, w)
	}
	code := cli.Main(ctx, os.Args[1:], env)
	stop()
	os.Exit(code)
}
