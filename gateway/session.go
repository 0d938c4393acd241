package gateway

import (
	"context"
	"slices"
	"sync"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client's session with the gateway: its state, and its life from the
// client's initialize to its close.

// protocolVersions are the versions of the gateway's sessions. They are
// those before 2026-07-28, whose clients initialize a session. Clients of
// 2026-07-28 have none: views serve them.
var protocolVersions = slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= newProtocol })

// session is one client's session: its own mcp.Server. Its tools,
// prompts and resources are what the hub offers the session's principal
// with the session's taint. A view is a session of no client. It is what
// one principal with one taint is offered. It serves the requests of
// clients of protocol 2026-07-28, which have no session.
type session struct {
	g         *Gateway
	principal string
	server    *mcp.Server
	handlers  *conduit.Handlers // what servers send during this session's calls
	view      bool              // its lists are made with a fixed taint (taint)
	skills    bool              // it offers the skills extension (a backend has it)

	mu      sync.Mutex
	ss      *mcp.ServerSession
	taint   []string                   // a view's, which its lists are made with
	defs    map[string]*mcp.Tool       // exposed name -> the server's own tool registered under it
	tools   *conduit.ToolSet           // the set defs were last made from
	prompts map[string]*conduit.Prompt // exposed name -> the prompt registered under it
	rset    *conduit.ResourceSet       // as offered
	res     map[string]*mcp.Resource
	tmpls   map[string]*mcp.ResourceTemplate
	subs    map[string]bool
	level   mcp.LoggingLevel // as the client set it
	closed  bool
	// conversation is the one the session's requests last named
	// (MetaConversation). Its listings are made with that one's taint.
	conversation string
	// unread is set while its lists were made without its taint, which
	// could not be read (listTaint). The first request that reads it
	// brings a session's lists up to date. A view's are not to be kept.
	unread bool

	syncMu sync.Mutex // one refresh at a time
}

type sessionKey struct{}

// sessionFrom returns the session a call's ctx belongs to.
func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// newSession makes a session's server for principal, with its lists as
// they are now. When view is set, it makes a view's, whose lists are made
// with taint.
func (g *Gateway) newSession(ctx context.Context, principal string, taint []string, view bool) (*session, error) {
	return g.makeSession(ctx, principal, taint, view, false)
}

// makeSession is newSession. A session of Serve (anyVersion) speaks
// every protocol version, 2026-07-28 included. Its one connection has no
// view to send a request of that version to.
func (g *Gateway) makeSession(ctx context.Context, principal string, taint []string, view, anyVersion bool) (*session, error) {
	s := &session{
		g:         g,
		principal: principal,
		view:      view,
		taint:     taint,
		defs:      map[string]*mcp.Tool{},
		prompts:   map[string]*conduit.Prompt{},
		res:       map[string]*mcp.Resource{},
		tmpls:     map[string]*mcp.ResourceTemplate{},
		subs:      map[string]bool{},
	}
	// Declared even while a list is empty: a server may come up later.
	caps := &mcp.ServerCapabilities{
		Logging:   &mcp.LoggingCapabilities{},
		Tools:     &mcp.ToolCapabilities{ListChanged: true},
		Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: !view},
	}
	opts := &mcp.ServerOptions{
		Instructions:      g.instr,
		Logger:            g.sdkLogger,
		CompletionHandler: s.complete,
		Capabilities:      caps,
	}
	if view && g.tasks != nil {
		caps.Extensions = map[string]any{TasksExtension: map[string]any{}}
	}
	s.offerSkills(ctx, caps)
	if view {
		// Each request's calls get Handlers of their own, for its rounds.
		opts.SetCacheable = func(ctx context.Context, req mcp.Request, c *mcp.Cacheable) {
			g.setCacheable(ctx, req, c)
			s.mu.Lock()
			if s.unread {
				c.TTLMs = 0 // listed without the taint: not to be kept
			}
			s.mu.Unlock()
		}
	} else {
		s.handlers = &conduit.Handlers{
			Elicitation: s.elicit,
			Sampling:    s.sample,
			Roots:       s.roots,
			Logging:     func(ctx context.Context, req *mcp.LoggingMessageRequest) { s.log(ctx, req.Params) },
		}
		opts.InitializedHandler = func(_ context.Context, req *mcp.InitializedRequest) {
			s.mu.Lock()
			s.ss = req.Session
			s.mu.Unlock()
			g.add(s, req.Session)
		}
		opts.SubscribeHandler, opts.UnsubscribeHandler = s.subscribe, s.unsubscribe
		opts.SupportedProtocolVersions = protocolVersions
		if anyVersion {
			opts.SupportedProtocolVersions = mcp.SupportedProtocolVersions()
		}
	}
	s.server = mcp.NewServer(g.impl, opts)
	s.server.AddReceivingMiddleware(s.downCalls) // innermost: around the SDK's lookup
	if s.skills {
		s.server.AddReceivingMiddleware(s.skillReads)
		if err := s.addSkillMethods(); err != nil {
			return nil, err
		}
	}
	s.server.AddReceivingMiddleware(s.appTools)
	if anyVersion {
		s.server.AddReceivingMiddleware(s.statelessClient)
	}
	s.server.AddReceivingMiddleware(s.watchLevel)
	if view {
		s.server.AddReceivingMiddleware(g.taskResults)
	}
	if !view {
		s.server.AddReceivingMiddleware(s.followConversation)
	}
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

// callOptions are the options of a request made for the session, whose
// _meta is meta. They carry its principal and a taint read from the
// taint store. That is the taint of the conversation meta names (or the
// principal's). conv returns that conversation. An error refuses the
// request. A server on protocol 2026-07-28 takes the log level with each
// request. So the session's goes with its calls.
func (s *session) callOptions(ctx context.Context, ts *conduit.ToolSet, meta mcp.Meta) (_ *conduit.CallOptions, conv string, _ error) {
	conv, err := conversationOf(meta)
	if err != nil {
		return nil, "", err
	}
	var taint []string
	if rt, ok := ctx.Value(readTaintKey{}).(readTaint); ok && s.view && rt.principal == s.principal && rt.conversation == conv {
		taint = slices.Clone(rt.taint)
	} else if taint, err = s.g.taints.of(ctx, s.principal, conv); err != nil {
		return nil, "", taintUnread(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unread && !s.view {
		s.unread = false
		s.g.goIfOpen(func() { s.refresh(s.g.ctx, changedAll) })
	}
	o := &conduit.CallOptions{ToolSet: ts, Principal: s.principal, Taint: taint, Handlers: s.handlers}
	if s.level != "" {
		o.Meta = mcp.Meta{mcp.MetaKeyLogLevel: s.level}
	}
	return o, conv, nil
}

// rounds reports whether a request of ss is served as rounds of a
// multi-round-trip exchange. A view's is, and so is one of protocol
// 2026-07-28 on a session of Serve. Such a client cannot be sent
// requests.
func (s *session) rounds(ss *mcp.ServerSession) bool {
	if s.view {
		return true
	}
	return newProtocolSession(ss)
}

// newProtocolSession reports whether ss speaks protocol 2026-07-28 or
// later.
func newProtocolSession(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= newProtocol
}

// statelessClient registers a session of Serve whose client speaks
// 2026-07-28 on its first request. The initialized notification registers
// another, but that protocol has none. From then on its lists are kept up
// to date.
func (s *session) statelessClient(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && newProtocolSession(ss) {
			s.mu.Lock()
			first := s.ss == nil
			if first {
				s.ss = ss
			}
			s.mu.Unlock()
			if first {
				s.g.add(s, ss)
			}
		}
		return next(ctx, method, req)
	}
}
