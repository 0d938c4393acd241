package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/bounded"
	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits on callers: tool calls per minute and at once, for each
// principal. They are counted in the hub's store (store.Counters). So the
// replicas behind one address count the same calls. A call is counted
// once the policy, its approval and the before-hooks have let it through.
// A before-hook of the gateway's that runs last counts it. So a call the
// policy denies, or one asked about and not yet approved, costs nothing.

// Limit bounds the tool calls of principals. Each principal it applies to
// is counted apart, over every tool it matches together. So {Tools:
// ["github/*"], PerMinute: 60} lets each principal make 60 calls a minute
// to github's tools in all. Every Limit that matches a call applies. So a
// limit on one server's tools can sit under a ceiling on every tool.
type Limit struct {
	// Principals are the principals it applies to. Nil is every
	// principal, each counted apart.
	Principals []string
	// Tools are patterns of the tools it applies to. They are the
	// policy's patterns: "server/tool", "server", with globs, as in
	// conduit.Allow. Nil is every tool.
	Tools []string
	// PerMinute bounds the calls a principal makes to those tools in a
	// minute. A window opens at the first call and lasts a minute. A call
	// over the bound is refused until it ends. 0: no bound.
	PerMinute int
	// AtOnce bounds the calls a principal has in flight to those tools at
	// once, across replicas. A call holds its slot until it ends. When its
	// replica dies first, it holds it until its lease ends. The lease is
	// the hub's call timeout and a minute. 0: no bound.
	AtOnce int
}

// MetaRetryAfter is the _meta key of a tool result refused by a [Limit].
// Its value is the seconds to wait before retrying, a number. The
// result's text says it too.
const MetaRetryAfter = "io.github.conduitmcp/retryAfter"

// LimitError is the cause of a call refused by a [Limit]. It is the
// conduit.Error's Err, of conduit.ErrLimit. errors.As finds it.
type LimitError struct {
	// Limit is the limit that refused the call.
	Limit Limit
	// RetryAfter is how long to wait before the call may be allowed. For
	// PerMinute it is the end of the window. For AtOnce it is a guess (a
	// second), as no one knows when a call in flight ends.
	RetryAfter time.Duration
}

// Error says that a limit refused the call, and when to retry.
func (e *LimitError) Error() string {
	return fmt.Sprintf("over a limit of conduit serve (retry in %v)", e.RetryAfter)
}

// limiter applies the gateway's limits.
type limiter struct {
	limits   []compiledLimit
	counters store.Counters
	lease    time.Duration // of a slot of AtOnce
	logger   *slog.Logger
}

// compiledLimit is a Limit with its matcher and the prefix of its keys.
type compiledLimit struct {
	Limit
	match *conduit.Policy // allows what the limit applies to
	id    string          // the limit's digest, so that a changed limit counts afresh
}

// newLimiter checks and compiles limits; callTimeout is the hub's.
func newLimiter(limits []Limit, callTimeout time.Duration, logger *slog.Logger) (*limiter, error) {
	l := &limiter{logger: logger}
	switch {
	case callTimeout == 0:
		l.lease = bounded.DefaultCallTimeout + time.Minute
	case callTimeout < 0:
		l.lease = time.Hour
	default:
		l.lease = callTimeout + time.Minute
	}
	for i, lim := range limits {
		if lim.PerMinute < 0 || lim.AtOnce < 0 || lim.PerMinute == 0 && lim.AtOnce == 0 {
			return nil, fmt.Errorf("gateway: Limits[%d]: PerMinute or AtOnce must be positive, and neither negative", i)
		}
		if len(lim.Principals) == 0 {
			lim.Principals = nil
		}
		if len(lim.Tools) == 0 {
			lim.Tools = []string{"*"}
		}
		rule := conduit.Allow(lim.Tools...)
		if lim.Principals != nil {
			rule = rule.When(conduit.Principal(lim.Principals...))
		}
		p := conduit.NewPolicy(rule)
		if err := p.Err(); err != nil {
			return nil, fmt.Errorf("gateway: Limits[%d]: %w", i, err)
		}
		def, _ := json.Marshal(lim)
		l.limits = append(l.limits, compiledLimit{Limit: lim, match: p, id: strings.TrimPrefix(digest.Of(def), "sha256:")[:16]})
	}
	return l, nil
}

// key is the store's key of a limit's counts for a principal. The counts
// are its window and its slots, which the store keeps apart.
func (cl *compiledLimit) key(principal string) string {
	return "limit/" + cl.id + "/" + url.PathEscape(principal)
}

// heldSlots are the slots of AtOnce a call holds, which its end releases.
type heldSlots struct {
	mu    sync.Mutex
	slots []heldSlot
}

type heldSlot struct{ key, token string }

type heldKey struct{}

// hook is the before-hook that counts a call against the limits that
// match it. It is the last of the hub's before-hooks.
func (l *limiter) hook() conduit.Hook {
	return conduit.Hook{Name: "conduit serve's limits", Inline: true, Before: l.admit}
}

