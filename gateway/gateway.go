package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/seal"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultApprovalTimeout bounds the wait for a client's answer to an
// approval request when Options.ApprovalTimeout is zero.
const DefaultApprovalTimeout = 2 * time.Minute

// Options configure a [Gateway]. The zero value of each field is its
// default, except Hub, which must carry a Policy.
type Options struct {
	// Hub governs every call and keeps the servers' sessions. It does so
	// as for conduit.NewHub (or conduit.NewClient in transparent mode).
	// Its fields serve the gateway so:
	//
	//   - Hub.Policy is required. conduit.AllowAll() is an explicit
	//     choice.
	//   - Hub.Approver answers the "ask" rules of sessions whose client
	//     cannot be asked (it declared no elicitation). Without one, those
	//     calls are denied with a message that says why.
	//   - Hub.Implementation is also the gateway's identity to its
	//     clients.
	//   - Hub.Logger is its logger.
	//   - Hub.Trace is called as well as the gateway's own.
	//   - Hub.Handlers must be nil, and New refuses them. The gateway
	//     routes what servers send to the sessions whose calls it belongs
	//     to.
	//   - Hub.Store is what the gateway's replicas share
	//     ([conduit.Hub.Store]). That is the taint of each principal and
	//     conversation, and the single use of each requestState it issues.
	//
	// A nil Hub.Store is an in-memory store of the hub's. It holds within
	// this process only. A shared store (package store/redisstore)
	// carries them across replicas. A request whose taint cannot be read
	// is refused, nothing sent. An answer whose taint cannot be recorded
	// is withheld.
	Hub *conduit.Options

	// Transparent serves a single server under its own tool and prompt
	// names, without the server__ prefix. It uses a conduit.Client
	// instead of a hub.
	Transparent bool
	// ApprovalTimeout bounds the wait for the client's answer to an
	// approval request (default DefaultApprovalTimeout). No answer in
	// time denies the call.
	ApprovalTimeout time.Duration
	// Instructions are sent to clients when they connect.
	Instructions string
	// Middleware is added to each session's server as receiving
	// middleware (mcp.Server.AddReceivingMiddleware). The first is
	// outermost. otelconduit's ServerMiddleware is one. Handlers run in
	// the context it passes on. So a span it starts is the parent of the
	// hub's.
	Middleware []mcp.Middleware

	// TaintLifetime is how long a taint lasts after its latest addition
	// (default DefaultTaintLifetime). A principal may see nothing of a
	// server's for that long. They are then decided as untainted by it
	// again.
	TaintLifetime time.Duration
	// TaintScope is the taint a request that names a conversation
	// (MetaConversation) is decided with. By default (TaintPrincipal) it
	// is all its principal has seen. With TaintConversation it is that
	// conversation's alone.
	TaintScope TaintScope
	// StateKeys are the secrets that encrypt and authenticate the
	// requestState the gateway gives its clients of protocol 2026-07-28.
	// Such a state holds an approval it asks, or a server's question it
	// passes on. Each key is at least 32 bytes of random secret. The first
	// seals, and every one opens, so that a key can be rotated. Replicas
	// that serve one address must share them. conduit serve reads them
	// from CONDUIT_STATE_KEY. Nil: New makes a random key, which is fine
	// for one process. A state it sealed is refused after a restart, and
	// by any other replica.
	StateKeys [][]byte
	// ListTTL is how long a client of protocol 2026-07-28 may keep a list.
	// It is the ttlMs of tools/list, prompts/list, resources/list and
	// resources/templates/list. The default is DefaultListTTL. Negative is
	// none (0, "immediately stale"). Lists that depend on the principal
	// are "private" to it (cacheScope).
	ListTTL time.Duration

	// MaxResultTokens is the budget of every tool result served. It counts
	// tokens of what the client's model reads of its content
	// (adapters.CutForModel). Its server's own budget
	// (conduit.Server.MaxResultTokens) wins when set. 0 or negative: no
	// budget but the servers' own, the default. A client of the gateway is
	// an LLM host with a budget of its own. Claude Code's is
	// MAX_MCP_OUTPUT_TOKENS, which may be raised. Some hosts keep a large
	// result in a file the model reads in parts. So conduit should not
	// preempt them with a cut the client cannot undo.
	MaxResultTokens int
	// Limits bound the tool calls of principals: calls per minute, calls
	// at once. They are counted in Hub.Store, so across the replicas that
	// share it. Every limit that matches a call applies. A call over one
	// is answered with a tool error that says when to retry (and _meta
	// [MetaRetryAfter]). Nothing is sent. A call whose limits cannot be
	// counted (the store is unavailable) is refused alike. See [Limit].
	Limits []Limit
	// Tasks make tasks (SEP-2663) of the tool calls it names. They are for
	// clients of protocol 2026-07-28 that declare the extension. Nil: none.
	Tasks *TaskOptions

	// Console, when set, keeps an audit trail of every call in Hub.Store.
	// It serves the operator console (see [ConsoleOptions]). Nil: none.
	Console *ConsoleOptions

	// CodeMode offers run_code to the sessions (see CodeModeOptions). It
	// is off by default.
	CodeMode CodeModeOptions
}

