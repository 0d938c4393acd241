package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/pins"
	"github.com/conduitmcp/conduit/skills"
)

// loadPins reads the lock file beside the configuration, or returns nil
// when there is none: then nothing is pinned.
func (h *hubFlags) loadPins() (*pins.Pins, error) {
	path := pins.LockPath(h.config)
	pinned, err := pins.Load(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, inputError("%v; fix it, or remove it and run 'conduit pin' to pin what the servers list now", err)
	}
	return pinned, nil
}

// pinTrace adds to trace a note on stderr for each tool left out because
// its definition is not pinned.
func (h *hubFlags) pinTrace(env *Env, pinned *pins.Pins, trace *conduit.Trace) *conduit.Trace {
	if pinned == nil {
		return trace
	}
	var t conduit.Trace
	if trace != nil {
		t = *trace
	}
	if t.PinDrift == nil {
		t.PinDrift = func(i conduit.PinDriftInfo) {
			fmt.Fprintf(env.Stderr, "conduit: left out %s (%s); 'conduit pin --check%s' shows the diff\n",
				i.Drift.Message(), pins.LockFile, h.configArg())
		}
	}
	return &t
}

// configArg is the --config flag to repeat in a hint, when it is not the
// default.
func (h *hubFlags) configArg() string {
	if h.config == "mcp.json" {
		return ""
	}
	return " --config " + h.config
}

type driftJSON struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Drift  string `json:"drift"`
	Pinned string `json:"pinned,omitempty"`
	Listed string `json:"listed,omitempty"`
	Diff   string `json:"diff"`
}

type pinServerJSON struct {
	ID    string `json:"id"`
	Tools int    `json:"tools"`
	Error string `json:"error,omitempty"`
}

type pinJSON struct {
	Lock    string          `json:"lock"`
	Servers []pinServerJSON `json:"servers"`
	// Drift is what differs from the lock file (--check). With --update, it
	// is what was accepted. With no flag, it is what was left as it is.
	Drift []driftJSON `json:"drift"`
	// Unconfigured are the servers the lock file pins that the
	// configuration no longer has (dropped, with --update).
	Unconfigured []string `json:"unconfigured"`
	// Unpinned are the tools whose definitions cannot be encoded, left
	// unpinned (and so not offered).
	Unpinned []string `json:"unpinned,omitempty"`
}

