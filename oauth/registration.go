package oauth

import (
	"context"
	"strings"
)

// A client registered dynamically (RFC 7591) is kept with the tokens it got
// (Record.RegisteredRedirect says it was), so that a later login with the
// same authorization server and redirect URL, in this process or another,
// uses it rather than registering another: a server whose refresh token
// expires every month would otherwise gather a client per login.

// dynClient is a client registered dynamically with issuer, for redirect.
type dynClient struct {
	issuer, redirect string
	client           client
}

// rememberLocked keeps the dynamically registered client of rec, a record
// of this handler's server. Under tsMu.
func (h *Handler) rememberLocked(rec *Record) {
	h.dcrLoaded = true
	if rec == nil || rec.RegisteredRedirect == "" || rec.ClientID == "" || !sameResource(rec.Resource, h.endpoint) {
		return
	}
	h.dcr = &dynClient{issuer: rec.Issuer, redirect: rec.RegisteredRedirect,
		client: client{ClientID: rec.ClientID, ClientSecret: rec.ClientSecret, AuthStyle: rec.AuthStyle, dynamic: true}}
	h.red.add(rec.ClientSecret)
}

// knownClient returns the client registered dynamically before with
// issuer for the configured redirect URL, or nil. It reads the store the
// first time (a Login, which ignores stored tokens, still reuses the
// stored client).
func (h *Handler) knownClient(ctx context.Context, issuer string) *client {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	if !h.dcrLoaded {
		if rec, err := h.store.Load(ctx, h.key); err == nil {
			h.rememberLocked(rec)
		}
		h.dcrLoaded = true
	}
	d := h.dcr
	if d == nil || d.redirect != h.redirectURL() || !sameIssuer(d.issuer, issuer) {
		return nil
	}
	c := d.client
	return &c
}

// noteRegistered keeps a client just registered with issuer, before any
// login with it succeeded: a login that fails or is declined, or a step-up,
// then uses it rather than registering another.
func (h *Handler) noteRegistered(issuer string, c client) {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	h.dcr, h.dcrLoaded = &dynClient{issuer: issuer, redirect: h.redirectURL(), client: c}, true
}

// forgetClient drops a reused client after a login with it failed: the
// authorization server may have dropped the registration (or expired its
// secret), and a stale client must not lock the user out. The next login,
// here or in another process, registers again; the stored tokens stay.
func (h *Handler) forgetClient(ctx context.Context, c *client) {
	if c == nil {
		return
	}
	h.tsMu.Lock()
	if h.dcr != nil && h.dcr.client.ClientID == c.ClientID {
		h.dcr = nil
	}
	h.dcrLoaded = true
	h.tsMu.Unlock()
	ctx = context.WithoutCancel(ctx)
	if rec, err := h.store.Load(ctx, h.key); err == nil && rec != nil && rec.ClientID == c.ClientID && rec.RegisteredRedirect != "" {
		rec.RegisteredRedirect = ""
		// Best effort: a record that keeps the mark costs one more failed
		// login in another process, which then forgets it again.
		_ = h.store.Save(ctx, h.key, rec)
	}
}

// sameIssuer compares issuers as RFC 8414 §3.3 metadata validation
// tolerates them: up to one trailing slash.
func sameIssuer(a, b string) bool {
	return a != "" && strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}
