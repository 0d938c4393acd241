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
	defs    map[string]*mcp.Tool       // exposed name -> the server's own tool registered under it
	prompts map[string]*conduit.Prompt // exposed name -> the prompt registered under it
	rset    *conduit.ResourceSet       // as offered
	res     map[string]*mcp.Resource
	tmpls   map[string]*mcp.ResourceTemplate
	subs    map[string]bool
	level   mcp.LoggingLevel // as the client set it
	closed  bool
	// conversation is the one the session's requests last named
	// (MetaConversation), whose taint its listings are made with.
	conversation string

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
	s.server.AddReceivingMiddleware(s.watchLevel, s.followConversation)
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
// _meta is meta: its principal, and the taint of the conversation meta
// names (or the principal's), read from the taint store (taint.go), which
// conv returns; an error refuses the request. A server on protocol
// 2026-07-28 takes the log level with each request: the session's goes
// with its calls.
func (s *session) callOptions(ctx context.Context, ts *conduit.ToolSet, meta mcp.Meta) (_ *conduit.CallOptions, conv string, _ error) {
	conv, err := conversationOf(meta)
	if err != nil {
		return nil, "", err
	}
	taint, err := s.g.taints.of(ctx, s.principal, conv)
	if err != nil {
		return nil, "", taintUnread(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := &conduit.CallOptions{ToolSet: ts, Principal: s.principal, Taint: taint, Handlers: s.handlers}
	if s.level != "" {
		o.Meta = mcp.Meta{mcp.MetaKeyLogLevel: s.level}
	}
	return o, conv, nil
}