// DefaultListTTL is the cache hint of lists when Options.ListTTL is zero.
// A client that keeps a list that long may offer a tool the policy now
// denies, since a taint came meanwhile. Its call is denied, as every call
// is decided when it is made.
const DefaultListTTL = time.Minute

// source is what a gateway serves: a *conduit.Hub, or a *conduit.Client
// in transparent mode.
type source interface {
	ListToolsFor(context.Context, *conduit.ListOptions) (*conduit.ToolSet, error)
	CallTool(context.Context, string, any, *conduit.CallOptions) (*mcp.CallToolResult, error)
	ListPromptsFor(context.Context, *conduit.ListOptions) (*conduit.PromptSet, error)
	GetPrompt(context.Context, string, map[string]string, *conduit.CallOptions) (*mcp.GetPromptResult, error)
	ListResourcesFor(context.Context, *conduit.ListOptions) (*conduit.ResourceSet, error)
	ReadResource(context.Context, string, *conduit.CallOptions) (*mcp.ReadResourceResult, error)
	SubscribeResource(context.Context, string, *conduit.CallOptions) error
	UnsubscribeResource(context.Context, string, *conduit.CallOptions) error
	Complete(context.Context, *mcp.CompleteParams, *conduit.CallOptions) (*mcp.CompleteResult, error)
	SetLoggingLevel(context.Context, mcp.LoggingLevel) error
	Status() []conduit.ServerStatus
	Extension(context.Context, *conduit.ExtensionRequest, *conduit.CallOptions) (json.RawMessage, error)
	Store() store.Store
	Close() error
}

var (
	_ source = (*conduit.Hub)(nil)
	_ source = (*conduit.Client)(nil)
)

// Gateway serves a governed hub as an MCP server, to any number of
// sessions. They come over stdio ([Gateway.Serve]) or Streamable HTTP
// ([Gateway.Handler]). A Gateway is safe for concurrent use.
type Gateway struct {
	src         source
	impl        *mcp.Implementation
	middleware  []mcp.Middleware
	approver    conduit.Approver // the caller's, for clients that cannot be asked
	approveWait time.Duration
	instr       string
	maxTokens   int // Options.MaxResultTokens
	codeMode    CodeModeOptions
	logger      *slog.Logger
	sdkLogger   *slog.Logger
	policy      *conduit.Policy
	sealer      *seal.Sealer // seals and opens requestState
	store       store.Store  // the hub's: requestState claims (rounds) and taint (taints)
	listTTL     time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	mu       sync.Mutex
	sessions map[*session]struct{}
	level    mcp.LoggingLevel             // the servers' level: the most verbose asked for
	subs     map[string]int               // resource URI -> sessions subscribed
	views    map[string]*cachedView       // principal and taint -> view, for sessionless clients
	waits    map[string]*callRun          // calls waiting for a client's answer in a round
	handlers map[string]*conduit.Handlers // principal -> its calls' without a session, in rounds

	// pending are the kinds of change not yet applied to the sessions. A
	// send on kick wakes the refresher.
	pending changes
	kick    chan struct{}

	reported map[string]bool // what was left out and logged once

	taints   *taints         // each principal's and conversation's taint
	limits   *limiter        // callers' limits; nil without Options.Limits
	draining atomic.Bool     // ListenAndServe is shutting down
	subjects *subjects       // callers' verified tokens, for token exchange
	perP     map[string]bool // the servers whose sessions are per principal
	tasks    *tasks          // nil without Options.Tasks

	console   *console    // nil without Options.Console
	stateKeys [][]byte    // Options.StateKeys, or the random one
	ownStore  store.Store // made for the console when Hub.Store is nil
}

