package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/identitytest"
	"github.com/conduitmcp/conduit/internal/testenv"
)

// binDir holds the binaries the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "1":
		os.Exit(runChild())
	case "identity":
		if err := identitytest.ServeStdio(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(0)
	}
	var err error
	if binDir, err = os.MkdirTemp("", "conduit-gateway-test"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// conduitBin builds cmd/conduit once per test binary.
var conduitBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "conduit")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/conduitmcp/conduit/cmd/conduit")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build cmd/conduit: %v\n%s", err, out)
	}
	return bin, nil
})

var listeningRE = regexp.MustCompile(`listening on (http://\S+/mcp)`)

// serveHTTP starts conduit serve --http on a free loopback port with the
// configuration config (and env added to its environment) and returns its
// endpoint. t.Cleanup stops it.
func serveHTTP(t *testing.T, config string, env []string, flags ...string) string {
	t.Helper()
	bin, err := conduitBin()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"serve", "--config", path, "--http", "127.0.0.1:0"}, flags...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	found := make(chan string, 1)
	var mu sync.Mutex
	var lines []string
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case url := <-found:
		return url
	case <-time.After(testenv.ReadyTimeout):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("conduit serve did not start listening; stderr:\n%s", strings.Join(lines, "\n"))
	}
	return ""
}

// TestConformanceServer runs the conformance suite's server requirement
// set of 2025-11-25 against the Go SDK's everything-server on its own and
// through conduit serve --http in transparent mode, side by side, in front
// of a stateful and a stateless server: through conduit, every scored
// scenario that the server passes on its own must pass, no check failing.
// (The set of 2026-07-28 is not run: conduit serve offers its
// clients the versions before it; RELIABILITY.md has where it stands.)
func TestConformanceServer(t *testing.T) {
	testenv.Conformance(t) // skips, or fails under CI, without node_modules
	for _, mode := range []string{"stateful", "stateless"} {
		t.Run(mode, func(t *testing.T) {
			upstream := testenv.GoEverything(t)
			if mode == "stateless" {
				upstream = testenv.GoEverythingStateless(t)
			}
			config := fmt.Sprintf(`{"mcpServers": {"everything": {"url": %q}}, "policy": [{"allow": ["*"]}]}`, upstream)
			through := serveHTTP(t, config, nil, "--transparent", "--no-auth")
			compareConformance(t, "2025-11-25", upstream, through, mode == "stateful")
		})
	}
}

// compareConformance runs revision's server requirement set against the
// server alone and through conduit serve; with all, the server alone must
// pass every scored scenario.
func compareConformance(t *testing.T, revision, alone, through string, all bool) {
	runs := map[string]*testenv.ConformanceRun{}
	var mu sync.Mutex
	t.Run("side by side", func(t *testing.T) {
		for name, url := range map[string]string{"alone": alone, "through conduit": through} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				run := testenv.ConformanceRequirements(t, "server", revision, url)
				mu.Lock()
				runs[name] = run
				mu.Unlock()
			})
		}
	})
	a, v := runs["alone"], runs["through conduit"]
	if a == nil || v == nil {
		return
	}
	if !slices.Equal(a.Names(), v.Names()) {
		t.Fatalf("scenarios differ:\nalone:   %v\nthrough: %v", a.Names(), v.Names())
	}
	// A stateless server answers some checks otherwise than conduit
	// serve's sessions do (more of them succeed through conduit): the
	// verdicts are compared, and through conduit no check may fail.
	failed := func(cs []testenv.ConformanceCheck) []string {
		var out []string
		for _, c := range cs {
			if c.Status == "FAILURE" {
				out = append(out, c.ID+": "+c.ErrorMessage)
			}
		}
		return out
	}
	passed := 0
	for _, s := range a.Scored() {
		switch {
		case !a.Verdicts[s] && all:
			t.Errorf("%s: the server alone fails it: %v", s, failed(a.Scenarios[s]))
		case !a.Verdicts[s]:
			t.Logf("%s: the server alone fails it (through conduit it passes: %v)", s, v.Verdicts[s])
		case !v.Verdicts[s] || len(failed(v.Scenarios[s])) > 0:
			t.Errorf("%s: passes alone, fails through conduit serve: %v", s, failed(v.Scenarios[s]))
		default:
			passed++
		}
	}
	for s, why := range a.NotScored {
		if a.Verdicts[s] != v.Verdicts[s] {
			t.Logf("%s (not scored: %s): alone %v, through conduit %v", s, why, a.Verdicts[s], v.Verdicts[s])
		}
	}
	t.Logf("%s: %d of %d scored scenarios pass through conduit serve as they do alone", revision, passed, len(a.Scored()))
}
