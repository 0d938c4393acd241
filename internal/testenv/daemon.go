// Daemons from Debian packages that tests start themselves: redis-server
// for the shared store, haproxy in front of a fleet.

package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The Debian packages that ./scripts/test installs, and the programs the
// tests run from them.
const (
	RedisPkg   = "redis-server" // program redis-server
	HAProxyPkg = "haproxy"      // program haproxy (in /usr/sbin)
)

// missing skips t with msg under a bare go test, and fails it under
// ./scripts/test or CI (see the package doc).
func missing(t testing.TB, msg string) {
	t.Helper()
	if e2eRequired() {
		t.Fatal(msg)
		return
	}
	t.Skip(msg)
}

// Binary returns the path of the program name, which the Debian package
// pkg installs: from PATH, or from the sbin directories a user's PATH may
// lack. When it is not installed it skips t, or fails it under
// ./scripts/test and CI, which install the package.
func Binary(t testing.TB, name, pkg string) string {
	t.Helper()
	if path, err := exec.LookPath(name); err == nil {
		return path
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		path := filepath.Join(dir, name)
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return path
		}
	}
	missing(t, fmt.Sprintf("testenv: %s not found: install the Debian package %s (./scripts/test installs it)", name, pkg))
	return ""
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago, for
// a daemon's configuration.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("testenv: no free loopback port: %v", err)
	}
	return port
}

// A Daemon is a server process that a test started: [Redis] and [HAProxy]
// return one. It runs in its own process group, which t.Cleanup stops
// (SIGTERM, then SIGKILL) and waits for; the kernel kills it if the test
// process dies first. Its methods are for the goroutine of the test.
type Daemon struct {
	t     testing.TB
	name  string
	args  []string
	env   []string
	ready func(*server) error

	mu sync.Mutex
	p  *server // nil while stopped
}

// startDaemon starts name with args and waits for ready.
func startDaemon(t testing.TB, name string, args []string, ready func(*server) error) (*Daemon, error) {
	return startDaemonEnv(t, name, args, nil, ready)
}

// startDaemonEnv is startDaemon with env added to the environment.
func startDaemonEnv(t testing.TB, name string, args, env []string, ready func(*server) error) (*Daemon, error) {
	d := &Daemon{t: t, name: name, args: args, env: env, ready: ready}
	if err := d.start(); err != nil {
		return nil, err
	}
	t.Cleanup(d.Stop)
	return d, nil
}

func (d *Daemon) start() error {
	p, err := startServer(d.name, d.args, d.env)
	if err != nil {
		return err
	}
	if err := d.ready(p); err != nil {
		p.stop()
		return err
	}
	d.mu.Lock()
	d.p = p
	d.mu.Unlock()
	return nil
}

// Stop ends the daemon (SIGTERM, then SIGKILL after a few seconds) and
// waits for it to exit. Stopping a stopped daemon does nothing.
func (d *Daemon) Stop() {
	d.mu.Lock()
	p := d.p
	d.p = nil
	d.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// Kill ends the daemon at once with SIGKILL, as a crash would, and waits
// for it to exit.
func (d *Daemon) Kill() {
	d.mu.Lock()
	p := d.p
	d.p = nil
	d.mu.Unlock()
	if p != nil {
		signalGroup(p.cmd, true)
		p.stop()
	}
}

// Terminate sends the daemon SIGTERM, as a service manager does to stop
// it, and waits up to timeout for it to exit; then, or when it exited with
// another status than 0, it returns an error (and kills it, if it runs
// still). Terminating a stopped daemon does nothing.
func (d *Daemon) Terminate(timeout time.Duration) error {
	d.mu.Lock()
	p := d.p
	d.p = nil
	d.mu.Unlock()
	if p == nil {
		return nil
	}
	signalGroup(p.cmd, false)
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.stop()
		return fmt.Errorf("testenv: %s did not exit within %v of SIGTERM", filepath.Base(d.name), timeout)
	}
	p.stop() // reaps descendants, if any
	if p.err != nil {
		return fmt.Errorf("testenv: %s: %w", filepath.Base(d.name), p.err)
	}
	return nil
}

// Start starts a stopped daemon again with the same command line (so on
// the same ports) and waits until it is ready; it fails the test when the
// daemon does not come up.
func (d *Daemon) Start() {
	d.t.Helper()
	d.mu.Lock()
	running := d.p != nil
	d.mu.Unlock()
	if running {
		d.t.Fatalf("testenv: %s is already running", filepath.Base(d.name))
	}
	if err := d.start(); err != nil {
		d.t.Fatalf("testenv: restarting %s: %v", filepath.Base(d.name), err)
	}
}