// changes is what a refresh brings up to date.
type changes uint8

const (
	changedTools changes = 1 << iota
	changedPrompts
	changedResources
	changedAll = changedTools | changedPrompts | changedResources
)

// New connects to the servers, as conduit.NewHub does. ctx bounds the
// first connection attempts. It returns a gateway ready to serve them.
// In transparent mode servers must hold exactly one server.
func New(ctx context.Context, servers []conduit.Server, opts *Options) (*Gateway, error) {
	if opts == nil || opts.Hub == nil || opts.Hub.Policy == nil {
		return nil, errors.New("gateway: a Policy is required in Options.Hub (conduit.AllowAll() allows every call)")
	}
	if opts.Hub.Handlers != nil {
		return nil, errors.New("gateway: Options.Hub.Handlers must be nil: the gateway routes what servers send to its sessions")
	}
	if opts.TaintScope != TaintPrincipal && opts.TaintScope != TaintConversation {
		return nil, fmt.Errorf("gateway: unknown %v", opts.TaintScope)
	}
	if opts.Transparent && len(servers) != 1 {
		return nil, fmt.Errorf("gateway: transparent mode serves one server, not %d", len(servers))
	}
	g := &Gateway{
		middleware:  slices.Clone(opts.Middleware),
		approver:    opts.Hub.Approver,
		approveWait: opts.ApprovalTimeout,
		instr:       opts.Instructions,
		maxTokens:   opts.MaxResultTokens,
		codeMode:    opts.CodeMode,
		logger:      opts.Hub.Logger,
		sessions:    map[*session]struct{}{},
		subs:        map[string]int{},
		kick:        make(chan struct{}, 1),
		reported:    map[string]bool{},
		subjects:    &subjects{},
		perP:        map[string]bool{},
	}
	for _, s := range servers {
		if s.Identity == conduit.IdentityPrincipal {
			g.perP[s.ID] = true
		}
	}
	if g.approveWait <= 0 {
		g.approveWait = DefaultApprovalTimeout
	}
	g.policy = opts.Hub.Policy
	g.views, g.waits, g.handlers = map[string]*cachedView{}, map[string]*callRun{}, map[string]*conduit.Handlers{}
	switch {
	case opts.ListTTL == 0:
		g.listTTL = DefaultListTTL
	case opts.ListTTL > 0:
		g.listTTL = opts.ListTTL
	}
	keys := opts.StateKeys
	if len(keys) == 0 {
		keys = [][]byte{[]byte(rand.Text() + rand.Text())}
	}
	var err error
	g.stateKeys = keys
	if g.sealer, err = seal.New(statePurpose, keys...); err != nil {
		return nil, fmt.Errorf("gateway: StateKeys: %w", err)
	}
	if g.tasks, err = newTasks(opts.Tasks, keys); err != nil {
		return nil, fmt.Errorf("gateway: Tasks: %w", err)
	}
	if g.logger == nil {
		g.logger = slog.New(slog.DiscardHandler)
	}
	g.sdkLogger = g.logger.With("component", "mcp-server")
	g.impl = opts.Hub.Implementation
	if g.impl == nil {
		g.impl = &mcp.Implementation{Name: "conduit", Version: conduit.Version}
	}
	o := *opts.Hub
	if len(opts.Limits) > 0 {
		if g.limits, err = newLimiter(opts.Limits, o.CallTimeout, g.logger); err != nil {
			return nil, err
		}
		// Last, so that a call a hook refuses costs nothing.
		o.Hooks = append(slices.Clip(o.Hooks), g.limits.hook())
	}
	o.Approver = g.approve
	o.Handlers = g.hubHandlers()
	o.Trace = g.trace(opts.Hub.Trace)
	if opts.Console != nil {
		// Set up before the hub, in the store it will have: its trace may
		// be called while it connects.
		if o.Store == nil {
			o.Store = store.NewMemory()
			g.ownStore = o.Store
		}
		if g.console, err = newConsole(*opts.Console, o.Store, g.approveWait); err != nil {
			return nil, err
		}
		g.auditTrace(o.Trace)
	}
	if o.SubjectToken == nil {
		// A caller's verified token is what a per-principal server's
		// token exchange exchanges.
		o.SubjectToken = g.subjects.token
	}
	// The trace may be called while the servers connect.
	g.ctx, g.cancel = context.WithCancel(context.Background())
	var src source
	if opts.Transparent {
		src, err = conduit.NewClient(ctx, servers[0], &o)
	} else {
		src, err = conduit.NewHub(ctx, servers, &o)
	}
	if err != nil {
		g.cancel()
		if g.ownStore != nil {
			g.ownStore.Close()
		}
		return nil, err
	}
	// The hub's store, made by the hub when none was given and closed with
	// it: the gateway owns none.
	g.store = src.Store()
	g.taints = newTaints(g.store, opts.TaintLifetime, opts.TaintScope)
	if g.limits != nil {
		g.limits.counters = g.store
	}
	g.mu.Lock()
	g.src = src
	g.mu.Unlock()
	g.wg.Go(g.refresher)
	return g, nil
}

