package oauth

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Login runs the interactive step for the server named server at endpoint
// now, ignoring stored tokens: it connects with cfg (whose Authorize must
// be set), lets the server ask for authorization, stores the tokens it
// gets in cfg.Store, and lists the server's tools to check them. asked
// reports whether the server asked for authorization at all; one that
// lets anyone in stores nothing.
func Login(ctx context.Context, server, endpoint string, cfg *Config) (asked bool, err error) {
	if cfg == nil || cfg.Authorize == nil {
		return false, fmt.Errorf("oauth: Login needs an Authorize callback")
	}
	if g := cfg.grant(); g != GrantAuthorizationCode {
		return false, fmt.Errorf("oauth: the %s grant needs no login: conduit gets its tokens by itself", g)
	}
	h, err := NewHandler(server, endpoint, cfg)
	if err != nil {
		return false, err
	}
	h.fresh = true
	client := mcp.NewClient(&mcp.Implementation{Name: "conduit", Version: "login"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	t := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: cfg.HTTPClient}
	h.Attach(t)
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		return h.wasAsked(), h.red.wrap(fmt.Errorf("oauth: connecting to %s: %w", server, err))
	}
	defer sess.Close()
	if ir := sess.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Tools != nil {
		if _, err := sess.ListTools(ctx, nil); err != nil {
			return h.wasAsked(), h.red.wrap(fmt.Errorf("oauth: listing the tools of %s: %w", server, err))
		}
	}
	return h.wasAsked(), nil
}

func (h *Handler) wasAsked() bool {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	return h.asked
}

// Logout forgets the stored tokens of server.
func Logout(ctx context.Context, server string, cfg *Config) error {
	if cfg == nil || cfg.Store == nil {
		return nil
	}
	return cfg.Store.Delete(ctx, Key{Server: server, Principal: cfg.Principal})
}
