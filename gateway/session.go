package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersions are the versions the gateway speaks to its clients:
// those before 2026-07-28, whose sessions let a server ask its client
// something during a call (the gateway's approval prompts, and what the
// servers ask), which 2026-07-28 does only through multi-round-trip
// results.
var protocolVersions = slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= "2026-07-28" })

// session is one client's session: its own mcp.Server, whose tools,
// prompts and resources are what the hub offers the session's principal
// with the session's taint.
type session struct {
	g         *Gateway
	principal string
	server    *mcp.Server
	handlers  *conduit.Handlers // what servers send during this session's calls

	mu      sync.Mutex
	ss      *mcp.ServerSession
	taint   []string
	defs    map[string]*mcp.Tool       // exposed name -> the server's own tool registered under it
	prompts map[string]*conduit.Prompt // exposed name -> the prompt registered under it
	rset    *conduit.ResourceSet       // as offered
	res     map[string]*mcp.Resource
	tmpls   map[string]*mcp.ResourceTemplate
	subs    map[string]bool
	level   mcp.LoggingLevel // as the client set it
	closed  bool

	syncMu sync.Mutex // one refresh at a time
}

type sessionKey struct{}

// sessionFrom returns the session a call's ctx belongs to.
func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// newSession makes a session's server for principal, with its lists as
// they are now.
func (g *Gateway) newSession(ctx context.Context, principal string) (*session, error) {
	s := &session{
		g:         g,
		principal: principal,
		defs:      map[string]*mcp.Tool{},
		prompts:   map[string]*conduit.Prompt{},
		res:       map[string]*mcp.Resource{},
		tmpls:     map[string]*mcp.ResourceTemplate{},
		subs:      map[string]bool{},
	}
	s.handlers = &conduit.Handlers{
		Elicitation: s.elicit,
		Sampling:    s.sample,
		Roots:       s.roots,
		Logging:     func(ctx context.Context, req *mcp.LoggingMessageRequest) { s.log(ctx, req.Params) },
	}
	s.server = mcp.NewServer(g.impl, &mcp.ServerOptions{
		Instructions: g.instr,
		Logger:       g.sdkLogger,
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			s.mu.Lock()
			s.ss = req.Session
			s.mu.Unlock()
			g.add(s, req.Session)
		},
		CompletionHandler:         s.complete,
		SubscribeHandler:          s.subscribe,
		UnsubscribeHandler:        s.unsubscribe,
		SupportedProtocolVersions: protocolVersions,
		// Declared even while a list is empty: a server may come up later.
		Capabilities: &mcp.ServerCapabilities{
			Logging:   &mcp.LoggingCapabilities{},
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
	})
	s.server.AddReceivingMiddleware(s.watchLevel)
	s.server.AddReceivingMiddleware(g.middleware...) // around conduit's own
	if err := s.sync(ctx, changedAll); err != nil {
		return nil, err
	}
	return s, nil
}

// serverSession returns the client's session, once it has initialized.
func (s *session) serverSession() *mcp.ServerSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ss
}

func (s *session) close() {
	s.mu.Lock()
	s.closed = true
	ss := s.ss
	s.mu.Unlock()
	if ss != nil {
		ss.Close()
	}
}

// clientCaps returns what the client declared, never nil.
func (s *session) clientCaps() *mcp.ClientCapabilities {
	if ss := s.serverSession(); ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
			return ip.Capabilities
		}
	}
	return &mcp.ClientCapabilities{}
}

func (s *session) taintList() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.taint)
}

// tainted records that the session received output from server, and
// reports whether that is new.
func (s *session) tainted(server string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if server == "" || slices.Contains(s.taint, server) {
		return false
	}
	s.taint = append(s.taint, server)
	return true
}

// taintFrom taints the session with server after a request that brought
// its output (a result, or the server's own error message), and brings
// the lists up to date when that changes what the policy allows.
func (s *session) taintFrom(server string, err error) {
	if err != nil {
		if k, _ := conduit.KindOf(err); k != conduit.KindServerError {
			return
		}
	}
	if s.tainted(server) {
		s.g.goIfOpen(func() { s.refresh(s.g.ctx, changedAll) })
	}
}

// callOptions are the options of a call made for the session. A server
// on protocol 2026-07-28 takes the log level with each request: the
// session's goes with its calls.
func (s *session) callOptions(ts *conduit.ToolSet) *conduit.CallOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := &conduit.CallOptions{ToolSet: ts, Principal: s.principal, Taint: slices.Clone(s.taint), Handlers: s.handlers}
	if s.level != "" {
		o.Meta = mcp.Meta{mcp.MetaKeyLogLevel: s.level}
	}
	return o
}

