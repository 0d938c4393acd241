// Package cli is the conduit command: a governed MCP hub from an mcpServers
// configuration file, driven from the shell. Main runs one invocation. The
// program in cmd/conduit only wires it to the process.
//
// Output a program reads is JSON on stdout. Messages go to stderr. The exit
// status is 0 on success and 1 when the work failed. It is 2 on bad usage or
// bad input. Each comes with a message that says what to fix.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// Exit statuses.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// Env is what one invocation reads and writes. Tests can run Main in process
// with it, and the program can hand it the real ones.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (API keys).
	Getenv func(string) string
	// StdinTerminal reports whether stdin is a terminal, which makes
	// --approve default to ask.
	StdinTerminal bool
	// StderrTerminal reports whether stderr is a terminal, which makes
	// progress redraw one line.
	StderrTerminal bool
	// OpenTTY opens the controlling terminal for approval prompts; nil
	// means there is none.
	OpenTTY func() (io.ReadWriteCloser, error)
	// HTTPClient sends the agent's requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// OpenURL opens a URL in a browser (conduit login); nil means there is
	// no browser.
	OpenURL func(url string) error
	// Telemetry, when set, observes the commands (see [Telemetry]).
	Telemetry *Telemetry
}

// OSEnv returns the process's own Env.
func OSEnv() *Env {
	return &Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv:         os.Getenv,
		StdinTerminal:  IsTerminal(os.Stdin),
		StderrTerminal: IsTerminal(os.Stderr),
		OpenTTY: func() (io.ReadWriteCloser, error) {
			// Prompts read the terminal itself, not stdin, which may carry
			// the response being executed.
			return os.OpenFile("/dev/tty", os.O_RDWR, 0)
		},
		OpenURL: func() func(string) error {
			if hasBrowser(os.Getenv) {
				return openBrowser
			}
			return nil
		}(),
	}
}

// exitError carries an exit status and the message that says what to fix.
type exitError struct {
	code int
	err  error
	// usage, when set, names the command whose usage to point at.
	usage string
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError is bad usage: a flag, an argument. Exit 2.
func usageError(cmd, format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...), usage: cmd}
}

// inputError is bad input: a config file, a response, a schema. Exit 2.
func inputError(format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...)}
}

// failure is work that failed. Exit 1.
func failure(format string, a ...any) error {
	return &exitError{code: ExitFailure, err: fmt.Errorf(format, a...)}
}

// errSilent is a failure whose message was already written.
var errSilent = &exitError{code: ExitFailure, err: errors.New("")}

type command struct {
	name    string
	args    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
	hidden  bool
}

func commands() []command {
	return []command{
		{"demo", "[--json]", "play conduit's built-in demo: no network, no API key", runDemo, false},
		{"servers", "[--config FILE]", "each server's status and tool count", runServers, false},
		{"tools", "--provider P [--strict auto|true|false] [--cache-last] [--principal ID]", "the tools in a provider's format", runTools, false},
		{"exec", "--provider P [--response FILE] [--approve ask|allow|deny|defer] [--state FILE] [--taint S,...] [--principal ID]", "run a provider response's tool calls through the policy", runExec, false},
		{"resume", "--state FILE [--allow ID,...] [--deny ID,...] [--reason TEXT] [--halt]", "decide the calls exec --approve defer left pending", runResume, false},
		{"call", "SERVER__TOOL [JSON|-]", "one governed call; the shaped result on stdout", runCall, false},
		{"serve", "[--http ADDR [--no-auth | --oauth-issuer URL --oauth-resource URL]] [--transparent] [--principal ID]", "serve the servers, under the policy, as one MCP server", runServe, false},
		{"login", "SERVER [--principal ID] [--timeout D] [--no-browser]", "log in to an OAuth-protected server in a browser", runLogin, false},
		{"logout", "SERVER [--principal ID]", "forget a server's stored OAuth tokens", runLogout, false},
		{"search", "[--limit N] [--principal ID] QUERY", "the tools that best match a query, with their scores", runSearch, false},
		{"pin", "[--check | --update [SERVER...]] [--json]", "pin the tools' definitions in mcp.lock.json, or check them", runPin, false},
		{"audit", "[--json] [--severity S]", "report what the servers' tool definitions tell the model", runAudit, false},
		{"trail", "[--since D] [--principal ID] [--tool T] [--decision D] [--store URL]", "the audit trail conduit serve --console keeps, as JSON lines", runTrail, false},
		{"strict", "[FILE]", "convert a JSON schema to OpenAI strict mode", runStrict, false},
		{"agent", "--provider P --model M [--base-url URL] PROMPT", "a real agent loop against the provider's API", runAgent, false},
		{"demo-server", "notes|web|catalog", "serve one of the demo's MCP servers over stdio", runDemoServer, true},
		{"version", "", "print conduit's version", runVersion, false},
	}
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// Usage is the top-level usage text.
func Usage() string {
	var b strings.Builder
	b.WriteString(`conduit connects MCP servers to an LLM's tool calling, under a policy.

Usage:
  conduit COMMAND [flags] [args]

Commands:
`)
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintf(&b, "\nProviders: %s.\n", providerNames())
	b.WriteString(`
Every command but demo, strict and version reads an mcpServers configuration
(Claude Desktop / Cursor / VS Code shape) with an optional "policy" list,
from --config FILE (default ./mcp.json). When mcp.lock.json is beside it
(conduit pin), only the tools whose definitions it pins are offered.

Output meant for programs is JSON on stdout; messages go to stderr.
Exit status: 0 success, 1 the work failed, 2 bad usage or bad input.

Run 'conduit COMMAND -h' for a command's flags. Start with 'conduit demo'.
`)
	return b.String()
}

// Main runs one invocation of conduit with args (without the program name)
// and returns its exit status.
func Main(ctx context.Context, args []string, env *Env) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, Usage())
		return ExitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := lookup(args[1]); ok {
				return finish(env, c.name, c.run(ctx, env, []string{"-h"}))
			}
		}
		fmt.Fprint(env.Stdout, Usage())
		return ExitOK
	case "-version", "--version":
		name = "version"
	}
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(env.Stderr, "conduit: unknown command %q\n\n%s", name, Usage())
		return ExitUsage
	}
	return env.run(ctx, c, args[1:])
}

func finish(env *Env, cmd string, err error) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		ee = &exitError{code: ExitFailure, err: err}
	}
	if ee == errSilent {
		return ee.code
	}
	msg := ee.err.Error()
	if msg != "" {
		fmt.Fprintf(env.Stderr, "conduit %s: %s\n", cmd, msg)
	}
	if ee.usage != "" {
		fmt.Fprintf(env.Stderr, "run 'conduit %s -h' for usage\n", ee.usage)
	}
	return ee.code
}