// admit counts c against every limit that matches it. It counts the slots
// first, then the windows. So a call refused for want of a slot costs no
// window. A refusal gives back what the call took.
func (l *limiter) admit(ctx context.Context, c *conduit.Call) error {
	held, _ := ctx.Value(heldKey{}).(*heldSlots)
	var taken []heldSlot
	giveBack := func() {
		l.release(context.WithoutCancel(ctx), taken)
	}
	var matched []*compiledLimit
	for i := range l.limits {
		if _, _, ok := l.limits[i].match.Decide(c); ok {
			matched = append(matched, &l.limits[i])
		}
	}
	for _, cl := range matched {
		if cl.AtOnce == 0 {
			continue
		}
		key := cl.key(c.Principal)
		s, err := l.counters.Acquire(ctx, key, int64(cl.AtOnce), l.lease)
		if err != nil {
			giveBack()
			return l.unavailable(c, err)
		}
		if !s.Acquired {
			giveBack()
			return limitError(c, cl.Limit, time.Second,
				fmt.Sprintf("%s at once, and %d in flight: retry when one has ended (in a second or more)", calls(cl.AtOnce), s.InUse))
		}
		taken = append(taken, heldSlot{key, s.Token})
	}
	for _, cl := range matched {
		if cl.PerMinute == 0 {
			continue
		}
		w, err := l.counters.Hit(ctx, cl.key(c.Principal), int64(cl.PerMinute), time.Minute)
		if err != nil {
			giveBack()
			return l.unavailable(c, err)
		}
		if !w.Allowed {
			giveBack()
			return limitError(c, cl.Limit, w.Reset,
				fmt.Sprintf("%s per minute, and they are used: retry in %s", calls(cl.PerMinute), seconds(w.Reset)))
		}
	}
	// held is nil for a call the gateway did not make, and so will not
	// release. Its slots come back with their lease.
	if held != nil && len(taken) > 0 {
		held.mu.Lock()
		held.slots = append(held.slots, taken...)
		held.mu.Unlock()
	}
	return nil
}

// calls says n calls.
func calls(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

// seconds says d in whole seconds, rounded up.
func seconds(d time.Duration) string {
	n := int(math.Ceil(d.Seconds()))
	if n <= 1 {
		return "1 second"
	}
	return fmt.Sprintf("%d seconds", n)
}

// limitError is the refusal of c by lim, which allows what.
func limitError(c *conduit.Call, lim Limit, retry time.Duration, allows string) error {
	who := "each principal"
	if c.Principal != "" {
		who = fmt.Sprintf("%q", c.Principal)
	}
	msg := fmt.Sprintf("The call to %s was not sent: conduit serve's limit on %s allows %s %s.",
		c.Exposed, strings.Join(lim.Tools, ", "), who, allows)
	return &conduit.Error{Kind: conduit.ErrLimit, Server: c.Server, Tool: c.Tool, Message: msg,
		Err: &LimitError{Limit: lim, RetryAfter: max(retry, time.Second)}}
}

// unavailable is the refusal of c when its limits cannot be counted. The
// call is not sent (fail closed).
func (l *limiter) unavailable(c *conduit.Call, err error) error {
	l.logger.Warn("gateway: counting a call against the limits", "err", err)
	return &conduit.Error{Kind: conduit.ErrUnavailable, Server: c.Server, Tool: c.Tool, Err: err,
		Message: "The call to " + c.Exposed + " was not sent: conduit serve's shared store is unavailable, so its limits cannot be counted. Retry shortly."}
}

// release gives back slots.
func (l *limiter) release(ctx context.Context, slots []heldSlot) {
	if len(slots) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, taintTimeout)
	defer cancel()
	for _, s := range slots {
		if err := l.counters.Release(ctx, s.key, s.token); err != nil {
			// Its lease gives it back.
			l.logger.Warn("gateway: releasing a slot of a limit", "err", err)
		}
	}
}

// callTool makes a tool call through the hub. Once the call has ended, it
// releases the slots of AtOnce its limits took.
func (g *Gateway) callTool(ctx context.Context, name string, args any, opts *conduit.CallOptions) (*mcp.CallToolResult, error) {
	if g.limits == nil {
		return g.src.CallTool(ctx, name, args, opts)
	}
	held := &heldSlots{}
	defer func() {
		held.mu.Lock()
		slots := held.slots
		held.mu.Unlock()
		g.limits.release(context.WithoutCancel(ctx), slots)
	}()
	return g.src.CallTool(context.WithValue(ctx, heldKey{}, held), name, args, opts)
}

// LimitUsage is how much of one [Limit] a principal has used.
type LimitUsage struct {
	Limit
	// Calls is the number of calls counted in the current window of
	// PerMinute. WindowEnds is how long until it ends, zero when no
	// window is open.
	Calls      int
	WindowEnds time.Duration
	// InFlight is the number of calls holding a slot of AtOnce.
	InFlight int
}

// Usage reports how much principal has used of each limit that applies
// to them. The store counts it across replicas.
func (g *Gateway) Usage(ctx context.Context, principal string) ([]LimitUsage, error) {
	if g.limits == nil {
		return nil, nil
	}
	var out []LimitUsage
	for i := range g.limits.limits {
		cl := &g.limits.limits[i]
		if cl.Principals != nil && !slices.Contains(cl.Principals, principal) {
			continue
		}
		u := LimitUsage{Limit: cl.Limit}
		if cl.PerMinute > 0 {
			w, err := g.limits.counters.Hit(ctx, cl.key(principal), 0, time.Minute)
			if err != nil {
				return nil, err
			}
			u.Calls, u.WindowEnds = int(w.Count), w.Reset
		}
		if cl.AtOnce > 0 {
			s, err := g.limits.counters.Acquire(ctx, cl.key(principal), 0, g.limits.lease)
			if err != nil {
				return nil, err
			}
			u.InFlight = int(s.InUse)
		}
		out = append(out, u)
	}
	return out, nil
}

// retryAfter is the wait a refusal by a limit asks for, if err is one.
func retryAfter(err error) (time.Duration, bool) {
	var le *LimitError
	if errors.As(err, &le) {
		return le.RetryAfter, true
	}
	return 0, false
}