// refresh brings the session's lists up to date, logging what fails.
func (s *session) refresh(ctx context.Context, c changes) {
	if err := s.sync(ctx, c); err != nil && ctx.Err() == nil {
		s.g.logger.Warn("gateway: listing for a session", "err", err)
	}
}

// sync lists what changed for the session and registers the difference
// with its server, which tells the client the lists changed.
func (s *session) sync(ctx context.Context, c changes) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	lo := &conduit.ListOptions{Principal: s.principal, Taint: s.taintList()}
	var errs []error
	if c&changedTools != 0 {
		ts, err := s.g.src.ListToolsFor(ctx, lo)
		if err == nil {
			s.g.report("tool", ts.Skipped())
			s.syncTools(ts)
		}
		errs = append(errs, err)
	}
	if c&changedPrompts != 0 {
		ps, err := s.g.src.ListPromptsFor(ctx, lo)
		if err == nil {
			s.g.report("prompt", ps.Skipped())
			s.syncPrompts(ps)
		}
		errs = append(errs, err)
	}
	if c&changedResources != 0 {
		rs, err := s.g.src.ListResourcesFor(ctx, lo)
		if err == nil {
			s.g.report("resource", rs.Skipped())
			s.syncResources(rs)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// servable reports why the SDK's server would refuse to register tool,
// whose schema is the server's: the input schema must be an object
// schema.
func servable(t *mcp.Tool) error {
	m := jsonv.ObjectOf(t.InputSchema)
	if m == nil {
		return errors.New("its input schema is not a JSON object")
	}
	if m["type"] != "object" {
		return errors.New(`its input schema is not of type "object"`)
	}
	return nil
}

// register adds under name, recovering from the SDK's panic on a
// definition it refuses (the definitions come from servers).
func register(name string, add func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s cannot be served: %v", name, r)
		}
	}()
	add()
	return nil
}

// syncTools registers the tools of ts with the session's server, and
// removes those ts no longer offers. A tool's handler resolves its calls
// against the tool set that offered it, not the session's newest: the
// client calls what it was offered, and a call the server dispatched just
// before a refresh removed its tool (a taint the policy now denies it
// for) must meet the policy, not be answered as an unknown tool.
func (s *session) syncTools(ts *conduit.ToolSet) {
	s.mu.Lock()
	old := maps.Clone(s.defs)
	s.mu.Unlock()
	keep := map[string]*mcp.Tool{}
	for t := range ts.All() {
		keep[t.Exposed] = t.Tool
		if old[t.Exposed] == t.Tool {
			continue
		}
		if err := servable(t.Tool); err != nil {
			s.g.logger.Warn("gateway: a tool is left out", "tool", t.Exposed, "reason", err)
			delete(keep, t.Exposed)
			continue
		}
		def := *t.Tool
		def.Name = t.Exposed
		def.Description = toolcall.Description(t.Description)
		name := t.Exposed
		if err := register(name, func() {
			s.server.AddTool(&def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return s.callTool(ctx, ts, name, req)
			})
		}); err != nil {
			s.g.logger.Warn("gateway: a tool is left out", "tool", name, "reason", err)
			delete(keep, name)
		}
	}
	var gone []string
	for name := range old {
		if _, ok := keep[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.server.RemoveTools(gone...)
	}
	s.mu.Lock()
	s.defs = keep
	s.mu.Unlock()
}

func (s *session) syncPrompts(ps *conduit.PromptSet) {
	s.mu.Lock()
	old := maps.Clone(s.prompts)
	s.mu.Unlock()
	keep := map[string]*conduit.Prompt{}
	for p := range ps.All() {
		keep[p.Exposed] = p
		if o := old[p.Exposed]; o != nil && o.Prompt == p.Prompt {
			continue
		}
		def := *p.Prompt
		def.Name = p.Exposed
		def.Description = toolcall.Description(p.Description)
		name := p.Exposed
		s.server.AddPrompt(&def, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return s.getPrompt(ctx, name, req)
		})
	}
	var gone []string
	for name := range old {
		if _, ok := keep[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.server.RemovePrompts(gone...)
	}
	s.mu.Lock()
	s.prompts = keep
	s.mu.Unlock()
}

