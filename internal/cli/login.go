package cli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/oauth"
)

// tokenDir is where the CLI keeps OAuth tokens: $CONDUIT_OAUTH_DIR, or
// oauth.DefaultDir.
func tokenDir(env *Env) (string, error) {
	if d := env.Getenv("CONDUIT_OAUTH_DIR"); d != "" {
		return d, nil
	}
	return oauth.DefaultDir()
}

// prepareOAuth gives every server with an OAuth setting the CLI's token
// store and environment. It sets no Authorize callback. A command other than
// login cannot ask anyone. So a server that needs a login is reported as
// needing one, at once.
func prepareOAuth(env *Env, cfg *config.File) error {
	var store oauth.TokenStore
	for i := range cfg.Servers {
		s := &cfg.Servers[i]
		if s.OAuth == nil {
			continue
		}
		if store == nil {
			dir, err := tokenDir(env)
			if err != nil {
				return inputError("%v", err)
			}
			store = &oauth.FileStore{Dir: dir}
		}
		o := *s.OAuth
		if o.Store == nil {
			o.Store = store
		}
		if o.Getenv == nil {
			o.Getenv = env.Getenv
		}
		s.OAuth = &o
	}
	return nil
}

// loginHint is the command that logs in to server.
func loginHint(config, server string) string {
	if config == "mcp.json" {
		return "conduit login " + server
	}
	return "conduit login --config " + config + " " + server
}

// principalLoginHint is the command that logs principal in to server.
func principalLoginHint(config, server, principal string) string {
	return loginHint(config, server) + " --principal " + strconv.Quote(principal)
}

// findOAuthServer returns the server id of the configuration whose tokens a
// login or logout is about. principal is "" for the shared tokens. A server
// of identity principal takes a principal's tokens. Any other takes the
// shared ones.
func findOAuthServer(cmd string, cfg *config.File, id, principal, config string) (*conduit.Server, error) {
	for i := range cfg.Servers {
		if s := &cfg.Servers[i]; s.ID == id {
			switch {
			case s.OAuth == nil:
				return nil, inputError("server %s in %s has no \"oauth\" setting; add \"oauth\": {} to its entry to log in to it", id, config)
			case s.Identity == conduit.IdentityPrincipal && principal == "":
				return nil, usageError(cmd, "server %s serves each principal with their own tokens (\"identity\": \"principal\"): name whose with --principal ID", id)
			case s.Identity != conduit.IdentityPrincipal && principal != "":
				return nil, usageError(cmd, "server %s shares one identity among its callers: --principal is for a server of \"identity\": \"principal\"", id)
			}
			o := *s.OAuth
			o.Principal = principal
			s.OAuth = &o
			return s, nil
		}
	}
	return nil, usageError(cmd, "no server %q in %s", id, config)
}

// whose is " as ID" for a principal's login, "" for the shared one.
func whose(principal string) string {
	if principal == "" {
		return ""
	}
	return fmt.Sprintf(" as %q", principal)
}

func runLogin(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "login", `
Log in to an OAuth-protected server of the configuration: conduit prints the
authorization URL, opens it in a browser where there is one, and listens
once, on the loopback redirect URL, for the authorization server's answer
(checking its state). The tokens are stored in $CONDUIT_OAUTH_DIR, or
conduit/oauth in the user's configuration directory (a 0600 file per
server), and refreshed from then on by every command.

A server of "identity": "principal" keeps each principal's tokens apart:
--principal ID logs that principal in (the person at the browser signs in
as them), and only their calls use what is stored.`)
	var h hubFlags
	h.register(fs)
	principal := fs.String("principal", "", "log in as principal `ID`, for a server of \"identity\": \"principal\"")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the browser to come back")
	noBrowser := fs.Bool("no-browser", false, "only print the URL; do not open a browser")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("login", "name one server to log in to")
	}
	cfg, err := h.loadConfig()
	if err != nil {
		return err
	}
	if err := prepareOAuth(env, cfg); err != nil {
		return err
	}
	s, err := findOAuthServer("login", cfg, pos[0], *principal, h.config)
	if err != nil {
		return err
	}
	open := env.OpenURL
	if *noBrowser {
		open = nil
	}
	if open == nil && !env.StderrTerminal {
		// Nobody would see the URL, and no browser would open it.
		return failure("%s needs a login in a browser, and this command has neither a browser to open nor a terminal to show the URL on: run it in a terminal", s.ID)
	}
	lb, err := oauth.NewLoopback(s.OAuth.RedirectURL, &oauth.LoopbackOptions{
		Timeout: *timeout,
		Show: func(u string) {
			fmt.Fprintf(env.Stderr, "conduit: to log in to %s%s, open this URL in a browser:\n\n  %s\n\nconduit: waiting for the browser (up to %v)...\n", s.ID, whose(*principal), u, *timeout)
		},
		Open: open,
	})
	if err != nil {
		return inputError("server %s: %v", s.ID, err)
	}
	defer lb.Close()
	o := *s.OAuth
	o.RedirectURL = lb.RedirectURL()
	o.Authorize = lb.Authorize
	// The listener gives up after --timeout; the step as a whole has the
	// code exchange's time besides.
	o.AuthorizeTimeout = *timeout + 30*time.Second
	asked, err := oauth.Login(ctx, s.ID, s.URL, &o)
	switch {
	case errors.Is(err, oauth.ErrLoginTimeout):
		return failure("%s: no answer from the browser within %v; run '%s' again", s.ID, *timeout, loginHint(h.config, s.ID))
	case err != nil:
		return failure("%s: %v", s.ID, err)
	case !asked:
		fmt.Fprintf(env.Stderr, "conduit: %s did not ask for a login; nothing was stored\n", s.ID)
		return nil
	}
	fmt.Fprintf(env.Stderr, "conduit: logged in to %s%s\n", s.ID, whose(*principal))
	return nil
}

func runLogout(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "logout", `
Forget the stored OAuth tokens of a server of the configuration (of one
principal, with --principal ID, for a server of "identity": "principal").`)
	var h hubFlags
	h.register(fs)
	principal := fs.String("principal", "", "forget the tokens of principal `ID`, for a server of \"identity\": \"principal\"")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("logout", "name one server to log out of")
	}
	cfg, err := h.loadConfig()
	if err != nil {
		return err
	}
	if err := prepareOAuth(env, cfg); err != nil {
		return err
	}
	s, err := findOAuthServer("logout", cfg, pos[0], *principal, h.config)
	if err != nil {
		return err
	}
	if err := oauth.Logout(ctx, s.ID, s.OAuth); err != nil {
		return failure("%s: %v", s.ID, err)
	}
	fmt.Fprintf(env.Stderr, "conduit: logged out of %s%s\n", s.ID, whose(*principal))
	return nil
}

// openBrowser opens url in the desktop's browser, where there is one.
func openBrowser(url string) error {
	var cmd string
	switch runtime.GOOS {
	case "darwin":
		cmd = "open"
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", url).Start()
	default:
		cmd = "xdg-open"
	}
	path, err := exec.LookPath(cmd)
	if err != nil {
		return err
	}
	c := exec.Command(path, url)
	if err := c.Start(); err != nil {
		return err
	}
	go c.Wait() // reap it; a browser may outlive the login
	return nil
}

// hasBrowser reports whether openBrowser can work here.
func hasBrowser(getenv func(string) string) bool {
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" {
		return false
	}
	_, err := exec.LookPath("xdg-open")
	return err == nil
}
