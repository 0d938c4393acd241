package oauth

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit/internal/redact"
)

// ErrNeedsLogin is matched (errors.Is) by the error of a server that needs
// an interactive login which cannot be had: no Authorize callback, or a
// refresh token that expired or was revoked. The error itself is a
// *[LoginError].
var ErrNeedsLogin = errors.New("oauth: login needed")

// ErrStateMismatch is matched by the error of an authorization response
// whose state is not the one the request was sent with: a forged or stale
// redirect, never used.
var ErrStateMismatch = errors.New("oauth: the authorization response's state does not match the request's")

// LoginError says why a server needs a login. Its message names the server
// and the reason, and never a secret.
type LoginError struct {
	Server string
	Reason string
	// Err is why an interactive step failed (a time limit, a refusal,
	// [ErrStateMismatch], ...), when that is the reason; errors.Is and
	// errors.As reach it.
	Err error
}

// Error names the server and the reason it needs a login.
func (e *LoginError) Error() string {
	return "oauth: server " + e.Server + " needs a login: " + e.Reason
}

// Is makes a LoginError match [ErrNeedsLogin].
func (e *LoginError) Is(target error) bool { return target == ErrNeedsLogin }

// Unwrap returns Err.
func (e *LoginError) Unwrap() error { return e.Err }

// maxSecrets bounds what a redactor remembers.
const maxSecrets, pinnedSecrets = 256, 8

// redactor removes secrets from error messages.
type redactor struct {
	mu      sync.Mutex
	secrets []string
}

func (r *redactor) add(s ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range s {
		// Short values would redact ordinary words.
		if len(v) >= redact.MinLen && !slices.Contains(r.secrets, v) {
			r.secrets = append(r.secrets, v)
		}
	}
	// Access tokens come and go; the oldest ones can no longer appear.
	// The first ones (the configured secrets) are kept.
	if n := len(r.secrets) - maxSecrets; n > 0 {
		r.secrets = slices.Delete(r.secrets, pinnedSecrets, pinnedSecrets+n)
	}
}

// clean takes every form of each known secret out of s (package
// redact).
func (r *redactor) clean(s string) string {
	r.mu.Lock()
	secrets := make([]redact.Secret, len(r.secrets))
	for i, v := range r.secrets {
		secrets[i] = redact.Secret{Value: v, With: "[redacted]"}
	}
	r.mu.Unlock()
	return redact.String(s, secrets...)
}

// wrap is err with the known secrets taken out of its message. Unwrap
// keeps errors.Is and errors.As working (an *oauth2.RetrieveError stays
// reachable for whoever asks for it explicitly).
func (r *redactor) wrap(err error) error { return redact.Error(err, r.clean) }

func parseIP(host string) (netip.Addr, error) {
	return netip.ParseAddr(strings.Trim(host, "[]"))
}
