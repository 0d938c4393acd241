package conduit

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/conduitmcp/conduit/internal/redact"
	"github.com/conduitmcp/conduit/internal/session"
	"github.com/conduitmcp/conduit/internal/transport"
	"github.com/conduitmcp/conduit/oauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is one MCP server to connect to. It has an id, and exactly one
// of these:
//
//   - Command, a program spoken to over stdio
//   - URL, for Streamable HTTP, or the legacy HTTP+SSE transport with SSE
//     set
//   - Transport
type Server struct {
	// ID names the server in exposed names (id__tool in a hub), policy
	// patterns and errors. It must match ^[A-Za-z_][A-Za-z0-9_-]*$, be at
	// most 32 characters and not contain "__".
	ID string

	// Command, Args, Env and Dir start a server as a child process. The
	// child's environment is built in this order:
	//
	//   - an allowlist of this process's environment
	//   - the variables InheritEnv names
	//   - Env
	//   - under IdentityPrincipal, a principal's Env last
	//
	// The allowlist is the TypeScript SDK's getDefaultEnvironment. It is
	// HOME, LOGNAME, PATH, SHELL, TERM and USER. On Windows it is APPDATA,
	// HOMEDRIVE, HOMEPATH, LOCALAPPDATA, PATH, PROCESSOR_ARCHITECTURE,
	// SYSTEMDRIVE, SYSTEMROOT, TEMP, USERNAME, USERPROFILE and
	// PROGRAMFILES. The locale (LANG, LANGUAGE, LC_ALL and every LC_*) is
	// added. So is the temporary directory (TMPDIR, TMP, TEMP).
	//
	// A value of the allowlist that starts with "()" is left out, as the
	// SDK does. It is a shell's exported function. Nothing else of this
	// process's reaches the child. Its secrets, tokens and keys stay here.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// InheritEnv names more variables of this process's environment that
	// the child gets, by exact name ("inheritEnv" in mcp.json). Env wins
	// over one of them. Under IdentityPrincipal, a variable that any
	// principal's Env names is never inherited.
	InheritEnv []string

	// URL is a Streamable HTTP endpoint (or, with SSE, a legacy SSE
	// endpoint). Headers are sent with every request. HTTPClient, when set,
	// sends them. Without one, the hub's own client is used. It is a copy
	// of http.DefaultTransport that keeps up to 64 idle connections per
	// host. The default's 2 would reopen connections under parallel calls.
	// It is closed with the hub.
	URL        string
	Headers    map[string]string
	HTTPClient *http.Client
	SSE        bool

	// OAuth, for a Streamable HTTP URL, authorizes with OAuth 2.1. On the
	// server's 401, conduit discovers its authorization server. It gets
	// tokens (see the oauth package), stores and refreshes them. A server
	// that needs a login that cannot be had is StateNeedsLogin.
	OAuth *oauth.Config

	// Transport is any MCP transport, such as an in-memory one for tests.
	// Most transports connect once, so a server given this way is not
	// reconnected after its session is lost.
	Transport mcp.Transport

	// Identity is whose credentials the server's sessions carry (see
	// [Identity]). By default they are the ones above, shared by every
	// caller (IdentityShared). Under IdentityPrincipal they are each
	// principal's own, with a session per principal.
	Identity Identity
	// Principals are each principal's credentials under
	// IdentityPrincipal, by principal id. They are headers for a URL, and
	// environment variables for a Command. Headers and Env above then go
	// to every principal's session and must hold no credential. A
	// principal missing here has none, and is not served. A child's
	// environment loses every variable that any principal's Env names. So
	// this process's own never stands in for a principal's.
	Principals map[string]Credentials

	// MaxResultTokens is the budget of this server's results for a model,
	// in tokens ("maxResultTokens" in mcp.json). Package adapters cuts a
	// result over it before the model reads it. It takes the place of the
	// conversation's budget, and a call's own takes its place in turn.
	// conduit serve cuts one for its clients (gateway.Options). 0 leaves
	// it to them. Negative is no budget for this server's results. Each of
	// its tools carries it (Tool.MaxResultTokens).
	MaxResultTokens int

	// FromEnv holds the values its configuration read from the
	// environment (${env:NAME}), by variable name. The server's errors
	// show ${env:NAME} in place of each value. This covers every form a
	// message can hold it in. So a secret in a URL, a header or a child's
	// environment stays out of status lines, logs and traces. Package
	// config sets it.
	FromEnv map[string]string

	// scrub are the variables a principal's child does not inherit from
	// this process (forPrincipal).
	scrub []string
}

