package conduit

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/conduitmcp/conduit/pins"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// driftSkip is why a tool with drift d is left out of a tool set.
func driftSkip(d *pins.Drift) SkipReason {
	if d.Kind == pins.DriftNew {
		return SkipPinNew
	}
	return SkipPinChanged
}

// digestCache remembers the digests of listed tools, which stay the same
// *mcp.Tool for as long as their listing is current: a hub checks them at
// every new tool set and before every call.
type digestCache struct {
	mu sync.Mutex
	m  map[*mcp.Tool]digestResult
}

type digestResult struct {
	digest string
	err    error
}

// digest returns pins.ToolDigest(t), remembered. A nil cache remembers
// nothing.
func (dc *digestCache) digest(t *mcp.Tool) (string, error) {
	if dc == nil {
		return pins.ToolDigest(t)
	}
	dc.mu.Lock()
	r, ok := dc.m[t]
	dc.mu.Unlock()
	if ok {
		return r.digest, r.err
	}
	r.digest, r.err = pins.ToolDigest(t)
	dc.mu.Lock()
	if dc.m == nil {
		dc.m = map[*mcp.Tool]digestResult{}
	}
	dc.m[t] = r
	dc.mu.Unlock()
	return r.digest, r.err
}

// keep forgets the digests of tools that are in none of lists.
func (dc *digestCache) keep(lists []ServerTools) {
	live := map[*mcp.Tool]bool{}
	for _, l := range lists {
		for _, t := range l.Tools {
			live[t] = true
		}
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	for t := range dc.m {
		if !live[t] {
			delete(dc.m, t)
		}
	}
}

// Drift reports the tools left out of the tool set because their listed
// definitions are not pinned (changed or new), in server order and by
// name within a server.
func (ts *ToolSet) Drift() []pins.Drift {
	if ts == nil {
		return nil
	}
	return slices.Clone(ts.drift)
}

// checkPinned refuses a call unless the server's current listing, in
// its current session, has the tool with its pinned definition; it
// returns the session that listing belongs to, the one to send the call
// on. When the server said its tools changed, or its session is new, its
// tools are listed again first, and the new tool set is made (and its
// drift told) before anything is sent.
func (c *core) checkPinned(ctx context.Context, cn *conn, call *Call) (*mcp.ClientSession, error) {
	for range 3 {
		cn.mu.Lock()
		sess, tools, fresh := cn.session, cn.tools, !cn.stale
		cn.mu.Unlock()
		if sess == nil {
			_, err := cn.current()
			return nil, unavailableError(call.Server, call.Tool, call.Exposed, err)
		}
		if !fresh {
			if _, _, err := cn.listTools(ctx, listFor{resolve: true}); err != nil {
				if ctx.Err() != nil {
					return nil, endedError(ctx, call.Def, 0, err)
				}
				return nil, newError(ErrUnavailable, call.Server, call.Tool,
					"The tools of the server of "+call.Exposed+" could not be listed to check its pinned definition; the call was not sent.", err)
			}
			// The new tool set, with its drift told, before the call.
			if _, err := c.listToolsAs(ctx, listFor{principal: cn.principal}); err != nil {
				return nil, listingError(ctx, err)
			}
			continue
		}
		var tool *mcp.Tool
		n := 0
		for _, t := range tools {
			if t != nil && t.Name == call.Tool {
				tool = t
				n++
			}
		}
		if n != 1 {
			return nil, newError(ErrUnknownTool, call.Server, call.Tool,
				"The tool "+call.Exposed+" is no longer offered by its server.", nil)
		}
		digest, err := c.digests.digest(tool)
		if d := c.Pins.Compare(call.Server, tool, digest, err); d != nil {
			msg := "The tool " + call.Exposed + " is not offered: its definition changed since it was pinned."
			if d.Kind == pins.DriftNew {
				msg = "The tool " + call.Exposed + " is not offered: its definition is not pinned."
			}
			return nil, newError(ErrUnknownTool, call.Server, call.Tool, msg, fmt.Errorf("%w: %s", pins.ErrNotPinned, d.Message()))
		}
		return sess, nil
	}
	return nil, newError(ErrUnavailable, call.Server, call.Tool,
		"The tools of the server of "+call.Exposed+" kept changing while they were checked against their pins; the call was not sent.", nil)
}

// driftReport returns what to tell of a new tool set's drift: the drift of
// the servers whose listing changed since the last tool set (every server
// when the pins changed), to be told once the tool set is in place.
//
// shared says the tool set is the listing for no principal (or for any,
// without servers of IdentityPrincipal), whose drift Status reports.
func (c *core) driftReport(ctx context.Context, ts *ToolSet, oldKey, key []uint64, pinsChanged, shared bool) func() {
	changed := map[string]bool{}
	for i, s := range c.slots {
		if pinsChanged || len(oldKey) != len(key) || oldKey[i] != key[i] {
			changed[s.srv.ID] = true
		}
	}
	var report []pins.Drift
	drift := map[string][]pins.Drift{}
	for _, d := range ts.drift {
		drift[d.Server] = append(drift[d.Server], d)
		if changed[d.Server] {
			report = append(report, d)
		}
	}
	if shared {
		c.drift = drift
	}
	if len(report) == 0 {
		return nil
	}
	return func() {
		for _, d := range report {
			c.Logger.Warn("conduit: tool left out: "+d.Message(), "server", d.Server, "tool", d.Tool,
				"drift", d.Kind.String(), "pinned", d.Pinned, "listed", d.Listed, "diff", d.Diff)
			if t := c.Trace; t != nil && t.PinDrift != nil {
				t.PinDrift(PinDriftInfo{Drift: d, Context: ctx})
			}
		}
	}
}

// statusDrift adds to each status the drift of its server's last listing
// in the current session.
func (c *core) statusDrift(out []ServerStatus) {
	if c.Pins == nil {
		return
	}
	c.tsMu.Lock()
	defer c.tsMu.Unlock()
	for i := range out {
		if out[i].Tools >= 0 {
			out[i].Drift = slices.Clone(c.drift[out[i].ID])
		}
	}
}
