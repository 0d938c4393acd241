package conduit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Source is what the adapters drive: a [Hub] or a [Client].
type Source interface {
	// ListTools returns the current tool set. It asks a server for its
	// tools only when its session is new or it said they changed.
	ListTools(ctx context.Context) (*ToolSet, error)
	// ListToolsFor returns the tool set less the tools that the policy
	// denies outright for the principal and taint of opts.
	ListToolsFor(ctx context.Context, opts *ListOptions) (*ToolSet, error)
	// CallTool runs one call through the governed pipeline. It returns the
	// server's result (isError results included) or an *Error.
	CallTool(ctx context.Context, name string, args any, opts *CallOptions) (*mcp.CallToolResult, error)
}

// ListOptions are the options of ListToolsFor.
type ListOptions struct {
	Principal string
	Taint     []string
}

// governance is what hubs and clients share of their options.
type governance struct {
	Policy   *Policy
	Approver Approver
	Hooks    []Hook
	Filter   func(server string, tool *mcp.Tool) bool
	Validate bool
}

func (g governance) governed() bool {
	return g.Policy != nil || g.Approver != nil || len(g.Hooks) > 0 || g.Filter != nil || g.Validate
}

// core is the one implementation behind Hub and Client.
type core struct {
	governance
	namespace      bool
	prefix         string
	impl           *mcp.Implementation
	logger         *slog.Logger
	sdkLogger      *slog.Logger
	trace          *Trace
	backoff        Backoff
	connectTimeout time.Duration
	requestTimeout time.Duration
	elicit         func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)

	conns []*conn
	byID  map[string]*conn

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	tokens   atomic.Uint64
	progress sync.Map // progress token -> func(Progress)

	tsMu  sync.Mutex
	ts    *ToolSet
	tsKey []uint64
}

// commonOptions are the options Hub and Client have alike.
type commonOptions struct {
	governance
	Implementation *mcp.Implementation
	Logger         *slog.Logger
	Trace          *Trace
	Reconnect      Backoff
	ConnectTimeout time.Duration
	RequestTimeout time.Duration
	Elicitation    func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
}

func newCore(ctx context.Context, servers []Server, o commonOptions, namespace bool, prefix string) (*core, error) {
	if len(servers) == 0 {
		return nil, errors.New("conduit: no servers")
	}
	if o.Policy != nil && o.Policy.Err() != nil {
		return nil, o.Policy.Err()
	}
	c := &core{
		governance:     o.governance,
		namespace:      namespace,
		prefix:         prefix,
		impl:           o.Implementation,
		logger:         o.Logger,
		trace:          o.Trace,
		backoff:        o.Reconnect,
		connectTimeout: o.ConnectTimeout,
		requestTimeout: o.RequestTimeout,
		elicit:         o.Elicitation,
		byID:           map[string]*conn{},
	}
	if c.impl == nil {
		c.impl = &mcp.Implementation{Name: "conduit", Version: Version}
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.connectTimeout <= 0 {
		c.connectTimeout = 30 * time.Second
	}
	c.sdkLogger = c.logger.With("component", "mcp")
	for _, s := range servers {
		if err := s.validate(); err != nil {
			return nil, fmt.Errorf("conduit: %w", err)
		}
		if _, dup := c.byID[s.ID]; dup {
			return nil, fmt.Errorf("conduit: server id %q is used twice", s.ID)
		}
		cn := newConn(c, s)
		c.conns = append(c.conns, cn)
		c.byID[s.ID] = cn
	}
	// The sessions outlive ctx, which only bounds the first connection.
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, cn := range c.conns {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			cn.run(c.ctx)
		}()
	}
	for _, cn := range c.conns {
		select {
		case <-cn.ready:
		case <-ctx.Done():
			c.close()
			return nil, ctx.Err()
		}
	}
	return c, nil
}

func (c *core) close() error {
	c.once.Do(func() {
		c.cancel()
		for _, cn := range c.conns {
			cn.close()
		}
		c.wg.Wait()
	})
	return nil
}

func (c *core) status() []ServerStatus {
	out := make([]ServerStatus, len(c.conns))
	for i, cn := range c.conns {
		out[i] = cn.status()
	}
	return out
}

func (c *core) listTools(ctx context.Context) (*ToolSet, error) {
	if c.ctx.Err() != nil {
		return nil, errClosed
	}
	lists := make([]ServerTools, len(c.conns))
	key := make([]uint64, len(c.conns))
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var ctxErr error
	for i, cn := range c.conns {
		tools, gen, err, ok := cn.snapshot()
		if ok {
			lists[i], key[i] = ServerTools{Server: cn.srv.ID, Tools: tools, Down: err}, gen
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tools, gen, err := cn.listTools(ctx)
			if err != nil && ctx.Err() != nil {
				errMu.Lock()
				ctxErr = ctx.Err()
				errMu.Unlock()
			}
			lists[i], key[i] = ServerTools{Server: cn.srv.ID, Tools: tools, Down: err}, gen
		}()
	}
	wg.Wait()
	if ctxErr != nil {
		return nil, ctxErr
	}
	c.tsMu.Lock()
	defer c.tsMu.Unlock()
	if c.ts != nil && slices.Equal(c.tsKey, key) {
		return c.ts, nil
	}
	c.ts = NewToolSet(ToolSetOptions{Namespace: c.namespace, Prefix: c.prefix, Filter: c.Filter}, lists...)
	c.tsKey = key
	return c.ts, nil
}

func (c *core) listToolsFor(ctx context.Context, opts *ListOptions) (*ToolSet, error) {
	ts, err := c.listTools(ctx)
	if err != nil || c.Policy == nil {
		return ts, err
	}
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	return ts.Filter(SkipPolicy, func(t *Tool) bool {
		d, _, _ := c.Policy.Decide(&Call{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Def: t, Principal: o.Principal, Taint: o.Taint})
		return d != DecisionDeny
	}), nil
}

func (c *core) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	if f, ok := c.progress.Load(req.Params.ProgressToken); ok {
		p := req.Params
		f.(func(Progress))(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
}
