package testenv_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// redisCommand sends one command in the RESP protocol and returns the
// first line of the reply ("+PONG", "-NOAUTH ...", ":1").
func redisCommand(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

func TestRedis(t *testing.T) {
	r := testenv.Redis(t, nil)
	if got, err := redisCommand(r.Addr, "SET", "k", "v"); got != "+OK" {
		t.Fatalf("SET: %q %v", got, err)
	}
	if got, _ := redisCommand(r.Addr, "CONFIG", "GET", "save"); got != "*2" {
		t.Errorf("CONFIG GET save: %q", got)
	}
	r.Stop()
	if _, err := redisCommand(r.Addr, "PING"); err == nil {
		t.Fatal("PING answered after Stop")
	}
	r.Start()
	if got, err := redisCommand(r.Addr, "PING"); got != "+PONG" {
		t.Fatalf("PING after Start: %q %v", got, err)
	}
	// No persistence: the restart forgot k.
	if got, _ := redisCommand(r.Addr, "EXISTS", "k"); got != ":0" {
		t.Errorf("EXISTS k after a restart without persistence = %q, want :0", got)
	}
	r.Kill()
	r.Start()
	if got, err := redisCommand(r.Addr, "PING"); got != "+PONG" {
		t.Fatalf("PING after Kill and Start: %q %v", got, err)
	}
}

func TestRedisAppendOnlyAndPassword(t *testing.T) {
	r := testenv.Redis(t, &testenv.RedisOptions{Password: "s3cret", AppendOnly: true})
	if !strings.HasPrefix(r.URL, "redis://:s3cret@127.0.0.1:") {
		t.Errorf("URL = %q", r.URL)
	}
	if got, _ := redisCommand(r.Addr, "PING"); !strings.HasPrefix(got, "-NOAUTH") {
		t.Errorf("PING without the password = %q, want -NOAUTH", got)
	}
	// One connection: AUTH, then SET.
	c, err := net.Dial("tcp", r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(c, "*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
	rd := bufio.NewReader(c)
	for _, want := range []string{"+OK\r\n", "+OK\r\n"} {
		if got, err := rd.ReadString('\n'); got != want {
			t.Fatalf("reply %q %v, want %q", got, err, want)
		}
	}
	c.Close()
	r.Kill()
	r.Start()
	c, err = net.Dial("tcp", r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n*2\r\n$6\r\nEXISTS\r\n$1\r\nk\r\n")
	rd = bufio.NewReader(c)
	for _, want := range []string{"+OK\r\n", ":1\r\n"} {
		if got, err := rd.ReadString('\n'); got != want {
			t.Fatalf("after a crash with appendonly: reply %q %v, want %q", got, err, want)
		}
	}
}

func TestHAProxy(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s, via %s", r.URL.Path, r.Header.Get("X-Via"))
	}))
	defer backend.Close()
	port := testenv.FreePort(t)
	testenv.HAProxy(t, fmt.Sprintf(`
global
	maxconn 100
defaults
	mode http
	timeout connect 5s
	timeout client 30s
	timeout server 30s
frontend in
	bind 127.0.0.1:%d
	http-request set-header X-Via haproxy
	default_backend app
backend app
	server one %s
`, port, strings.TrimPrefix(backend.URL, "http://")))
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(body) != "hello from /mcp, via haproxy" {
		t.Errorf("through haproxy: %d %q", res.StatusCode, body)
	}
}

// TestStartTerminate: Start runs a program with its environment until it
// listens; Terminate sends it SIGTERM and reports its exit; Kill and
// Start run it again on the same address.
func TestStartTerminate(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(testenv.FreePort(t)))
	d := testenv.Start(t, exe, nil, []string{listenEnv + "=" + addr}, addr)
	if err := d.Terminate(5 * time.Second); err != nil {
		t.Fatalf("Terminate: %v", err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("still listening after Terminate")
	}
	d.Start()
	d.Kill()
	d.Start()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err != nil {
		t.Fatalf("not listening after Start: %v", err)
	} else {
		c.Close()
	}
}
