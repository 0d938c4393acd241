package gateway

import (
	"slices"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session's taint: the servers whose output its client has seen, which
// Tainted policy rules react to.

// taintList returns the servers of the session's taint.
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
// A view's taint is its principal's, kept in the gateway's store: the
// principal's next request gets the view of the new taint.
func (s *session) taintFrom(server string, err error) {
	if err != nil {
		if k, _ := conduit.KindOf(err); k != conduit.KindServerError {
			return
		}
	}
	if s.view {
		if server != "" && !slices.Contains(s.taint, server) {
			s.g.taintPrincipal(s.principal, server)
		}
		return
	}
	if s.tainted(server) {
		s.g.goIfOpen(func() { s.refresh(s.g.ctx, changedAll) })
	}
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
