package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ReadyTimeout bounds how long [EverythingHTTP] waits for the server to
// accept connections. Node takes about a second of CPU to load the server;
// on a loaded two-core machine that has been seen to take over 20 s.
const ReadyTimeout = 30 * time.Second

// stopTimeout bounds how long a stopped server gets to exit after SIGTERM
// before its process group is killed.
const stopTimeout = 3 * time.Second

// EverythingHTTP starts server-everything in Streamable HTTP mode on a free
// loopback port and returns its endpoint, http://127.0.0.1:<port>/mcp, once
// it accepts connections. It waits at most [ReadyTimeout] and fails t with
// the server's output when the server does not come up; a port taken by
// someone else in the meantime is retried with another port. The server runs
// in its own process group, which t.Cleanup kills (SIGTERM, then SIGKILL) and
// waits for, so no process outlives the test; register sessions on it after
// calling EverythingHTTP so that their own cleanups run first.
func EverythingHTTP(t testing.TB) (url string) {
	t.Helper()
	node, script := NodeBin(t, EverythingPkg)
	const attempts = 5
	var lastErr error
	for range attempts {
		port, err := freePort()
		if err != nil {
			t.Fatalf("testenv: no free loopback port: %v", err)
		}
		p, err := startServer(node, []string{offlineEnvFlag(), script, "streamableHttp"},
			[]string{"PORT=" + strconv.Itoa(port)})
		if err != nil {
			t.Fatalf("testenv: starting server-everything: %v", err)
		}
		listening := regexp.MustCompile(`(?i)listening on port ` + strconv.Itoa(port) + `\b`)
		err = p.waitFor(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), listening, "already in use", "EADDRINUSE")
		if err == nil {
			t.Cleanup(p.stop)
			return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		}
		p.stop()
		lastErr = err
		if !errors.Is(err, errPortInUse) {
			break
		}
	}
	t.Fatalf("testenv: server-everything (streamableHttp) did not start: %v", lastErr)
	return ""
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var errPortInUse = errors.New("port in use")

// A server is a started process in its own process group.
type server struct {
	cmd  *exec.Cmd
	out  *tailBuffer // stdout and stderr, interleaved
	done chan struct{}
	err  error // of cmd.Wait; set before done is closed
	once sync.Once
}

func startServer(name string, args, env []string) (*server, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = RepoRoot()
	out := &tailBuffer{max: 64 << 10}
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = time.Second // don't hang on pipes held open by stray descendants
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &server{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitFor waits until the server has printed something that ready matches
// (nil: nothing needed) and addr accepts TCP connections, for at most
// [ReadyTimeout]. When the server exits first having printed one of inUse,
// the error is errPortInUse.
func (p *server) waitFor(addr string, ready *regexp.Regexp, inUse ...string) error {
	deadline := time.Now().Add(ReadyTimeout)
	for {
		select {
		case <-p.done:
			out := p.out.String()
			for _, s := range inUse {
				if strings.Contains(out, s) {
					return fmt.Errorf("%w: %s", errPortInUse, addr)
				}
			}
			return fmt.Errorf("exited (%v) before it was ready; output:\n%s", p.err, out)
		default:
		}
		if ready == nil || ready.MatchString(p.out.String()) {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting connections on %s after %v; output:\n%s", addr, ReadyTimeout, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the server's process group, SIGTERM first and SIGKILL after
// stopTimeout, and waits for the server to exit. It may be called more than
// once.
func (p *server) stop() {
	p.once.Do(func() {
		signalGroup(p.cmd, false)
		select {
		case <-p.done:
		case <-time.After(stopTimeout):
		}
		// Also reaches descendants that outlived the leader.
		signalGroup(p.cmd, true)
		<-p.done
	})
}

// tailBuffer is a concurrency-safe writer that keeps the last max bytes.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
