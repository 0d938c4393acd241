package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/pins"
	"github.com/conduitmcp/conduit/store"
)

// flagSet is a subcommand's flags, with its usage text.
type flagSet struct {
	*flag.FlagSet
	cmd   string
	about string
	env   *Env
}

func newFlags(env *Env, cmd, about string) *flagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	// Parse errors are reported by finish, with what to fix.
	fs.SetOutput(io.Discard)
	return &flagSet{FlagSet: fs, cmd: cmd, about: about, env: env}
}

func (fs *flagSet) usage() string {
	c, _ := lookup(fs.cmd)
	var b bytes.Buffer
	fmt.Fprintf(&b, "Usage: conduit %s %s\n\n%s\n", c.name, c.args, strings.TrimSpace(fs.about))
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		b.WriteString("\nFlags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return b.String()
}

// parse parses args, allowing flags after positional arguments ("call
// notes__add_note '{}' --principal u1"); "--" ends the flags.
func (fs *flagSet) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(fs.env.Stdout, fs.usage())
				return nil, flag.ErrHelp
			}
			return nil, usageError(fs.cmd, "%v", err)
		}
		rest := fs.Args()
		used := len(args) - len(rest)
		if used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// hubFlags are the flags of every command that opens the configuration.
type hubFlags struct {
	config         string
	connectTimeout time.Duration
	requireServers bool
	verbose        bool
	env            *Env
}

func (h *hubFlags) register(fs *flagSet) {
	h.env = fs.env
	fs.StringVar(&h.config, "config", "mcp.json", "the MCP configuration `file` (mcpServers, and an optional policy)")
	fs.DurationVar(&h.connectTimeout, "connect-timeout", 20*time.Second, "how long each server has to start and answer initialize")
	fs.BoolVar(&h.requireServers, "require-servers", false, "fail unless every server is up within --connect-timeout (by default the command goes on with the servers that are up)")
	fs.BoolVar(&h.verbose, "v", false, "log conduit's and the MCP SDK's events to stderr")
}

// loadConfig reads the configuration, turning every way it can be wrong into
// an exit-2 message that says what to fix.
func (h *hubFlags) loadConfig() (*config.File, error) {
	data, err := os.ReadFile(h.config)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, inputError("no configuration file %s: create one with an \"mcpServers\" object (see docs/getting-started.md), or name yours with --config FILE", h.config)
	case err != nil:
		return nil, inputError("reading the configuration: %v", err)
	}
	cfg, err := config.Parse(data)
	if err != nil {
		return nil, inputError("%s: %v", h.config, strings.TrimPrefix(err.Error(), "config: "))
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(h.env.Stderr, "conduit: %s: %s\n", h.config, w)
	}
	return cfg, nil
}

type hubOptions struct {
	approver conduit.Approver
	trace    *conduit.Trace
	// needPolicy says the command makes calls, so a missing policy is
	// worth a word.
	needPolicy bool
	// noPins leaves the lock file unread: the command reads what the
	// servers list, pinned or not.
	noPins bool
	// store is the hub's Options.Store (--store), nil for its own.
	store store.Store
}

// openHub loads the configuration, unless cfg is given, and connects to its servers. Servers that
// are down are reported on stderr; when none is up the command fails.
func (h *hubFlags) openHub(ctx context.Context, env *Env, cfg *config.File, o hubOptions) (*conduit.Hub, *config.File, error) {
	if cfg == nil {
		var err error
		if cfg, err = h.loadConfig(); err != nil {
			return nil, nil, err
		}
	}
	hub, err := h.connect(ctx, env, cfg, o)
	if err != nil {
		return nil, nil, err
	}
	var up, down int
	for _, st := range hub.Status() {
		// A server of "identity": "principal" opens its sessions on each
		// principal's first request.
		if st.State == conduit.StateUp || st.State == conduit.StatePerPrincipal {
			up++
			continue
		}
		down++
		if st.State == conduit.StateNeedsLogin {
			fmt.Fprintf(env.Stderr, "conduit: server %s needs a login: run '%s'\n", st.ID, loginHint(h.config, st.ID))
			continue
		}
		fmt.Fprintf(env.Stderr, "conduit: server %s is down: %v\n", st.ID, st.Err)
	}
	if up == 0 {
		hub.Close()
		return nil, nil, failure("no server in %s is up; fix the servers above ('conduit servers' shows each one's status)", h.config)
	}
	return hub, cfg, nil
}

func (h *hubFlags) connect(ctx context.Context, env *Env, cfg *config.File, o hubOptions) (*conduit.Hub, error) {
	policy := cfg.Policy
	if policy == nil {
		// Asking is the safe default: nothing runs without a yes.
		policy = conduit.NewPolicy(conduit.Ask("*"))
		if o.needPolicy {
			fmt.Fprintf(env.Stderr, "conduit: %s has no \"policy\": every call asks for approval\n", h.config)
		}
	}
	if err := prepareOAuth(env, cfg); err != nil {
		return nil, err
	}
	var logger *slog.Logger
	if h.verbose {
		logger = slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	var pinned *pins.Pins
	if !o.noPins {
		var err error
		if pinned, err = h.loadPins(); err != nil {
			return nil, err
		}
	}
	hub, err := conduit.NewHub(ctx, cfg.Servers, &conduit.Options{Policy: policy,
		Approver:       o.approver,
		Trace:          h.pinTrace(env, pinned, env.hubTrace(o.trace)),
		Logger:         logger,
		ConnectTimeout: h.connectTimeout,
		RequireServers: h.requireServers,
		Pins:           pinned,
		Store:          o.store,
		LaxPolicy:      cfg.LaxPolicy})
	if err != nil {
		return nil, h.openError(err)
	}
	for _, w := range hub.Warnings() {
		fmt.Fprintf(env.Stderr, "conduit: %s: %s\n", h.config, w)
	}
	return hub, nil
}

// openError is the error of a command whose hub or gateway could not be
// made. Servers not up under --require-servers are work that failed. The
// rest is a configuration to fix.
func (h *hubFlags) openError(err error) error {
	if errors.Is(err, conduit.ErrServersDown) {
		return failure("%s: %v (--require-servers)", h.config, strings.TrimPrefix(err.Error(), "conduit: "))
	}
	if errors.Is(err, conduit.ErrUnknownServer) {
		// Fail closed: a misspelt deny rule would deny nothing.
		return inputError("%s: %s\nconduit: fix the policy, or set \"strictPolicy\": false in %s to make this a warning",
			h.config, strings.TrimPrefix(err.Error(), "conduit: "), h.config)
	}
	return inputError("%s: %v", h.config, err)
}

// providerFlag parses --provider.
func parseProvider(cmd, s string) (adapters.Provider, error) {
	if s == "" {
		return adapters.Provider{}, usageError(cmd, "--provider is required: one of %s", providerNames())
	}
	p, err := adapters.ParseProvider(s)
	if err != nil {
		return adapters.Provider{}, usageError(cmd, "unknown provider %q: use one of %s", s, providerNames())
	}
	return p, nil
}

func providerNames() string {
	var names []string
	for _, p := range adapters.Providers() {
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}

// parseStrict parses --strict, which providers other than OpenAI's ignore.
func parseStrict(cmd, s string) (driver.StrictMode, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return driver.StrictAuto, nil
	case "true", "on":
		return driver.StrictOn, nil
	case "false", "off":
		return driver.StrictOff, nil
	}
	return 0, usageError(cmd, "--strict is auto, true or false, not %q", s)
}

// splitList parses a comma-separated list flag.
func splitList(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
