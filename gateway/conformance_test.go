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

	"github.com/conduitmcp/conduit/internal/testenv"
)

// The conformance suite's active server scenarios (0.1.16): 30 scenarios,
// 40 checks, which the Go SDK's everything-server passes on its own.
const (
	wantScenarios = 30
	wantChecks    = 40
)

// binDir holds the binaries the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runChild())
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

// TestConformanceServer runs the conformance suite's server scenarios
// against the Go SDK's everything-server on its own and through conduit
// serve --http in transparent mode, side by side: through conduit every
// scenario must pass as it does on its own.
func TestConformanceServer(t *testing.T) {
	testenv.Conformance(t) // skips, or fails under CI, without node_modules
	upstream := testenv.GoEverything(t)
	config := fmt.Sprintf(`{"mcpServers": {"everything": {"url": %q}}, "policy": [{"allow": ["*"]}]}`, upstream)
	through := serveHTTP(t, config, nil, "--transparent", "--no-auth")

	results := map[string]*testenv.ConformanceServerResult{}
	var mu sync.Mutex
	t.Run("side by side", func(t *testing.T) {
		for name, url := range map[string]string{"everything-server": upstream, "conduit serve": through} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				res := testenv.ConformanceServer(t, url)
				mu.Lock()
				results[name] = res
				mu.Unlock()
				if !res.Passed {
					t.Errorf("the suite failed against %s:\n%s", name, res.Output)
				}
				for _, scenario := range res.Names() {
					for _, c := range res.Scenarios[scenario] {
						if c.Status != "SUCCESS" && c.Status != "INFO" {
							t.Errorf("%s: check %s: %s %s", scenario, c.ID, c.Status, c.ErrorMessage)
						}
					}
				}
				if n := len(res.Scenarios); n != wantScenarios {
					t.Errorf("%d scenarios ran, want %d: %v", n, wantScenarios, res.Names())
				}
				if n := res.Checks(); n != wantChecks {
					t.Errorf("%d checks, want %d", n, wantChecks)
				}
			})
		}
	})
	alone, via := results["everything-server"], results["conduit serve"]
	if alone == nil || via == nil {
		return
	}
	if !slices.Equal(alone.Names(), via.Names()) {
		t.Errorf("scenarios differ:\nalone:   %v\nthrough: %v", alone.Names(), via.Names())
	}
	for _, s := range alone.Names() {
		ids := func(cs []testenv.ConformanceCheck) []string {
			var out []string
			for _, c := range cs {
				out = append(out, c.ID+"="+c.Status)
			}
			slices.Sort(out)
			return out
		}
		if a, v := ids(alone.Scenarios[s]), ids(via.Scenarios[s]); !slices.Equal(a, v) {
			t.Errorf("%s: checks differ:\nalone:   %v\nthrough: %v", s, a, v)
		}
	}
}
