package transport

// A response body read after its request's context ends keeps its
// connection a moment longer, so that the connection can be used again.
//
// The SDK reads a call's answer off the event stream and returns. The call
// then cancels its context. The stream's last bytes (the end of the
// chunked body) are often still in flight. net/http closes a connection
// whose request is canceled before its body ends. So, under load, parallel
// calls open new connections where idle ones would do. Here the canceled
// request's body gets a grace period to reach its end, and is aborted
// after that. A request canceled before its response arrives is aborted at
// once, as before.

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// Linger returns a RoundTripper that sends requests through base. A POST
// whose context ends after its response arrived may read the rest of its
// body for up to grace before the exchange is aborted.
func Linger(base http.RoundTripper, grace time.Duration) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &linger{base: base, grace: grace}
}

type linger struct {
	base  http.RoundTripper
	grace time.Duration
}

func (t *linger) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.Method != http.MethodPost || ctx.Done() == nil || ctx.Err() != nil {
		// A GET is a session's own event stream: it ends with the session,
		// at once. A request never canceled needs nothing.
		return t.base.RoundTrip(req)
	}
	dctx, abort := context.WithCancel(context.WithoutCancel(ctx))
	b := &lingerBody{abort: abort, grace: t.grace}
	stop := context.AfterFunc(ctx, b.canceled)
	b.stop = stop
	resp, err := t.base.RoundTrip(req.WithContext(dctx))
	if err != nil || resp.Body == nil {
		stop()
		abort()
		return resp, err
	}
	b.mu.Lock()
	b.src = resp.Body
	late := b.aborted
	b.mu.Unlock()
	if late {
		// Canceled while the response was on its way: the exchange is
		// already being aborted, and the body reads its error.
		return resp, nil
	}
	resp.Body = b
	return resp, nil
}

// lingerBody is a response body whose request's context may end before
// the body does.
type lingerBody struct {
	abort context.CancelFunc
	grace time.Duration
	stop  func() bool

	mu      sync.Mutex
	src     io.ReadCloser // nil until the response arrived
	aborted bool
	timer   *time.Timer
	done    bool // read to its end, or closed
}

// canceled runs when the request's context ends.
func (b *lingerBody) canceled() {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.done:
	case b.src == nil:
		b.aborted = true
		b.abort() // no response yet: abort now
	default:
		b.timer = time.AfterFunc(b.grace, b.abort)
	}
}

func (b *lingerBody) Read(p []byte) (int, error) {
	n, err := b.src.Read(p)
	if err != nil {
		b.finish()
	}
	return n, err
}

func (b *lingerBody) Close() error {
	err := b.src.Close()
	b.finish()
	return err
}

// finish releases the request's context once the body is done with.
// net/http has then returned the connection, or closed it.
func (b *lingerBody) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	b.stop()
	if b.timer != nil {
		b.timer.Stop()
	}
	b.abort()
}
