package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// GoEverythingPkg is the Go SDK's conformance server: every feature the
// suite's server scenarios test, in the module cache with the SDK.
const GoEverythingPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// ConformanceServerResult is the outcome of the suite's server scenarios
// against one server.
type ConformanceServerResult struct {
	// Passed is whether the suite passed the server (it exited 0).
	Passed bool
	// Output is what the suite printed, ANSI colours removed.
	Output string
	// Scenarios holds each scenario's checks, by scenario name.
	Scenarios map[string][]ConformanceCheck
}

// Names returns the scenarios run, sorted.
func (r *ConformanceServerResult) Names() []string {
	var out []string
	for n := range r.Scenarios {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Checks counts the checks of every scenario.
func (r *ConformanceServerResult) Checks() int {
	n := 0
	for _, c := range r.Scenarios {
		n += len(c)
	}
	return n
}

var serverResultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$`)

// ConformanceServer runs the conformance suite's active server scenarios
// (conformance server --url URL) against the MCP endpoint url, one after
// the other (the whole suite takes a few seconds). It fails t only when
// the suite cannot be run; failed scenarios are in the result.
func ConformanceServer(t testing.TB, url string) *ConformanceServerResult {
	t.Helper()
	node, script := Conformance(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*ConformanceTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, "server", "--url", url, "-o", dir)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	setProcessGroup(cmd)
	cmd.Cancel = func() error {
		signalGroup(cmd, true)
		return nil
	}
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	signalGroup(cmd, true)
	res := &ConformanceServerResult{Output: ansiRE.ReplaceAllString(out.String(), ""), Scenarios: map[string][]ConformanceCheck{}}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("testenv: the conformance server scenarios did not finish within %v; output:\n%s", 2*ConformanceTimeout, res.Output)
	case errors.As(err, &exit):
	case err != nil:
		t.Fatalf("testenv: running the conformance suite: %v", err)
	default:
		res.Passed = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		m := serverResultDir.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		var checks []ConformanceCheck
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("testenv: %s: %v", e.Name(), err)
		}
		res.Scenarios[m[1]] = checks
	}
	return res
}

// BuildGo builds the Go package pkg (a path in the root module's build
// list, such as [GoEverythingPkg]) into a temporary directory and returns
// the binary's path. Building from the module cache needs no network.
func BuildGo(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testenv: go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// GoEverything builds and starts the Go SDK's conformance server in
// stateful Streamable HTTP mode (-stateless=false) on a free loopback
// port, and returns its endpoint, http://127.0.0.1:<port>/mcp, once it
// accepts connections. t.Cleanup stops it.
func GoEverything(t testing.TB) (url string) {
	t.Helper()
	bin := BuildGo(t, GoEverythingPkg)
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("testenv: no free loopback port: %v", err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		p, err := startServer(bin, []string{"-http", addr, "-stateless=false"}, nil)
		if err != nil {
			t.Fatalf("testenv: starting the Go everything-server: %v", err)
		}
		if lastErr = p.waitFor(addr, nil); lastErr == nil {
			t.Cleanup(p.stop)
			return "http://" + addr + "/mcp"
		}
		p.stop()
		if !strings.Contains(lastErr.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("testenv: the Go everything-server did not start: %v", lastErr)
	return ""
}
