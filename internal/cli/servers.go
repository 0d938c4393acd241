package cli

import (
	"context"

	"github.com/conduitmcp/conduit"
)

type serverJSON struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Tools    int    `json:"tools"`
	Error    string `json:"error,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
	Login    string `json:"login,omitempty"` // the command to run, for a server that needs a login
	// Unpinned counts the tools left out because mcp.lock.json does not
	// pin their definitions.
	Unpinned int `json:"unpinned,omitempty"`
}

func runServers(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "servers", `
Connect to every server in the configuration and print each one's status
(up, or down and why; "per principal" for a server of "identity":
"principal", whose sessions open on each principal's first request) and
tool count:

  {"servers": [{"id": "notes", "status": "up", "tools": 3}, ...]}

The exit status is 1 when any server is down.`)
	var h hubFlags
	h.register(fs)
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("servers", "unexpected argument %q", pos[0])
	}
	cfg, err := h.loadConfig()
	if err != nil {
		return err
	}
	hub, err := h.connect(ctx, env, cfg, hubOptions{})
	if err != nil {
		return err
	}
	defer hub.Close()
	// The counts come from the listing itself. A server may say its tools
	// changed right after initialize (server-everything does). It then has
	// no count in its status until it is listed again.
	ts, err := hub.ListTools(ctx)
	if err != nil {
		return failure("listing tools: %v", err)
	}
	counts := map[string]int{}
	for t := range ts.All() {
		counts[t.Server]++
	}
	out := []serverJSON{}
	down := 0
	for _, st := range hub.Status() {
		s := serverJSON{ID: st.ID, Status: st.State.String(), Tools: counts[st.ID], Unpinned: len(st.Drift)}
		if st.State != conduit.StateUp && st.State != conduit.StatePerPrincipal {
			down++
			s.Status = "down"
			if st.Err != nil {
				s.Error = st.Err.Error()
			}
			s.Attempts = st.Attempts
			if st.State == conduit.StateNeedsLogin {
				s.Status, s.Login, s.Attempts = st.State.String(), loginHint(h.config, st.ID), 0
			}
		}
		out = append(out, s)
	}
	if err := writeJSON(env.Stdout, map[string]any{"servers": out}); err != nil {
		return err
	}
	if down > 0 {
		return failure("%d of %d servers down; each one's error says why", down, len(out))
	}
	return nil
}