func (s *session) syncResources(rs *conduit.ResourceSet) {
	s.mu.Lock()
	s.rset = rs
	oldRes, oldTmpls := maps.Clone(s.res), maps.Clone(s.tmpls)
	s.mu.Unlock()
	keepRes := map[string]*mcp.Resource{}
	for r := range rs.Resources() {
		keepRes[r.URI] = r.Resource
		if oldRes[r.URI] == r.Resource {
			continue
		}
		def := *r.Resource
		def.Description = toolcall.Description(r.Description)
		if err := register(r.URI, func() { s.server.AddResource(&def, s.readResource) }); err != nil {
			s.g.logger.Warn("gateway: a resource is left out", "uri", r.URI, "reason", err)
			delete(keepRes, r.URI)
		}
	}
	keepTmpls := map[string]*mcp.ResourceTemplate{}
	for t := range rs.Templates() {
		keepTmpls[t.URITemplate] = t.ResourceTemplate
		if oldTmpls[t.URITemplate] == t.ResourceTemplate {
			continue
		}
		def := *t.ResourceTemplate
		def.Description = toolcall.Description(t.Description)
		if err := register(t.URITemplate, func() { s.server.AddResourceTemplate(&def, s.readResource) }); err != nil {
			s.g.logger.Warn("gateway: a resource template is left out", "uri", t.URITemplate, "reason", err)
			delete(keepTmpls, t.URITemplate)
		}
	}
	var gone []string
	for uri := range oldRes {
		if _, ok := keepRes[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		s.server.RemoveResources(gone...)
	}
	gone = gone[:0]
	for uri := range oldTmpls {
		if _, ok := keepTmpls[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		s.server.RemoveResourceTemplates(gone...)
	}
	s.mu.Lock()
	s.res, s.tmpls = keepRes, keepTmpls
	s.mu.Unlock()
}

// forwardMeta is the _meta a client sent with a request (tools/call,
// prompts/get, resources/read, completion/complete), to pass on to the
// server, added to out: the progress token is conduit's to set (progress
// comes back through the call), and the io.modelcontextprotocol/ keys
// describe the client's hop, not the call. A trace context in it
// (traceparent, tracestate, baggage) reaches the hub's Trace as
// CallStartInfo.Meta (RequestStartInfo.Meta), whose span continues it;
// the hub's Trace.RequestMeta then replaces it with the span's own, so
// that the server's span is a child of conduit's, not of the client's.
func forwardMeta(m, out mcp.Meta) mcp.Meta {
	for k, v := range m {
		if k == "progressToken" || strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// callTool runs a client's tools/call of name, offered by ts, through the
// hub's pipeline.
func (s *session) callTool(ctx context.Context, ts *conduit.ToolSet, name string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	opts := s.callOptions(ts)
	opts.Meta = forwardMeta(req.Params.Meta, opts.Meta)
	if token := req.Params.GetProgressToken(); token != nil {
		ss := req.Session
		opts.Progress = func(_ *conduit.Call, p conduit.Progress) {
			ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message})
		}
	}
	var args any
	if len(req.Params.Arguments) > 0 {
		args = req.Params.Arguments
	}
	res, err := s.g.src.CallTool(context.WithValue(ctx, sessionKey{}, s), name, args, opts)
	if t, ok := ts.Lookup(name); ok {
		s.taintFrom(t.Server, err)
	}
	if err != nil {
		return answer(err)
	}
	return res, nil
}

// answer is a call's error as a client gets it: a JSON-RPC error from the
// server as the server sent it, an unknown tool as the SDK's server says
// it, and anything else (a denial, a time-out, a server that is down) as a
// tool error whose text is conduit's message.
func answer(err error) (*mcp.CallToolResult, error) {
	if rpcErr := protocolError(err); rpcErr != nil {
		return nil, rpcErr
	}
	msg := err.Error()
	var e *conduit.Error
	if errors.As(err, &e) {
		msg = e.Message
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
}

// protocolError is err as a JSON-RPC error, when it is one: the server's
// own, passed on, or an unknown name (invalid params, as the SDK says of
// an unknown tool). Nil for the failures a tool error tells.
func protocolError(err error) *jsonrpc.Error {
	var e *conduit.Error
	if !errors.As(err, &e) {
		return nil
	}
	switch e.Kind {
	case conduit.KindUnknownTool:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Message}
	case conduit.KindServerError:
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return rpcErr
		}
	}
	return nil
}

// requestError is the error of a prompt, resource or completion request:
// a JSON-RPC error in every case, the server's own passed on.
func requestError(err error) error {
	if rpcErr := protocolError(err); rpcErr != nil {
		return rpcErr
	}
	var e *conduit.Error
	if errors.As(err, &e) {
		code := int64(jsonrpc.CodeInternalError)
		if e.Kind == conduit.KindInvalidArguments {
			code = jsonrpc.CodeInvalidParams
		}
		return &jsonrpc.Error{Code: code, Message: e.Message}
	}
	return err
}

func (s *session) getPrompt(ctx context.Context, name string, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	s.mu.Lock()
	var server string
	if p := s.prompts[name]; p != nil {
		server = p.Server
	}
	s.mu.Unlock()
	opts := s.callOptions(nil)
	opts.Meta = forwardMeta(req.Params.Meta, opts.Meta)
	res, err := s.g.src.GetPrompt(context.WithValue(ctx, sessionKey{}, s), name, req.Params.Arguments, opts)
	s.taintFrom(server, err)
	if err != nil {
		return nil, requestError(err)
	}
	return res, nil
}

func (s *session) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	s.mu.Lock()
	server, _ := s.rset.Server(req.Params.URI)
	s.mu.Unlock()
	opts := s.callOptions(nil)
	opts.Meta = forwardMeta(req.Params.Meta, opts.Meta)
	res, err := s.g.src.ReadResource(context.WithValue(ctx, sessionKey{}, s), req.Params.URI, opts)
	s.taintFrom(server, err)
	if err != nil {
		return nil, requestError(err)
	}
	return res, nil
}

