package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conduitmcp/conduit/internal/bounded"
	"github.com/conduitmcp/conduit/internal/transport"
	"github.com/conduitmcp/conduit/pins"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Source is what the adapters drive. It is a [Hub] or a [Client], or a
// type of one's own, such as one wrapping a hub. One's own CallTool must
// return when its ctx ends. It must send nothing once opts.Halt is closed.
// The adapters still answer a call that overruns its CallTimeout. They
// drop its late answer.
type Source interface {
	// ListTools returns the current tool set. It asks a server for its
	// tools only when its session is new or it said they changed.
	ListTools(ctx context.Context) (*ToolSet, error)
	// ListToolsFor returns the tool set less the tools that the policy
	// denies outright. It decides for the principal and taint of opts.
	ListToolsFor(ctx context.Context, opts *ListOptions) (*ToolSet, error)
	// CallTool runs one call through the governed pipeline. It returns the
	// server's result (isError results included) or an *Error.
	CallTool(ctx context.Context, name string, args any, opts *CallOptions) (*mcp.CallToolResult, error)
}

// ListOptions are the options of ListToolsFor.
type ListOptions struct {
	Principal string   // who the listing is for, as in [CallOptions]
	Taint     []string // the servers whose output the model has seen
	// AppTools keeps the tools only an MCP App may call (apps.AppOnly).
	// Without it they are left out (SkipAppOnly): a listing is for a
	// model. Set it only for a host that keeps them from its model.
	AppTools bool
}

// core is the one implementation behind Hub and Client. A Client is a hub
// of one server without namespacing.
type core struct {
	Options   // a copy of the caller's, with defaults filled in
	namespace bool
	sdkLogger *slog.Logger
	// owner is the Hub or Client made of this core. ResolvedCaller tells
	// it from a type that embeds it. resolved is callResolved, made once
	// rather than on every call.
	owner    Source
	resolved func(context.Context, *Tool, map[string]any, *CallOptions) (*mcp.CallToolResult, error)

	// Which hooks exist, and whether every Before and every After is
	// Inline. The pipeline skips what is not there.
	before, after             bool
	beforeInline, afterInline bool
	hookNames                 []string // by hook, as messages name them
	// limitErr is the cause of the end of a call's context at
	// CallTimeout, the limit of most calls.
	limitErr *limitError

	slots      []*slot // by configuration order
	byID       map[string]*slot
	pools      bool          // some server's sessions are per principal
	gens       atomic.Uint64 // conn.gen values, unique across sessions
	httpClient *http.Client  // for servers without their own
	// level is the last level SetLoggingLevel set, which a principal's
	// new session is given.
	level atomic.Pointer[mcp.LoggingLevel]
	// ownStore is Options.Store when the core made it (none was given),
	// which Close closes.
	ownStore store.Store

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	limits limits // Options.Limits with defaults
	// resultMarker marks the error that stands in for a result over the
	// limit. The connection makes that error when it refuses the result
	// before decoding.
	resultMarker json.RawMessage

	// stateCh is closed when a server's state changes (awaitUp).
	stateMu sync.Mutex
	stateCh chan struct{}

	tokens   atomic.Uint64
	progress sync.Map // progress token -> *mailbox.Box[Progress]

	// warnings are what is accepted in the configuration but likely a
	// mistake (Hub.Warnings), fixed at start.
	warnings []string

	tsMu sync.Mutex
	ts   tsCache // the listing for no principal, or for any when no server is per principal
	// byPrincipal are the listings for principals, when some server's
	// sessions are per principal (at most maxCachedListings).
	byPrincipal map[string]*tsCache
	drift       map[string][]pins.Drift // by server, in the last shared tool set
	// digests of the tools listed, for checking pins
	digests digestCache
}

