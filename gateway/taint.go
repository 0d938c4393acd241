package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Taint: the servers whose output a principal has seen. Where the client
// names a conversation, the conversation has a taint too. Tainted policy
// rules react to it. It is kept in a store.Sets by principal, not by
// transport session. So a client does not shed it by reconnecting or by
// opening another session. Every error of the store refuses what needs
// it (fail closed).

// DefaultTaintLifetime is how long a taint lasts after its latest
// addition when Options.TaintLifetime is zero.
const DefaultTaintLifetime = 24 * time.Hour

// MetaConversation is the _meta key by which a client names the
// conversation a request belongs to. Its value is a string of at most 256
// bytes. What the request receives taints that conversation (and its
// principal). Under [TaintConversation] the request is decided with that
// conversation's taint alone. Under the default, [TaintPrincipal], it is
// decided with the principal's, which holds every conversation's. conduit
// does not pass the key on to servers.
const MetaConversation = "io.github.conduitmcp/conversation"

// TaintScope is the taint a request that names a conversation is
// decided and listed with (Options.TaintScope).
type TaintScope int

const (
	// TaintPrincipal decides every request of a principal with all the
	// principal has seen, the conversation it names included. So a client
	// cannot shed a taint by naming a fresh conversation. The default. A
	// conversation id is the client's word, not proof. A tainted model
	// may start a sub-agent (a new conversation of the same client). It
	// would hand it the injected instructions without the taint.
	TaintPrincipal TaintScope = iota
	// TaintConversation decides a request that names a conversation with
	// that conversation's taint alone. So one conversation's reading does
	// not restrict another's. It trusts every client of a principal to
	// name its conversations honestly. Choose it when the clients are
	// hosts that keep their conversations apart, and no model can start
	// one. A request that names none is decided with the principal's.
	TaintConversation
)

// String returns "principal" or "conversation", the names of the
// configuration's "taintScope".
func (s TaintScope) String() string {
	switch s {
	case TaintPrincipal:
		return "principal"
	case TaintConversation:
		return "conversation"
	}
	return fmt.Sprintf("TaintScope(%d)", int(s))
}

// maxConversation bounds a conversation's name.
const maxConversation = 256

// taints is the taint of principals and of their conversations, in a
// store.Sets. The sessions of every transport use it. So do the requests
// of clients of protocol 2026-07-28, which have no session (views). A
// request is decided, and its view chosen, with the taint read from here.
type taints struct {
	sets  store.Sets
	life  time.Duration
	scope TaintScope
}

func newTaints(sets store.Sets, life time.Duration, scope TaintScope) *taints {
	if life <= 0 {
		life = DefaultTaintLifetime
	}
	return &taints{sets: sets, life: life, scope: scope}
}

// key is the store's key of principal's taint, or of their conversation
// when it is named.
func taintKey(principal, conversation string) string {
	k := "taint/" + url.PathEscape(principal)
	if conversation != "" {
		k += "/" + url.PathEscape(conversation)
	}
	return k
}

// of returns the taint a request of principal in conversation is decided
// with. That is what they have seen in any conversation. Under
// TaintConversation it is what they have seen in conversation alone, when
// it is named. The principal's set holds every conversation's: add writes
// both, with the same lifetime. So it is the union of the two.
func (t *taints) of(ctx context.Context, principal, conversation string) ([]string, error) {
	if t.scope != TaintConversation {
		conversation = ""
	}
	return t.sets.Members(ctx, taintKey(principal, conversation))
}

// add records that principal received server's output in conversation.
// It writes the principal's own set and the conversation's. A request
// that names no conversation is decided with the principal's set.
func (t *taints) add(ctx context.Context, principal, conversation, server string) error {
	if err := t.sets.AddMembers(ctx, taintKey(principal, ""), t.life, server); err != nil {
		return err
	}
	if conversation == "" {
		return nil
	}
	return t.sets.AddMembers(ctx, taintKey(principal, conversation), t.life, server)
}

// conversationOf returns the conversation a request's _meta names.
func conversationOf(meta map[string]any) (string, error) {
	v, ok := meta[MetaConversation]
	if !ok {
		return "", nil
	}
	c, isString := v.(string)
	if !isString || c == "" || len(c) > maxConversation {
		return "", &conduit.Error{Kind: conduit.ErrInvalidArguments,
			Message: fmt.Sprintf("The _meta key %s names a conversation: a non-empty string of at most %d bytes.", MetaConversation, maxConversation)}
	}
	return c, nil
}