// complete asks the server of the reference for completions. The values
// are the server's output, which the client shows its user and which may
// end up in a prompt's arguments: they taint the session as a prompt or a
// resource does. An answer without values carries no text of the
// server's (and conduit answers so itself for a server that offers no
// completions), so it taints nothing.
func (s *session) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	server := s.completionServer(req.Params)
	opts := s.callOptions(nil)
	opts.Meta = forwardMeta(req.Params.Meta, opts.Meta)
	res, err := s.g.src.Complete(ctx, req.Params, opts)
	if err != nil || len(res.Completion.Values) > 0 {
		s.taintFrom(server, err)
	}
	if err != nil {
		return nil, requestError(err)
	}
	return res, nil
}

// completionServer is the server of a completion's reference as the
// session was offered it ("" when it was not): a prompt by its exposed
// name, a resource by its URI, a template by its URI template.
func (s *session) completionServer(p *mcp.CompleteParams) string {
	if p == nil || p.Ref == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch p.Ref.Type {
	case "ref/prompt":
		if pr := s.prompts[p.Ref.Name]; pr != nil {
			return pr.Server
		}
	case "ref/resource":
		for t := range s.rset.Templates() {
			if t.URITemplate == p.Ref.URI {
				return t.Server
			}
		}
		server, _ := s.rset.Server(p.Ref.URI)
		return server
	}
	return ""
}

func (s *session) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	if err := s.g.subscribe(ctx, s, req.Params.URI); err != nil {
		return requestError(err)
	}
	s.mu.Lock()
	s.subs[req.Params.URI] = true
	s.mu.Unlock()
	return nil
}

func (s *session) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	s.mu.Lock()
	had := s.subs[req.Params.URI]
	delete(s.subs, req.Params.URI)
	s.mu.Unlock()
	if !had {
		return nil
	}
	if err := s.g.unsubscribe(ctx, s, req.Params.URI); err != nil {
		return requestError(err)
	}
	return nil
}

func (s *session) subscriptions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.subs))
}

// watchLevel passes a client's logging/setLevel on to the servers.
func (s *session) watchLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && method == "logging/setLevel" && err == nil {
			s.mu.Lock()
			s.level = p.Level
			s.mu.Unlock()
			if err := s.g.levelChanged(ctx); err != nil {
				s.g.logger.Debug("gateway: setting the servers' log level", "err", err)
			}
		}
		return res, err
	}
}

// logLevel is the level the client asked for, or "".
func (s *session) logLevel() mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}

// log sends a server's log message to the client (the SDK drops what is
// below the level the client set). During the call it belongs to, it goes
// with the call; after the call has been answered, on its own.
func (s *session) log(ctx context.Context, p *mcp.LoggingMessageParams) {
	ss := s.serverSession()
	if ss == nil || p == nil {
		return
	}
	if ss.Log(ctx, p) != nil && ctx.Err() == nil {
		ss.Log(s.g.ctx, p)
	}
}

// The requests servers make during this session's calls, passed on to the
// client: ctx is the call's, so the request goes with the call.

func (s *session) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	ss := s.serverSession()
	if ss == nil || s.clientCaps().Elicitation == nil {
		return nil, errors.New("conduit serve: the client did not declare the elicitation capability")
	}
	return ss.Elicit(ctx, req.Params)
}

func (s *session) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	ss := s.serverSession()
	if ss == nil || s.clientCaps().Sampling == nil {
		return nil, errors.New("conduit serve: the client did not declare the sampling capability")
	}
	return ss.CreateMessage(ctx, req.Params)
}

func (s *session) roots(ctx context.Context, req *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	ss := s.serverSession()
	if ss == nil || s.clientCaps().RootsV2 == nil {
		return nil, errors.New("conduit serve: the client did not declare the roots capability")
	}
	return ss.ListRoots(ctx, req.Params)
}