func runPin(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "pin", `
Pin the servers' tool definitions in mcp.lock.json, beside the configuration:
per server and tool, the SHA-256 of the definition's canonical JSON (name,
title, description, input and output schema, annotations) and the definition
itself. While the lock file exists, every conduit command offers only the
tools whose listed definition is the pinned one; a changed or new tool is left
out, and a call to it is refused, nothing sent. A server the lock file does
not have (added to the configuration since, or down when it was written)
offers nothing until it is pinned. A tool whose definition cannot be encoded
is not pinned (nor offered), and is reported. conduit serve reads the lock
file when it starts: restart it after pinning.

  conduit pin                  write the lock file; when it exists, pin the
                               servers it does not have yet and leave the
                               others as they are
  conduit pin --check          exit 1 when any tool or skill is changed, new
                               or gone, or a pinned server is no longer
                               configured, printing each diff
  conduit pin --update [SERVER...]
                               accept what the servers (all by default) list
                               now; a pinned server no longer configured
                               (all of them by default) is dropped

The diffs go to stdout (with --json, {"lock", "servers", "drift"}); characters
a terminal would not show are written as \uXXXX.`)
	var h hubFlags
	h.register(fs)
	check := fs.Bool("check", false, "compare the servers' tools with the lock file; exit 1 on any difference")
	update := fs.Bool("update", false, "accept the named servers' (default: every server's) current tools")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if *check && *update {
		return usageError("pin", "use one of --check and --update")
	}
	if len(pos) > 0 && !*update {
		return usageError("pin", "servers are named only with --update: unexpected argument %q", pos[0])
	}
	cfg, err := h.loadConfig()
	if err != nil {
		return err
	}
	configured := func(id string) bool {
		return slices.ContainsFunc(cfg.Servers, func(s conduit.Server) bool { return s.ID == id })
	}
	lock := pins.LockPath(h.config)
	pinned, err := h.loadPins()
	if err != nil {
		return err
	}
	for _, id := range pos {
		// A server no longer configured may be named to drop its pins.
		if !configured(id) && (pinned == nil || !pinned.Has(id)) {
			return usageError("pin", "no server %q in %s", id, h.config)
		}
	}
	if pinned == nil && *check {
		return failure("no lock file %s: run 'conduit pin%s' to write one", lock, h.configArg())
	}
	if pinned == nil {
		pinned = pins.New()
	}

	hub, err := h.connect(ctx, env, cfg, hubOptions{noPins: true})
	if err != nil {
		return err
	}
	defer hub.Close()
	ts, err := hub.ListTools(ctx)
	if err != nil {
		return failure("listing tools: %v", err)
	}

	out := pinJSON{Lock: lock, Servers: []pinServerJSON{}, Drift: []driftJSON{}, Unconfigured: []string{}}
	var down []string
	var unpinned []error
	var drift []pins.Drift
	changed := false
	for _, l := range ts.Listings() {
		s := pinServerJSON{ID: l.Server, Tools: len(l.Tools)}
		if l.Down != nil {
			s.Error = l.Down.Error()
			down = append(down, l.Server)
			out.Servers = append(out.Servers, s)
			continue
		}
		out.Servers = append(out.Servers, s)
		d := pinned.Check(l.Server, l.Tools)
		accept := false
		switch {
		case *update:
			accept = len(pos) == 0 || slices.Contains(pos, l.Server)
		case !*check:
			accept = !pinned.Has(l.Server)
		}
		if accept {
			had := pinned.Has(l.Server)
			if err := pinned.Pin(l.Server, l.Tools); err != nil {
				// One tool that cannot be encoded stays unpinned (and
				// unoffered); the others are pinned.
				var te *pins.ToolError
				if !errors.As(err, &te) {
					return failure("%v", err)
				}
				unpinned = append(unpinned, unwrapJoined(err)...)
			}
			changed = changed || len(d) > 0 || !had
			if !*update {
				continue // a first pin is no drift
			}
		} else if *update {
			continue
		}
		drift = append(drift, d...)
	}
	skillDrift, skillsChanged, err := pinSkills(ctx, hub, pinned, pos, *check, *update)
	if err != nil {
		return failure("%v", err)
	}
	changed = changed || skillsChanged
	// Servers no longer configured: --update drops their pins (all of
	// them, or those named); otherwise they are reported.
	var dropped []string
	for _, id := range pinned.Servers() {
		if configured(id) {
			continue
		}
		if *update && (len(pos) == 0 || slices.Contains(pos, id)) {
			pinned.Forget(id)
			dropped = append(dropped, id)
			changed = true
			continue
		}
		out.Unconfigured = append(out.Unconfigured, id)
	}
	for _, err := range unpinned {
		out.Unpinned = append(out.Unpinned, err.Error())
	}
	for _, d := range drift {
		out.Drift = append(out.Drift, driftJSON{Server: d.Server, Tool: d.Tool, Drift: d.Kind.String(), Pinned: d.Pinned, Listed: d.Listed, Diff: d.Diff})
	}
	for _, d := range skillDrift {
		out.Drift = append(out.Drift, driftJSON{Server: d.server, Tool: "skill:" + d.name, Drift: d.kind, Pinned: d.pinned, Listed: d.listed})
	}
	if changed && !*check {
		if err := pinned.Save(lock); err != nil {
			return failure("writing the lock file: %v", err)
		}
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, out); err != nil {
			return err
		}
	} else if *check {
		writeDrift(env.Stdout, drift)
		for i, d := range skillDrift {
			if i > 0 || len(drift) > 0 {
				fmt.Fprintln(env.Stdout)
			}
			fmt.Fprintln(env.Stdout, d.message())
		}
		for i, id := range out.Unconfigured {
			if i > 0 || len(drift) > 0 {
				fmt.Fprintln(env.Stdout)
			}
			fmt.Fprintf(env.Stdout, "server %s: pinned, and no longer in the configuration\n", id)
		}
	}
	for _, err := range unpinned {
		fmt.Fprintf(env.Stderr, "conduit: %v; it is not offered\n", err)
	}
	for _, id := range dropped {
		fmt.Fprintf(env.Stderr, "conduit: dropped the pins of server %s, no longer in %s\n", id, h.config)
	}
	if !*check && !*update && len(out.Unconfigured) > 0 {
		fmt.Fprintf(env.Stderr, "conduit: %s %s pinned and no longer configured; 'conduit pin --update%s' drops %s\n",
			strings.Join(out.Unconfigured, ", "), plural(len(out.Unconfigured), "is", "are"), h.configArg(), plural(len(out.Unconfigured), "it", "them"))
	}
	for _, id := range down {
		fmt.Fprintf(env.Stderr, "conduit: server %s is down; its tools were not %s\n", id, map[bool]string{true: "checked", false: "pinned"}[*check])
	}

	switch {
	case *check && (len(drift) > 0 || len(skillDrift) > 0 || len(out.Unconfigured) > 0):
		var parts []string
		if len(drift) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s differ from %s", len(drift), plural(len(drift), "tool", "tools"), lock))
		}
		if n := len(skillDrift); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s differ from %s", n, plural(n, "skill", "skills"), lock))
		}
		if n := len(out.Unconfigured); n > 0 {
			parts = append(parts, fmt.Sprintf("%d pinned %s no longer configured", n, plural(n, "server is", "servers are")))
		}
		return failure("%s; review the diffs, then accept them with 'conduit pin --update%s [SERVER...]'",
			strings.Join(parts, "; "), h.configArg())
	case *update:
		for _, d := range drift {
			fmt.Fprintf(env.Stderr, "conduit: accepted %s\n", d.Message())
		}
		for _, d := range skillDrift {
			fmt.Fprintf(env.Stderr, "conduit: accepted %s\n", d.message())
		}
		if changed {
			fmt.Fprintf(env.Stderr, "conduit: wrote %s\n", lock)
		} else {
			fmt.Fprintf(env.Stderr, "conduit: %s is up to date\n", lock)
		}
	case !*check:
		if changed {
			fmt.Fprintf(env.Stderr, "conduit: wrote %s\n", lock)
		}
		if len(drift) > 0 {
			fmt.Fprintf(env.Stderr, "conduit: %d pinned %s differ from what the servers list, left as pinned; 'conduit pin --check%s' shows the diffs\n",
				len(drift), plural(len(drift), "tool", "tools"), h.configArg())
		}
		if n := len(skillDrift); n > 0 {
			fmt.Fprintf(env.Stderr, "conduit: %d pinned %s differ from what the servers list, left as pinned; 'conduit pin --check%s' shows them\n",
				n, plural(n, "skill", "skills"), h.configArg())
		}
	}
	if len(down) > 0 {
		return failure("%d of %d servers down", len(down), len(out.Servers))
	}
	if n := len(unpinned); n > 0 {
		return failure("%d %s could not be pinned: %s cannot be encoded", n, plural(n, "tool", "tools"), plural(n, "its definition", "their definitions"))
	}
	return nil
}