// followConversation is the session's receiving middleware. Before a
// request is handled, it makes the session's lists the ones of the
// conversation the request names (its taint's). So a tool that
// conversation's taint allows is registered by the time its call is
// dispatched. One it denies is not listed. A session serves one
// conversation at a time best. A client with several at once opens a
// session for each.
func (s *session) followConversation(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		// A request without params has a typed nil.
		if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
			if c, err := conversationOf(p.GetMeta()); err == nil && c != "" {
				s.mu.Lock()
				changed := s.conversation != c
				s.conversation = c
				s.mu.Unlock()
				if changed {
					s.refresh(ctx, changedAll)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// taintList returns the taint the session's listings are made with. A
// session's is its principal's, in the conversation its requests last
// named. When that cannot be read, it is every server (see listTaint). A
// view's is its own, fixed when it was made.
func (s *session) taintList(ctx context.Context) []string {
	s.mu.Lock()
	c := s.conversation
	if s.view {
		defer s.mu.Unlock()
		return slices.Clone(s.taint)
	}
	s.mu.Unlock()
	taint, ok := s.g.listTaint(ctx, s.principal, c)
	s.mu.Lock()
	s.unread = !ok
	s.mu.Unlock()
	return taint
}

// listTaint is the taint a listing for principal in conversation is made
// with. That is theirs. When it cannot be read (ok false), it is every
// server, the most a taint can hold. Listing goes on while the store is
// unavailable, and offers no tool a taint could deny. Every call is
// refused until the taint can be read again (taintUnread).
func (g *Gateway) listTaint(ctx context.Context, principal, conversation string) (taint []string, ok bool) {
	taint, err := g.taints.of(ctx, principal, conversation)
	if err == nil {
		return taint, true
	}
	g.logger.Warn("gateway: the taint cannot be read: listing as if tainted by every server", "principal", principal, "err", err)
	for _, st := range g.src.Status() {
		taint = append(taint, st.ID)
	}
	return taint, false
}

// taintUnread is the answer of a request whose taint could not be read.
// Nothing was sent.
func taintUnread(err error) error {
	msg := "The taint of this conversation could not be read (" + err.Error() + "); the request was not sent."
	if errors.Is(err, store.ErrUnavailable) {
		msg = "conduit serve's shared store is unavailable, so the taint of this conversation could not be read; the request was not sent. Retry shortly."
	}
	return &conduit.Error{Kind: conduit.ErrUnavailable, Err: err, Message: msg}
}

// taintUnrecorded is the answer of a request whose output's taint could
// not be recorded. The output is withheld.
func taintUnrecorded(err error) error {
	msg := "The taint of this conversation could not be recorded (" + err.Error() + "); the server's answer is withheld."
	if errors.Is(err, store.ErrUnavailable) {
		msg = "conduit serve's shared store is unavailable, so the taint of this conversation could not be recorded; the server's answer is withheld."
	}
	return &conduit.Error{Kind: conduit.ErrUnavailable, Err: err, Message: msg}
}

// taintFrom records that the session's principal received server's
// output from a request made with opts in conversation. The output is a
// result, or the server's own error message. When that is new, it brings
// the lists of the principal's sessions up to date. A view's lists do not
// change: the principal's next request gets the view of the new taint. An
// error means the output could not be recorded, and must be withheld.
func (s *session) taintFrom(ctx context.Context, opts *conduit.CallOptions, conversation, server string, err error) error {
	if err != nil {
		if !errors.Is(err, conduit.ErrServerError) {
			return nil
		}
	}
	if server == "" || slices.Contains(opts.Taint, server) {
		return nil
	}
	// The request's own context may end with the answer: the record must
	// not be lost with it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taintTimeout)
	defer cancel()
	if err := s.g.taints.add(rctx, s.principal, conversation, server); err != nil {
		s.g.logger.Warn("gateway: the taint could not be recorded: the answer is withheld", "server", server, "err", err)
		return taintUnrecorded(err)
	}
	s.g.refreshPrincipal(s.principal, changedAll, false)
	return nil
}

// taintTimeout bounds the recording of a taint.
const taintTimeout = 10 * time.Second

// refreshPrincipal brings the lists of principal's sessions up to date
// after their taint changed. With views, it brings those of principal's
// views up to date after what the hub offers the principal changed.
func (g *Gateway) refreshPrincipal(principal string, c changes, views bool) {
	g.goIfOpen(func() {
		for _, s := range g.sessionList() {
			if s.principal == principal {
				s.refresh(g.ctx, c)
			}
		}
		if !views {
			return
		}
		for _, v := range g.viewList() {
			if v.principal == principal {
				v.refresh(g.ctx, c)
			}
		}
	})
}

// completionServer is the server of a completion's reference as the
// session was offered it ("" when it was not). A prompt is found by its
// exposed name, a resource by its URI, a template by its URI template.
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
