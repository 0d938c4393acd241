package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// ErrLoginTimeout is matched by the error of a login that no redirect
// answered within the time limit.
var ErrLoginTimeout = errors.New("oauth: no answer from the browser in time")

// LoopbackOptions configure [NewLoopback].
type LoopbackOptions struct {
	// Timeout is how long to wait for the browser to come back; 0 is five
	// minutes.
	Timeout time.Duration
	// Show is given the authorization URL to show the user (print it); nil
	// shows nothing.
	Show func(authURL string)
	// Open opens the URL in a browser; nil opens none. Its error only
	// means the user must follow the URL that Show was given.
	Open func(authURL string) error
}

// Loopback is the interactive step for a program on the user's machine
// (RFC 8252 §7.3): it listens on a loopback redirect URL, shows the
// authorization URL and opens a browser, and takes the one redirect that
// comes back. Its Authorize method is a [Config].Authorize.
//
// The listener binds a loopback address only, answers one redirect per
// authorization (a second one, or one with the wrong state, is refused
// and ends that authorization), and gives up after the time limit.
type Loopback struct {
	opts     LoopbackOptions
	redirect *url.URL
	addr     string

	mu sync.Mutex
	ln net.Listener // bound, not yet serving
}

// NewLoopback binds the listener of redirectURL ("" is
// [DefaultRedirectURL]), which must be http on 127.0.0.1, [::1] or
// localhost; without a port, or with port 0, it takes a free one, and
// [Loopback.RedirectURL] says which. Close releases it.
func NewLoopback(redirectURL string, opts *LoopbackOptions) (*Loopback, error) {
	if redirectURL == "" {
		redirectURL = DefaultRedirectURL
	}
	u, err := url.Parse(redirectURL)
	if err != nil || u.Scheme != "http" || !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("oauth: the redirect URL %q is not an http URL on a loopback address, which a local listener needs", redirectURL)
	}
	host := u.Hostname()
	if host == "localhost" || host == "" {
		host = "127.0.0.1"
	}
	port := u.Port()
	if port == "" {
		port = "0"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("oauth: listening for the redirect: %w", err)
	}
	actual := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ru := *u
	ru.Host = net.JoinHostPort(u.Hostname(), actual)
	if ru.Path == "" {
		ru.Path = "/"
	}
	l := &Loopback{redirect: &ru, addr: net.JoinHostPort(host, actual), ln: ln}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.Timeout <= 0 {
		l.opts.Timeout = 5 * time.Minute
	}
	return l, nil
}

// RedirectURL is the redirect URL with the port that was bound: the
// Config.RedirectURL to use with this listener.
func (l *Loopback) RedirectURL() string { return l.redirect.String() }

// Close releases the listener.
func (l *Loopback) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln == nil {
		return nil
	}
	err := l.ln.Close()
	l.ln = nil
	return err
}

// Authorize shows and opens args.URL, and waits for the redirect.
func (l *Loopback) Authorize(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	au, err := url.Parse(args.URL)
	if err != nil {
		return nil, fmt.Errorf("oauth: the authorization URL: %w", err)
	}
	state := au.Query().Get("state")
	if state == "" {
		return nil, errors.New("oauth: the authorization URL has no state")
	}
	l.mu.Lock()
	ln := l.ln
	l.ln = nil
	l.mu.Unlock()
	if ln == nil {
		// A later authorization (step-up) listens again on the same port,
		// the one the redirect URL names.
		if ln, err = net.Listen("tcp", l.addr); err != nil {
			return nil, fmt.Errorf("oauth: listening for the redirect: %w", err)
		}
	}
	done := make(chan outcome, 1)
	mux := http.NewServeMux()
	mux.Handle(l.redirect.Path, l.redirectHandler(state, done))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer func() {
		// The page of the answer is still being written when its outcome
		// arrives: Shutdown lets it finish (briefly), Close would cut it.
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}()

	if l.opts.Show != nil {
		l.opts.Show(args.URL)
	}
	if l.opts.Open != nil {
		l.opts.Open(args.URL)
	}
	t := time.NewTimer(l.opts.Timeout)
	defer t.Stop()
	select {
	case o := <-done:
		return o.res, o.err
	case <-t.C:
		return nil, fmt.Errorf("%w (%v)", ErrLoginTimeout, l.opts.Timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// redirectHandler takes the first redirect, whose outcome it sends on
// done, and answers every later one with 410 Gone: one answer per
// authorization, so that a redirect replayed while the listener is still
// open cannot take its place.
func (l *Loopback) redirectHandler(state string, done chan<- outcome) http.Handler {
	var once sync.Once
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answered := true
		once.Do(func() {
			answered = false
			done <- l.answer(w, r, state)
		})
		if answered {
			http.Error(w, "This login has already been answered.", http.StatusGone)
		}
	})
}

type outcome struct {
	res *auth.AuthorizationResult
	err error
}

func (l *Loopback) answer(w http.ResponseWriter, r *http.Request, state string) (o outcome) {
	q := r.URL.Query()
	page := func(code int, title, text string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>%s</h1><p>%s</p>\n", html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
	}
	switch {
	case q.Get("state") != state:
		page(http.StatusBadRequest, "Login refused", "This answer does not belong to the login conduit started. Start it again.")
		o.err = ErrStateMismatch
	case q.Get("error") != "":
		page(http.StatusOK, "Login failed", "The authorization server said: "+q.Get("error")+". You can close this tab.")
		desc := q.Get("error_description")
		if len(desc) > 200 {
			desc = desc[:200]
		}
		o.err = fmt.Errorf("oauth: the authorization server answered %q: %q", q.Get("error"), desc)
	case q.Get("code") == "":
		page(http.StatusBadRequest, "Login failed", "The answer has no authorization code.")
		o.err = errors.New("oauth: the authorization response has no code")
	default:
		page(http.StatusOK, "Logged in", "conduit has what it needs. You can close this tab.")
		o.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	}
	return o
}