// Status reports each server's state, in configuration order.
func (g *Gateway) Status() []conduit.ServerStatus { return g.src.Status() }

// Close ends every session and then the servers' sessions, as
// conduit.Hub.Close does. No goroutine of the gateway outlives it.
func (g *Gateway) Close() error {
	g.once.Do(func() {
		g.mu.Lock()
		g.cancel() // under mu: goIfOpen starts nothing after it
		sessions := make([]*session, 0, len(g.sessions))
		for s := range g.sessions {
			sessions = append(sessions, s)
		}
		g.mu.Unlock()
		for _, s := range sessions {
			s.close()
		}
		g.mu.Lock()
		for id, cr := range g.waits {
			delete(g.waits, id)
			cr.timer.Stop()
		}
		g.mu.Unlock()
		g.wg.Wait()
		g.src.Close()
		if g.ownStore != nil {
			g.ownStore.Close()
		}
	})
	return nil
}

// trace is the hub's Trace. It calls the caller's callbacks, then the
// gateway's, which bring the sessions' lists up to date.
func (g *Gateway) trace(user *conduit.Trace) *conduit.Trace {
	var u conduit.Trace
	if user != nil {
		u = *user
	}
	t := u
	// What a principal's own session (of a server of identity principal)
	// says concerns the sessions of that principal only.
	t.ServerUp = func(i conduit.ServerEvent) {
		if u.ServerUp != nil {
			u.ServerUp(i)
		}
		if i.Principal != "" {
			// conduit gives it the log level; its subscriptions are the
			// principal's.
			g.refreshPrincipal(i.Principal, changedAll, true)
			g.goIfOpen(func() { g.resubscribe(i.Principal) })
			return
		}
		g.changed(changedAll)
		// The server's new session knows no log level and no
		// subscriptions: they are set again, off the connection's goroutine.
		g.goIfOpen(g.restore)
	}
	// mark calls the caller's callback, then marks c changed for the
	// event's principal.
	mark := func(user func(conduit.ServerEvent), c changes) func(conduit.ServerEvent) {
		return func(i conduit.ServerEvent) {
			if user != nil {
				user(i)
			}
			g.changedFor(i.Principal, c)
		}
	}
	t.ServerDown = mark(u.ServerDown, changedAll)
	t.ToolsChanged = mark(u.ToolsChanged, changedTools)
	t.PromptsChanged = mark(u.PromptsChanged, changedPrompts)
	t.ResourcesChanged = mark(u.ResourcesChanged, changedResources)
	t.ResourceUpdated = func(i conduit.ServerEvent) {
		if u.ResourceUpdated != nil {
			u.ResourceUpdated(i)
		}
		for _, s := range g.sessionList() {
			if i.Principal == "" || s.principal == i.Principal {
				s.server.ResourceUpdated(g.ctx, &mcp.ResourceUpdatedNotificationParams{URI: i.URI})
			}
		}
	}
	return &t
}

