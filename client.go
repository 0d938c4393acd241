package conduit

import (
	"context"
)

// Client is a source over one server: a hub of one, whose tools keep their
// own sanitized names (after Options.Prefix) instead of server__tool, and
// which may go without a Policy (see [Options.Policy]). Like a hub, it starts even when its
// server is down, and keeps one session for its life, reconnecting with
// backoff after the session is lost. A Client is safe for concurrent use.
type Client struct{ governed }

var _ Source = (*Client)(nil)

// NewClient connects to the server and returns once the first attempt is
// over, whatever its outcome: a server that could not be reached is
// reported by [Client.Status] and reconnected with backoff, and calls
// meanwhile are answered with ErrUnavailable. ctx bounds the first
// attempt only. opts may be nil for the defaults.
func NewClient(ctx context.Context, server Server, opts *Options) (*Client, error) {
	c, err := newCore(ctx, []Server{server}, opts, false)
	if err != nil {
		return nil, err
	}
	cl := &Client{governed{c}}
	c.owner = cl
	return cl, nil
}

// Reconnect asks the server to connect now, as [Hub.Reconnect] does.
func (cl *Client) Reconnect() error { return cl.c.reconnect(cl.c.slots[0].srv.ID) }
