package conduit

import (
	"github.com/conduitmcp/conduit/internal/redact"

	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/conduitmcp/conduit/oauth"
)

// Whose credentials a server's sessions carry. By default one identity
// serves every caller; otherwise each principal has its own. Also how a
// principal's Server is made from the configured one.

// Identity is whose credentials a server's sessions carry.
type Identity int

const (
	// IdentityShared: one session for every caller, made with the
	// Server's own Headers, Env and OAuth tokens. It is the default. The
	// principal of a call is what the policy, approvers and hooks see. It
	// is not who the server sees.
	IdentityShared Identity = iota
	// IdentityPrincipal: a session per principal (CallOptions.Principal,
	// ListOptions.Principal). It is opened with that principal's own
	// credentials. These are one of:
	//
	//   - the Server's Principals entry: headers for a URL, environment
	//     variables for a command
	//   - the principal's OAuth tokens, stored under
	//     oauth.Key{Server, Principal} by oauth.Login or
	//     "conduit login SERVER --principal ID"
	//   - tokens exchanged from the principal's own token (see
	//     [Options.SubjectToken])
	//
	// A principal without credentials is StateNeedsLogin for that server.
	// Its tools are not offered to them, and a call is refused, nothing
	// sent. A listing or a request without a principal leaves the server
	// out ([ErrNoPrincipal]). Nothing is ever sent with someone's identity
	// on behalf of nobody, nor with a shared one. Sessions are pooled per
	// server (see [Options.MaxPrincipalSessions] and
	// [Options.PrincipalIdleTimeout]). A stdio server is a child process
	// per principal.
	IdentityPrincipal
)

// String returns "shared" or "principal", the names mcp.json uses.
func (i Identity) String() string {
	switch i {
	case IdentityShared:
		return "shared"
	case IdentityPrincipal:
		return "principal"
	}
	return fmt.Sprintf("Identity(%d)", int(i))
}

// Credentials are one principal's own credentials for a server of
// [IdentityPrincipal].
type Credentials struct {
	// Headers are sent with every request to a server reached by URL,
	// over the Server's own Headers.
	Headers map[string]string
	// Env is added to a stdio server's environment, over the Server's
	// own Env.
	Env map[string]string
}

// ErrNoPrincipal is the cause of a request or listing made for no
// principal. It concerns a server whose sessions are per principal
// ([IdentityPrincipal]). The server is left out of the listing. A request
// of it is refused with ErrUnavailable, nothing sent.
var ErrNoPrincipal = errors.New("its sessions are per principal (identity \"principal\"), and the request names no principal")

// validateIdentity checks what s's identity asks of the rest of its
// setting.
func (s Server) validateIdentity() error {
	switch s.Identity {
	case IdentityShared:
		if len(s.Principals) > 0 {
			return fmt.Errorf(`server %q: "principals" are for "identity": "principal"`, s.ID)
		}
		return nil
	case IdentityPrincipal:
	default:
		return fmt.Errorf("server %q: unknown identity %d", s.ID, int(s.Identity))
	}
	if s.Transport != nil {
		return fmt.Errorf("server %q: identity \"principal\" needs a command or a url, which each principal's session is opened with; a Transport connects once", s.ID)
	}
	if s.OAuth != nil && len(s.Principals) > 0 {
		return fmt.Errorf(`server %q: a principal's credentials come from "principals" or from "oauth", not both`, s.ID)
	}
	if s.OAuth == nil && len(s.Principals) == 0 {
		return fmt.Errorf(`server %q: identity "principal" needs each principal's credentials: "principals", or "oauth"`, s.ID)
	}
	if s.OAuth != nil && s.OAuth.Authorize != nil {
		// Whoever is at this process's browser is not the principal.
		return fmt.Errorf("server %q: identity \"principal\" takes no OAuth Authorize callback: each principal logs in with oauth.Login (conduit login --principal)", s.ID)
	}
	if s.OAuth != nil && s.OAuth.SubjectToken != nil {
		return fmt.Errorf("server %q: identity \"principal\" takes each principal's subject token from Options.SubjectToken, not from its OAuth setting", s.ID)
	}
	for _, p := range slices.Sorted(maps.Keys(s.Principals)) {
		c := s.Principals[p]
		switch {
		case p == "":
			return fmt.Errorf("server %q: a principal's id is empty", s.ID)
		case s.Command != "" && len(c.Headers) > 0:
			return fmt.Errorf(`server %q: principal %q: "headers" are for a "url", not a "command"`, s.ID, p)
		case s.Command == "" && len(c.Env) > 0:
			return fmt.Errorf(`server %q: principal %q: "env" is for a "command", not a "url"`, s.ID, p)
		}
	}
	// The shared setting goes to every principal's session: a credential
	// in it would be everyone's.
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		if redact.CredentialHeader(k) {
			return fmt.Errorf("server %q: header %q would be every principal's credential: under identity \"principal\" put it in each principal's \"headers\"", s.ID, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if redact.CredentialVar(k) {
			return fmt.Errorf("server %q: env %q would be every principal's credential: under identity \"principal\" put it in each principal's \"env\"", s.ID, k)
		}
	}
	return nil
}

// forPrincipal is the Server that principal's session is opened with. Or
// it is the LoginError of a principal that has no credentials for s. Under
// identity principal, the child's environment loses every variable that
// a principal's credentials set (scrub). So a variable this process holds
// never stands in for one missing. An example is the operator's own
// GITHUB_TOKEN.
func (s Server) forPrincipal(principal string) (Server, error) {
	p := s
	p.Principals = nil
	if s.OAuth != nil {
		return p, nil // the principal's tokens, or a login to make
	}
	c, ok := s.Principals[principal]
	if !ok {
		return Server{}, &oauth.LoginError{Server: s.ID, Reason: fmt.Sprintf("principal %q has no credentials for it (add them under the server's \"principals\")", principal)}
	}
	if s.Command != "" {
		p.Env = maps.Clone(s.Env)
		if p.Env == nil {
			p.Env = map[string]string{}
		}
		maps.Copy(p.Env, c.Env)
		for _, other := range s.Principals {
			for k := range other.Env {
				if !slices.Contains(p.scrub, k) {
					p.scrub = append(p.scrub, k)
				}
			}
		}
		slices.Sort(p.scrub)
		return p, nil
	}
	p.Headers = maps.Clone(s.Headers)
	if p.Headers == nil {
		p.Headers = map[string]string{}
	}
	for k, v := range c.Headers {
		// One spelling per header, the principal's winning.
		for have := range p.Headers {
			if http.CanonicalHeaderKey(have) == http.CanonicalHeaderKey(k) {
				delete(p.Headers, have)
			}
		}
		p.Headers[k] = v
	}
	return p, nil
}

// principalOAuth is the OAuth setting of principal's session. It is the
// server's, with the principal's tokens (oauth.Key.Principal). Nobody is
// asked in a browser. The principal's own token is the subject of a token
// exchange.
func (c *core) principalOAuth(s Server, principal string) *oauth.Config {
	if s.OAuth == nil {
		return nil
	}
	cfg := *s.OAuth
	cfg.Principal = principal
	cfg.Authorize = nil
	cfg.SubjectToken = nil
	if src := c.SubjectToken; src != nil {
		cfg.SubjectToken = func(ctx context.Context) (string, error) { return src(ctx, principal) }
	}
	return &cfg
}
