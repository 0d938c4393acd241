package conduit

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/conduitmcp/conduit/oauth"
	"github.com/conduitmcp/conduit/store"
)

// newOAuth makes the OAuth handler of a server with an OAuth setting. Its
// requests to authorization servers go through the server's HTTP client,
// or hc, without the server's static headers, which are for the server.
// Its refreshes are serialized by locks (the hub's store: with a shared
// store, across processes), unless the setting has a Locker of its own.
func (s Server) newOAuth(hc *http.Client, locks store.Locks) (*oauth.Handler, error) {
	if s.OAuth == nil {
		return nil, nil
	}
	cfg := *s.OAuth
	if cfg.Locker == nil && locks != nil {
		cfg.Locker = oauth.StoreLocker(locks)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = hc
		if s.HTTPClient != nil {
			cfg.HTTPClient = s.HTTPClient
		}
	}
	h, err := oauth.NewHandler(s.ID, s.URL, &cfg)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", s.ID, err)
	}
	return h, nil
}

// validateOAuth checks the OAuth setting of s.
func (s Server) validateOAuth() error {
	if s.OAuth == nil {
		return nil
	}
	if s.URL == "" || s.SSE {
		return fmt.Errorf("server %q: OAuth needs a Streamable HTTP url", s.ID)
	}
	for k := range s.Headers {
		if http.CanonicalHeaderKey(k) == "Authorization" {
			return fmt.Errorf("server %q: an Authorization header and OAuth exclude each other", s.ID)
		}
	}
	if err := s.OAuth.Validate(s.URL); err != nil {
		return fmt.Errorf("server %q: %w", s.ID, err)
	}
	return nil
}

// needsLogin reports whether err says the server needs a login, and
// returns the error to keep in its status: the handler's own, which names
// the server and the reason, without the transport's wrapping.
func needsLogin(err error) (bool, error) {
	if !errors.Is(err, oauth.ErrNeedsLogin) {
		return false, err
	}
	var le *oauth.LoginError
	if errors.As(err, &le) {
		return true, le
	}
	return true, err
}

// awaitLogin waits, sending nothing to the server, until the server's
// handler has new tokens: reconnecting before then would only fail again.
// It reports false when ctx ends first.
func (cn *conn) awaitLogin(ctx context.Context) bool {
	cn.mu.Lock()
	waiting := cn.state == StateNeedsLogin
	cn.mu.Unlock()
	if !waiting || cn.oauth == nil {
		return true
	}
	return cn.oauth.WaitLogin(ctx) == nil
}