func (s Server) validate() error {
	if err := validServerID(s.ID); err != nil {
		return err
	}
	n := 0
	for _, set := range []bool{s.Command != "", s.URL != "", s.Transport != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("server %q: set exactly one of Command, URL or Transport", s.ID)
	}
	if s.SSE && s.URL == "" {
		return fmt.Errorf("server %q: SSE needs a URL", s.ID)
	}
	if len(s.InheritEnv) > 0 && s.Command == "" {
		return fmt.Errorf("server %q: InheritEnv is for a Command", s.ID)
	}
	for _, n := range s.InheritEnv {
		switch {
		case strings.Contains(n, "${"):
			return fmt.Errorf("server %q: InheritEnv holds variables' names, not ${...} references", s.ID)
		case n == "" || strings.ContainsAny(n, "=\x00"):
			return fmt.Errorf("server %q: InheritEnv: %q is not a variable's name", s.ID, redact.Name(n))
		}
	}
	if err := s.validateIdentity(); err != nil {
		return err
	}
	return s.validateOAuth()
}

// environ is the child's environment, from parent (this process's, as
// os.Environ gives it): see Server.Command. It is never nil, as a nil
// Env would give the child all of parent.
func (s Server) environ(parent []string) []string {
	env := []string{}
	for _, kv := range parent {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			continue // Windows's per-drive "=C:" entries, or no variable
		case slices.ContainsFunc(s.InheritEnv, func(n string) bool { return sameEnvName(n, k) }):
		case !inheritedByDefault(k) || strings.HasPrefix(v, "()"):
			continue
		}
		if _, scrubbed := slices.BinarySearch(s.scrub, k); scrubbed {
			continue
		}
		if _, own := s.Env[k]; own {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	return env
}

// inheritedByDefault reports whether this process's variable k goes to
// every child. Those are the TypeScript SDK's list for the platform, then
// the locale and the temporary directory. Programs need these to run as
// they would in a shell.
func inheritedByDefault(k string) bool {
	sdk := []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
	if runtime.GOOS == "windows" {
		sdk = []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
			"SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE", "PROGRAMFILES"}
	}
	for _, n := range append(sdk, "LANG", "LANGUAGE", "TMPDIR", "TMP", "TEMP") {
		if sameEnvName(n, k) {
			return true
		}
	}
	return len(k) > 3 && sameEnvName(k[:3], "LC_")
}

// sameEnvName reports whether two variables' names are one. They must
// match exactly, except on Windows, whose names ignore case.
func sameEnvName(a, b string) bool {
	if runtime.GOOS == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// reconnectable reports whether a new transport can be made after the
// session is lost.
func (s Server) reconnectable() bool { return s.Transport == nil }

// transport makes a fresh transport for one session. stderr receives a
// child process's standard error. hc is the HTTP client when s has none.
// b bounds the size of each message the server sends.
func (s Server) transport(stderr *tailBuffer, hc *http.Client, b *transport.Bounds) mcp.Transport {
	switch {
	case s.Transport != nil:
		return s.Transport
	case s.Command != "":
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Dir = s.Dir
		cmd.Env = s.environ(os.Environ())
		cmd.Stderr = stderr
		// A grandchild that inherited stderr (npx starts node) must not keep
		// Wait, and so Close, from returning once the child has exited.
		cmd.WaitDelay = time.Second
		return b.Stdio(cmd, terminateDuration)
	default:
		if s.HTTPClient != nil {
			hc = s.HTTPClient
		}
		hc = b.HTTP(hc)
		if len(s.Headers) > 0 {
			cp := *hc
			cp.Transport = headerTransport{base: hc.Transport, headers: maps.Clone(s.Headers)}
			hc = &cp
		}
		if s.SSE {
			return &mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc}
		}
		cp := *hc
		cp.Transport = transport.Linger(hc.Transport, lingerGrace)
		return &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &cp}
	}
}

// lingerGrace is how long a call's response stream may still be read
// after the call returned. Its connection then goes back to the pool
// instead of being closed.
const lingerGrace = time.Second

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(req)
}

// tailBuffer keeps the last bytes a child wrote to stderr. So a server
// that fails to start can be reported with its own words.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 4 << 10

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailMax {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func (b *tailBuffer) reset() {
	b.mu.Lock()
	b.buf = b.buf[:0]
	b.mu.Unlock()
}

// errServerStderr decorates a connection error with what the server said.
func errServerStderr(err error, stderr string) error {
	if stderr == "" {
		return err
	}
	return fmt.Errorf("%w; server stderr: %s", err, stderr)
}

var errClosed = session.ErrClosed

// terminateDuration is how long closing a stdio session waits for the
// child to exit. The wait starts when its stdin is closed. After it, the
// child is sent SIGTERM. Servers close concurrently, so a hub's Close
// waits this long at most once. It is a variable for tests.
var terminateDuration = 2 * time.Second

// redact returns err with values replaced by their ${env:NAME}. Those are
// the values s's configuration read from the environment (see FromEnv).
func (s Server) redact(err error) error { return redact.Env(err, s.FromEnv) }

// Validate reports what makes s unusable. It may have no way to be
// reached, or one too many. Its id, environment or identity may be
// malformed. Its error shows no value of FromEnv. NewHub and NewClient
// validate every server they are given.
func (s Server) Validate() error { return s.redact(s.validate()) }