// Output returns the last 64 KiB of what the running daemon printed, for a
// failing test's message; "" while it is stopped.
func (d *Daemon) Output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.p == nil {
		return ""
	}
	return d.p.out.String()
}

// Start starts the program name with args, and env added to the
// environment, as a [Daemon] (in its own process group, in the
// repository's root directory, stopped by t.Cleanup), and returns it once
// addr (host:port) accepts connections. A program that exits first, or
// does not listen within ReadyTimeout, fails the test with its output.
func Start(t testing.TB, name string, args, env []string, addr string) *Daemon {
	t.Helper()
	d, err := startDaemonEnv(t, name, args, env, func(p *server) error { return p.waitFor(addr, nil) })
	if err != nil {
		t.Fatalf("testenv: %s did not start: %v", filepath.Base(name), err)
	}
	return d
}

// RedisOptions configures the redis-server that [Redis] starts. The zero
// value (or nil) is a server without a password and without persistence.
type RedisOptions struct {
	// Password, when set, is required of clients (requirepass).
	Password string
	// AppendOnly keeps the data across a restart of the server, in an
	// append-only file written at every write (appendfsync always), as a
	// production server that must not forget claims would.
	AppendOnly bool
}

// RedisServer is a redis-server that [Redis] started.
type RedisServer struct {
	*Daemon
	// Addr is host:port on loopback.
	Addr string
	// URL is redis://[:PASSWORD@]Addr/0, for redisstore.Open.
	URL string
}

// Redis starts a real redis-server on a free loopback port, with its
// working directory in a temporary directory, and returns it once it
// accepts connections. It saves no snapshot, and keeps no append-only file
// unless opts asks. [Daemon.Stop] and [Daemon.Start] restart it on the
// same port. Without the redis-server program the test is skipped, or
// failed under ./scripts/test (see [Binary]).
func Redis(t testing.TB, opts *RedisOptions) *RedisServer {
	t.Helper()
	bin := Binary(t, "redis-server", RedisPkg)
	if opts == nil {
		opts = &RedisOptions{}
	}
	dir := t.TempDir()
	var lastErr error
	for range 5 {
		port := FreePort(t)
		args := []string{
			"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--protected-mode", "no",
			"--dir", dir, "--logfile", "", "--daemonize", "no", "--save", "",
		}
		if opts.AppendOnly {
			args = append(args, "--appendonly", "yes", "--appendfsync", "always")
		} else {
			args = append(args, "--appendonly", "no")
		}
		if opts.Password != "" {
			args = append(args, "--requirepass", opts.Password)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		d, err := startDaemon(t, bin, args, func(p *server) error {
			return p.waitFor(addr, redisReadyRE, "Address already in use")
		})
		if err == nil {
			url := "redis://" + addr + "/0"
			if opts.Password != "" {
				url = "redis://:" + opts.Password + "@" + addr + "/0"
			}
			return &RedisServer{Daemon: d, Addr: addr, URL: url}
		}
		lastErr = err
		if !errors.Is(err, errPortInUse) {
			break
		}
	}
	t.Fatalf("testenv: redis-server did not start: %v", lastErr)
	return nil
}

var redisReadyRE = regexp.MustCompile(`Ready to accept connections`)

var bindRE = regexp.MustCompile(`(?m)^\s*bind\s+(\S+)`)

// HAProxy starts a real haproxy in the foreground with config, the text of
// its configuration file, and returns it once every address the config
// binds accepts connections. The config names its own loopback ports (see
// [FreePort]); a bind without a host is waited for on 127.0.0.1. A config
// haproxy refuses fails the test with haproxy's message. Without the
// haproxy program the test is skipped, or failed under ./scripts/test.
func HAProxy(t testing.TB, config string) *Daemon {
	t.Helper()
	bin := Binary(t, "haproxy", HAProxyPkg)
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, m := range bindRE.FindAllStringSubmatch(config, -1) {
		addr := strings.Split(m[1], ",")[0]
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			continue // a unix socket or an abstract namespace
		}
		if host == "" || host == "*" || host == "0.0.0.0" {
			host = "127.0.0.1"
		}
		addrs = append(addrs, net.JoinHostPort(host, port))
	}
	if len(addrs) == 0 {
		t.Fatal("testenv: the haproxy config binds no host:port")
	}
	d, err := startDaemon(t, bin, []string{"-db", "-f", path}, func(p *server) error {
		for _, addr := range addrs {
			if err := p.waitFor(addr, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("testenv: haproxy did not start: %v", err)
	}
	return d
}