// changed schedules a refresh of every session's lists.
func (g *Gateway) changed(c changes) {
	g.mu.Lock()
	g.pending |= c
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// changedFor schedules a refresh of principal's sessions and views. When
// principal is "", it schedules every session and view.
func (g *Gateway) changedFor(principal string, c changes) {
	if principal == "" {
		g.changed(c)
		return
	}
	g.refreshPrincipal(principal, c, true)
}

// refresher applies changes to the sessions, one round at a time. So a
// burst of changes costs one listing per session.
func (g *Gateway) refresher() {
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.kick:
		}
		g.mu.Lock()
		c := g.pending
		g.pending = 0
		g.mu.Unlock()
		for _, s := range g.sessionList() {
			s.refresh(g.ctx, c)
		}
		for _, v := range g.viewList() {
			v.refresh(g.ctx, c)
		}
	}
}

// goIfOpen runs f on a goroutine of the gateway's, unless it is closed.
// It reports whether it does.
func (g *Gateway) goIfOpen(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx.Err() != nil {
		return false
	}
	g.wg.Go(f)
	return true
}

func (g *Gateway) sessionList() []*session {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		out = append(out, s)
	}
	return out
}

// add registers a session once its client has initialized. It removes it
// when it ends.
func (g *Gateway) add(s *session, ss *mcp.ServerSession) {
	g.mu.Lock()
	if g.ctx.Err() != nil {
		g.mu.Unlock()
		ss.Close()
		return
	}
	g.sessions[s] = struct{}{}
	g.wg.Go(func() {
		ss.Wait()
		g.remove(s)
	})
	g.mu.Unlock()
	// What changed between the session's first listing and now.
	s.refresh(g.ctx, changedAll)
}

// cleanupTimeout bounds what a session's end asks of the servers.
const cleanupTimeout = 10 * time.Second

func (g *Gateway) remove(s *session) {
	g.mu.Lock()
	delete(g.sessions, s)
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(g.ctx, cleanupTimeout)
	defer cancel()
	for _, uri := range s.subscriptions() {
		g.unsubscribe(ctx, s, uri)
	}
	g.levelChanged(ctx)
}

// levels orders the log levels, least severe first.
var levels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// levelChanged sets the servers' log level to the most verbose one a
// session asked for.
func (g *Gateway) levelChanged(ctx context.Context) error {
	g.mu.Lock()
	var want mcp.LoggingLevel
	for s := range g.sessions {
		l := s.logLevel()
		if i := slices.Index(levels, l); i >= 0 && (want == "" || i < slices.Index(levels, want)) {
			want = l
		}
	}
	if want == "" || want == g.level {
		g.mu.Unlock()
		return nil
	}
	g.level = want
	g.mu.Unlock()
	return g.src.SetLoggingLevel(ctx, want)
}

// restore sets the log level and the subscriptions again. It runs after a
// server reconnected.
func (g *Gateway) restore() {
	g.mu.Lock()
	src := g.src
	level := g.level
	uris := make([]string, 0, len(g.subs))
	for key := range g.subs {
		if principal, _ := splitSubKey(key); principal == "" {
			uris = append(uris, key)
		}
	}
	g.mu.Unlock()
	if src == nil {
		return // still connecting: nothing to restore
	}
	if level != "" {
		if err := src.SetLoggingLevel(g.ctx, level); err != nil {
			g.logger.Debug("gateway: setting the log level again", "err", err)
		}
	}
	for _, uri := range uris {
		if err := src.SubscribeResource(g.ctx, uri, nil); err != nil {
			g.logger.Debug("gateway: subscribing again", "uri", uri, "err", err)
		}
	}
}