func newCore(ctx context.Context, servers []Server, o *Options, namespace bool) (*core, error) {
	start := time.Now()
	if o == nil {
		o = &Options{}
	}
	if len(servers) == 0 {
		return nil, errors.New("conduit: no servers")
	}
	if o.Policy != nil && o.Policy.Err() != nil {
		return nil, o.Policy.Err()
	}
	c := &core{
		Options:      *o,
		namespace:    namespace,
		byID:         map[string]*slot{},
		beforeInline: true,
		afterInline:  true,
		resultMarker: newResultMarker(),
	}
	c.resolved = c.callResolved
	c.Hooks = slices.Clone(o.Hooks)
	for _, h := range c.Hooks {
		c.hookNames = append(c.hookNames, hookName(h))
		c.before = c.before || h.Before != nil
		c.after = c.after || h.After != nil
		c.beforeInline = c.beforeInline && (h.Before == nil || h.Inline)
		c.afterInline = c.afterInline && (h.After == nil || h.Inline)
	}
	if c.Implementation == nil {
		c.Implementation = &mcp.Implementation{Name: "conduit", Version: Version}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 30 * time.Second
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = bounded.DefaultCallTimeout
	}
	c.limitErr = &limitError{c.CallTimeout}
	c.limits = o.Limits.resolved()
	if c.Store == nil {
		c.Store = store.NewMemory()
		c.ownStore = c.Store
	}
	c.sdkLogger = c.Logger.With("component", "mcp")
	if err := c.checkPolicy(servers); err != nil {
		return nil, err
	}
	c.httpClient = newHTTPClient()
	// The sessions outlive ctx, which only bounds the first connection.
	// A principal's pool starts them in it too.
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, s := range servers {
		if err := s.Validate(); err != nil {
			c.cancel()
			return nil, fmt.Errorf("conduit: %w", err)
		}
		if _, dup := c.byID[s.ID]; dup {
			c.cancel()
			return nil, fmt.Errorf("conduit: server id %q is used twice", s.ID)
		}
		sl := &slot{srv: s}
		if s.Identity == IdentityPrincipal {
			// Each principal's session opens on their first request.
			sl.pool = newPool(c, s)
			c.pools = true
		} else {
			sl.shared = newConn(c, s, "")
			var err error
			if sl.shared.oauth, err = s.newOAuth(c.httpClient, c.Store); err != nil {
				c.cancel()
				return nil, fmt.Errorf("conduit: %w", err)
			}
		}
		c.slots = append(c.slots, sl)
		c.byID[s.ID] = sl
	}
	for _, cn := range c.sharedConns() {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			cn.run(c.ctx)
		}()
	}
	for _, cn := range c.sharedConns() {
		select {
		case <-cn.ready:
		case <-ctx.Done():
			c.close()
			return nil, ctx.Err()
		}
	}
	if c.RequireServers {
		if err := c.awaitUp(ctx, start); err != nil {
			c.close()
			return nil, err
		}
	} else if up := c.upCount(); up == 0 {
		c.Logger.Warn("conduit: no server is up: no tools are offered until one is (see Status; RequireServers fails instead)", "servers", len(c.slots))
	}
	return c, nil
}

// ErrServersDown is the error of NewHub and NewClient, with
// Options.RequireServers, when a server is not up within ConnectTimeout.
// Its text names each such server and why it is down.
var ErrServersDown = errors.New("conduit: servers are not up")

// sharedConns returns the sessions of the servers of IdentityShared, in
// configuration order.
func (c *core) sharedConns() []*conn {
	out := make([]*conn, 0, len(c.slots))
	for _, s := range c.slots {
		if s.shared != nil {
			out = append(out, s.shared)
		}
	}
	return out
}

// nextGen is a new generation for a session's tool list, never 0. It is
// unique across the sessions of the core. A principal's new session may
// start after another's ended.
func (c *core) nextGen() uint64 { return c.gens.Add(1) }

// upCount is the number of servers up, counting those whose sessions are
// per principal, which open on demand.
func (c *core) upCount() int {
	n := 0
	for _, s := range c.slots {
		if s.pool != nil || s.shared.status().State == StateUp {
			n++
		}
	}
	return n
}

