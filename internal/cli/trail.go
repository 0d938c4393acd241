// The trail command: the audit trail conduit serve --console keeps, as JSON lines.

package cli

import (
	"context"
	"encoding/json"
	"github.com/conduitmcp/conduit/config"
	"strings"
	"time"

	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/store"
)

func runTrail(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "trail", `
Print the audit trail that conduit serve --console keeps in its store, one
JSON object a line, oldest first: every call's principal, server and tool,
the digest of its arguments (never the arguments), the policy's decision
and rule, who approved it, its outcome and duration, and the console's own
actions. The store is --store, else the configuration's "serve" store, else
the default SQLite file, as conduit serve chooses it.`)
	configPath := fs.String("config", "", "the configuration whose \"serve\" store to read (default: as the other commands find it)")
	storeURL := fs.String("store", "", storeUsage)
	since := fs.Duration("since", 24*time.Hour, "print the records of this long ago and later")
	principal := fs.String("principal", "", "only this principal's records")
	tool := fs.String("tool", "", "only records whose server/tool holds this text")
	decision := fs.String("decision", "", "only records of this decision or outcome (allow, ask, deny, ok, denied, ...)")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("trail", "unexpected argument %q", pos[0])
	}
	if *since <= 0 {
		return usageError("trail", "--since is a positive duration, such as 24h")
	}
	u, err := config.ExpandEnv(*storeURL)
	if err != nil {
		return inputError("--store: %v", err)
	}
	if u == "" && *configPath != "" {
		cfg, err := config.Load(*configPath)
		if err != nil {
			return inputError("%v", err)
		}
		if cfg.Serve != nil {
			u = cfg.Serve.Store
		}
	}
	st, _, err := openStore(env, "conduit trail", u, "")
	if err != nil {
		return err
	}
	defer st.Close()
	j, ok := st.(store.Journals)
	if !ok {
		return failure("conduit trail: the store keeps no audit trail")
	}
	recs, err := gateway.ReadAudit(ctx, j, time.Now().Add(-*since), 0)
	if err != nil {
		return failure("conduit trail: %v", err)
	}
	enc := json.NewEncoder(env.Stdout)
	for _, r := range recs {
		switch {
		case *principal != "" && r.Principal != *principal,
			*tool != "" && !strings.Contains(r.Server+"/"+r.Tool, *tool),
			*decision != "" && r.Decision != *decision && r.Outcome != *decision:
			continue
		}
		if err := enc.Encode(r); err != nil {
			return failure("conduit trail: %v", err)
		}
	}
	return nil
}