// resubscribe subscribes principal's new session (of a server of identity
// principal) to what their sessions are subscribed to.
func (g *Gateway) resubscribe(principal string) {
	g.mu.Lock()
	var uris []string
	for key := range g.subs {
		if p, uri := splitSubKey(key); p == principal && p != "" {
			uris = append(uris, uri)
		}
	}
	g.mu.Unlock()
	for _, uri := range uris {
		if err := g.src.SubscribeResource(g.ctx, uri, &conduit.CallOptions{Principal: principal}); err != nil {
			g.logger.Debug("gateway: subscribing again", "uri", uri, "err", err)
		}
	}
}

// subKey is the key of s's subscription to uri in g.subs. It is the uri,
// which the sessions subscribed share. On a server of identity principal,
// it is the principal and the uri, which only their sessions share.
func (g *Gateway) subKey(s *session, uri string) string {
	s.mu.Lock()
	server, _ := s.rset.Server(uri)
	s.mu.Unlock()
	if !g.perP[server] {
		return uri
	}
	return s.principal + "\x00" + uri
}

// splitSubKey returns the principal and uri of a key of g.subs.
func splitSubKey(key string) (principal, uri string) {
	if p, u, ok := strings.Cut(key, "\x00"); ok {
		return p, u
	}
	return "", key
}

// subscribe subscribes s to uri. The server is asked for each session. So
// the policy decides for each session's principal and taint.
func (g *Gateway) subscribe(ctx context.Context, s *session, uri string) error {
	opts, _, err := s.callOptions(ctx, nil, nil)
	if err != nil {
		return err
	}
	if err := g.src.SubscribeResource(ctx, uri, opts); err != nil {
		return err
	}
	key := g.subKey(s, uri)
	g.mu.Lock()
	g.subs[key]++
	g.mu.Unlock()
	return nil
}

// unsubscribe ends s's subscription to uri. It ends the server's once no
// session is subscribed.
func (g *Gateway) unsubscribe(ctx context.Context, s *session, uri string) error {
	key := g.subKey(s, uri)
	g.mu.Lock()
	n := g.subs[key] - 1
	if n <= 0 {
		delete(g.subs, key)
	} else {
		g.subs[key] = n
	}
	g.mu.Unlock()
	if n > 0 {
		return nil
	}
	opts, _, err := s.callOptions(ctx, nil, nil)
	if err != nil {
		return err
	}
	return g.src.UnsubscribeResource(ctx, uri, opts)
}

// report logs, once each, what a listing left out because of the servers.
// That is two that offer the same name or URI, or a name that cannot be
// exposed. What the policy leaves out, and servers that are down, are
// reported elsewhere.
func (g *Gateway) report(what string, skipped []conduit.Skipped) {
	for _, s := range skipped {
		if s.Reason != conduit.SkipCollision && s.Reason != conduit.SkipInvalidName {
			continue
		}
		key := what + "\x00" + s.Server + "\x00" + s.Tool + "\x00" + s.Reason.String()
		g.mu.Lock()
		seen := g.reported[key]
		g.reported[key] = true
		g.mu.Unlock()
		if !seen {
			g.logger.Warn("gateway: left out", "kind", what, "server", s.Server, "name", s.Tool, "reason", s.Reason.String(), "detail", s.Detail)
		}
	}
}

// hubHandlers answer what servers send outside any session's call. Log
// messages go to every session when all of them are one principal's.
// That is the common case of a single user. Otherwise they are dropped,
// so that no user sees another's. Requests are refused.
func (g *Gateway) hubHandlers() *conduit.Handlers {
	refuse := func(what string) error {
		return fmt.Errorf("conduit serve: %s outside a call cannot be passed to a client", what)
	}
	return &conduit.Handlers{
		Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, refuse("elicitation")
		},
		Sampling: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, refuse("sampling")
		},
		Roots: func(context.Context, *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
			return nil, refuse("roots/list")
		},
		Logging: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			sessions := g.sessionList()
			for _, s := range sessions {
				if s.principal != sessions[0].principal {
					g.logger.Debug("gateway: a server's log message no call claims is dropped: sessions of several principals are open")
					return
				}
			}
			for _, s := range sessions {
				s.log(g.ctx, req.Params)
			}
		},
	}
}