// skillDrift is a skill whose listing is not its pin: new, changed or
// gone. A changed skill is a rug pull until reviewed.
type skillDrift struct {
	server, name, kind string
	pinned, listed     string // digests; "" for none
}

func (d skillDrift) message() string {
	switch d.kind {
	case "new":
		return fmt.Sprintf("skill %s of server %s: the skill is new, not pinned (listed %s)", d.name, d.server, d.listed)
	case "gone":
		return fmt.Sprintf("skill %s of server %s: the pinned skill is no longer listed (pinned %s)", d.name, d.server, d.pinned)
	}
	return fmt.Sprintf("skill %s of server %s: the skill changed since it was pinned (pinned %s, listed %s)", d.name, d.server, d.pinned, d.listed)
}

// pinSkills compares the skills of each server that has them with the
// pins, as the tools are compared. A server's skills are pinned on its
// first pin; --update accepts what they are now (all servers', or those
// named); --check accepts nothing. The policy is not asked: every skill
// a server lists is reviewed. A skill listed with "dynamic" files has no
// digest, so it is neither pinned nor loadable with pins.
func pinSkills(ctx context.Context, hub *conduit.Hub, pinned *pins.Pins, pos []string, check, update bool) (drift []skillDrift, changed bool, err error) {
	for _, id := range skills.Servers(ctx, hub, "", nil) {
		listed, err := skills.Listed(ctx, hub, id, nil)
		if err != nil {
			return nil, false, err
		}
		had := pinned.SkillPins(id)
		now := map[string]string{}
		var d []skillDrift
		for _, sk := range listed {
			dg := sk.Digest()
			if dg == "" {
				continue
			}
			now[sk.Name] = dg
			switch want, ok := had[sk.Name]; {
			case !ok:
				d = append(d, skillDrift{server: id, name: sk.Name, kind: "new", listed: dg})
			case want != dg:
				d = append(d, skillDrift{server: id, name: sk.Name, kind: "changed", pinned: want, listed: dg})
			}
		}
		for name, want := range had {
			if _, ok := now[name]; !ok {
				d = append(d, skillDrift{server: id, name: name, kind: "gone", pinned: want})
			}
		}
		slices.SortFunc(d, func(a, b skillDrift) int { return strings.Compare(a.name, b.name) })
		accept := false
		switch {
		case update:
			accept = len(pos) == 0 || slices.Contains(pos, id)
		case !check:
			accept = len(had) == 0
		}
		if accept {
			if len(d) > 0 {
				pinned.ForgetSkills(id)
				for name, dg := range now {
					if err := pinned.PinSkill(id, name, dg); err != nil {
						return nil, false, err
					}
				}
				changed = true
			}
			if !update {
				continue // a first pin is no drift
			}
		} else if update {
			continue
		}
		drift = append(drift, d...)
	}
	return drift, changed, nil
}

// unwrapJoined returns the errors an errors.Join holds, or err alone.
func unwrapJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// writeDrift writes each drift's account and diff.
func writeDrift(w io.Writer, drift []pins.Drift) {
	for i, d := range drift {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, d.Message())
		fmt.Fprint(w, d.Diff)
		if !strings.HasSuffix(d.Diff, "\n") {
			fmt.Fprintln(w)
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