// awaitUp waits until every server is up, for at most ConnectTimeout from
// start. Meanwhile the servers that are down are reconnected. The servers
// whose sessions are per principal have none to wait for.
func (c *core) awaitUp(ctx context.Context, start time.Time) error {
	deadline := time.NewTimer(time.Until(start.Add(c.ConnectTimeout)))
	defer deadline.Stop()
	for {
		changed := c.stateChange()
		var down []string
		retried := false
		for _, cn := range c.sharedConns() {
			if cn.status().State == StateUp {
				continue
			}
			cn.mu.Lock()
			down = append(down, cn.downErr().Error())
			cn.mu.Unlock()
			retried = retried || cn.retried()
		}
		if len(down) == 0 {
			return nil
		}
		fail := func() error {
			return fmt.Errorf("%w within %v: %s", ErrServersDown, c.ConnectTimeout, strings.Join(down, "; "))
		}
		if !retried {
			return fail() // nothing will bring them up
		}
		select {
		case <-changed:
		case <-deadline.C:
			return fail()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stateChange returns a channel closed at the next change of a server's
// state.
func (c *core) stateChange() <-chan struct{} {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	if c.stateCh == nil {
		c.stateCh = make(chan struct{})
	}
	return c.stateCh
}

// stateChanged closes the channel stateChange returned.
func (c *core) stateChanged() {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	if c.stateCh != nil {
		close(c.stateCh)
		c.stateCh = nil
	}
}

func (c *core) close() error {
	c.once.Do(func() {
		// Canceling c.ctx first ends the requests in flight (their contexts
		// derive from it), without which closing a session would wait for
		// them, and stops connection attempts and backoff sleeps.
		c.cancel()
		// Sessions close concurrently: a stdio server that ignores stdin
		// EOF costs its TerminateDuration once, not once per server.
		var wg sync.WaitGroup
		for _, s := range c.slots {
			if s.shared != nil {
				wg.Go(s.shared.close)
			} else {
				wg.Go(s.pool.Close)
			}
		}
		wg.Wait()
		c.wg.Wait()
		c.httpClient.CloseIdleConnections()
		if c.ownStore != nil {
			c.ownStore.Close()
		}
	})
	return nil
}

// maxIdlePerHost is how many idle connections the hub's HTTP client keeps
// to one host. That is enough for a batch of parallel calls to one server.
// They reuse its connections instead of opening new ones.
const maxIdlePerHost = 64

func newHTTPClient() *http.Client {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		// Someone replaced the default; it is theirs to tune.
		return &http.Client{Transport: http.DefaultTransport}
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	t.MaxIdleConns = max(t.MaxIdleConns, maxIdlePerHost)
	return &http.Client{Transport: t}
}

func (c *core) reconnect(id string) error {
	s, ok := c.byID[id]
	if !ok {
		return fmt.Errorf("conduit: no server %q", id)
	}
	if c.ctx.Err() != nil {
		return errClosed
	}
	for _, cn := range s.conns() {
		cn.reconnect()
	}
	return nil
}

// bound returns ctx, also canceled when the hub or client is closed.
func (c *core) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (c *core) status() []ServerStatus {
	out := make([]ServerStatus, len(c.slots))
	for i, s := range c.slots {
		if s.shared != nil {
			out[i] = s.shared.status()
			continue
		}
		out[i] = poolStatus(s)
	}
	c.statusDrift(out)
	return out
}

func (c *core) listTools(ctx context.Context) (*ToolSet, error) {
	ts, err := c.listToolsAs(ctx, listFor{})
	if err != nil {
		return nil, err
	}
	return forModel(ts), nil
}

// listToolsAs lists the tools for lf, under their cache hints. It lists
// each shared server's tools. For a principal, it lists each
// per-principal server's from the principal's own session. That session
// is opened when there is none. Without a principal, those servers are
// left out (ErrNoPrincipal).
func (c *core) listToolsAs(ctx context.Context, lf listFor) (*ToolSet, error) {
	if c.ctx.Err() != nil {
		return nil, errClosed
	}
	lists := make([]ServerTools, len(c.slots))
	key := make([]uint64, len(c.slots))
	var wg sync.WaitGroup
	asking := false
	for i, s := range c.slots {
		id := s.srv.ID
		cn, release := s.shared, func() {}
		if s.pool != nil {
			if lf.principal == "" {
				// Key 0 matches no session.
				lists[i] = ServerTools{Server: id, Down: ErrNoPrincipal}
				continue
			}
			var ok bool
			if cn, release, ok = s.pool.Peek(lf.principal); !ok {
				cn = nil
			}
		}
		if cn != nil {
			tools, gen, err, ok := cn.snapshot(lf)
			if ok {
				release()
				lists[i], key[i] = ServerTools{Server: id, Tools: tools, Down: err, MaxResultTokens: s.srv.MaxResultTokens}, gen
				continue
			}
		}
		if !asking {
			// Only a listing that must ask a server pays for this.
			asking = true
			var cancel context.CancelFunc
			ctx, cancel = c.bound(ctx)
			defer cancel()
		}
		wg.Go(func() {
			if cn == nil {
				var err error
				if cn, release, err = s.get(ctx, lf.principal); err != nil {
					lists[i] = ServerTools{Server: id, Down: err}
					return
				}
			}
			defer release()
			// A server whose listing fails is reported as down in this
			// tool set; key 0 matches no session, so it is asked again.
			tools, gen, err := cn.listTools(ctx, lf)
			lists[i], key[i] = ServerTools{Server: id, Tools: tools, Down: err, MaxResultTokens: s.srv.MaxResultTokens}, gen
		})
	}
	wg.Wait()
	if c.ctx.Err() != nil {
		return nil, errClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var report func() // drift, told after the lock is released
	defer func() {
		if report != nil {
			report()
		}
	}()
	gen := c.Pins.Generation()
	c.tsMu.Lock()
	defer c.tsMu.Unlock()
	cache := &c.ts
	if c.pools && lf.principal != "" {
		cache = c.principalListing(lf.principal)
	}
	if cache.ts != nil && slices.Equal(cache.key, key) && cache.pins == gen {
		return cache.ts, nil
	}
	ts := NewToolSet(&ToolSetOptions{Namespace: c.namespace, Options: &c.Options, digests: &c.digests}, lists...)
	if c.Pins != nil {
		report = c.driftReport(ctx, ts, cache.key, key, cache.ts != nil && cache.pins != gen, cache == &c.ts)
		c.keepDigests(lists)
	}
	*cache = tsCache{ts: ts, key: key, pins: gen}
	return ts, nil
}

// tsCache is a tool set and what it was made from. That is the generation
// of each server's listing and of the pins.
type tsCache struct {
	ts   *ToolSet
	key  []uint64
	pins uint64
}

// principalListing returns the cached listing of principal, making room
// for it. Call with tsMu held.
func (c *core) principalListing(principal string) *tsCache {
	if tc := c.byPrincipal[principal]; tc != nil {
		return tc
	}
	if c.byPrincipal == nil {
		c.byPrincipal = map[string]*tsCache{}
	}
	if len(c.byPrincipal) >= c.maxCachedListings() {
		for p := range c.byPrincipal { // any one: a cache, not a record
			delete(c.byPrincipal, p)
			break
		}
	}
	tc := &tsCache{}
	c.byPrincipal[principal] = tc
	return tc
}

// maxCachedListings bounds the listings kept per principal: twice the
// sessions a server may keep open.
func (c *core) maxCachedListings() int {
	n := c.MaxPrincipalSessions
	if n <= 0 {
		n = defaultMaxPrincipalSessions
	}
	return 2 * n
}

// forget drops principal's cached listing, once a session of theirs is
// closed.
func (c *core) forget(principal string) {
	c.tsMu.Lock()
	delete(c.byPrincipal, principal)
	c.tsMu.Unlock()
}

// keepDigests forgets the digests of tools that neither lists nor any
// session's current listing hold. Call with tsMu held.
func (c *core) keepDigests(lists []ServerTools) {
	live := slices.Clone(lists)
	for _, s := range c.slots {
		for _, cn := range s.conns() {
			cn.mu.Lock()
			live = append(live, ServerTools{Server: cn.srv.ID, Tools: cn.tools})
			cn.mu.Unlock()
		}
	}
	c.digests.keep(live)
}

func (c *core) listToolsFor(ctx context.Context, opts *ListOptions) (*ToolSet, error) {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	ts, err := c.listToolsAs(ctx, listFor{principal: o.Principal})
	if err != nil {
		return ts, err
	}
	if !o.AppTools {
		ts = forModel(ts)
	}
	if c.Policy == nil {
		return ts, nil
	}
	// Each tool left out says which rule hid it, so that a listing
	// shorter than the server's can be explained.
	return ts.filter(SkipPolicy, func(t *Tool) (bool, string) {
		denied, why := c.policyDenial(&Call{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Def: t, Principal: o.Principal, Taint: o.Taint, Method: methodCallTool})
		return !denied, why
	}), nil
}

// policyDenies reports whether the policy denies call outright, as a
// listing for a principal leaves out. A condition that panics hides
// nothing here; the call itself is then answered with the error.
func (c *core) policyDenies(call *Call) bool {
	denied, _ := c.policyDenial(call)
	return denied
}

// policyDenial is policyDenies, and when it denies, why in words. It names
// the rule that denies, or says that no rule allows it.
func (c *core) policyDenial(call *Call) (bool, string) {
	if c.Policy == nil {
		return false, ""
	}
	d, rule, ok, err := decide(c.Policy, call)
	if err != nil || d != DecisionDeny {
		return false, ""
	}
	if !ok {
		return true, "no policy rule allows it"
	}
	return true, "denied by the policy rule " + strconv.Quote(rule.String())
}

// bounds returns the bounds of server's transports.
func (c *core) bounds(server string) *transport.Bounds {
	over := &transport.Oversize{Server: server, Limit: c.limits.resultBytes, Marker: c.resultMarker, Logger: c.Logger}
	return transport.NewBounds(server, c.limits.messageBytes(), over, c.Logger)
}
