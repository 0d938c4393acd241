package testenv

import (
	"io/fs"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// GoEverythingPkg is the Go SDK's conformance server: every feature the
// suite's server scenarios test, in the module cache with the SDK.
const GoEverythingPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// A ConformanceRun is the outcome of one run of a requirement set
// (--requirements REVISION): every scenario the revision requires, and
// those it runs without scoring them.
type ConformanceRun struct {
	// Passed is whether the suite passed the run (it exited 0): it fails
	// when a scored scenario fails. A warning does not fail it.
	Passed bool
	// Output is what the suite printed, ANSI colours removed.
	Output string
	// Scenarios holds each scenario's checks, by scenario name.
	Scenarios map[string][]ConformanceCheck
	// Verdicts is the suite's verdict on each scenario in its summary:
	// true for one that passed (no failure and no warning).
	Verdicts map[string]bool
	// NotScored are the scenarios run but not scored, by reason
	// (extension, pending, added-after-release).
	NotScored map[string]string
}

// Names returns the scenarios run, sorted.
func (r *ConformanceRun) Names() []string {
	var out []string
	for n := range r.Scenarios {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Scored returns the scenarios the revision scores, sorted.
func (r *ConformanceRun) Scored() []string {
	return slices.DeleteFunc(r.Names(), func(n string) bool { _, ok := r.NotScored[n]; return ok })
}

// Checks counts the checks of every scenario.
func (r *ConformanceRun) Checks() int {
	n := 0
	for _, c := range r.Scenarios {
		n += len(c)
	}
	return n
}

var (
	// A scenario's directory: <name>-<time>, with "server-" in front for
	// the server leg; auth/x makes auth/x-<time>.
	resultDirRE = regexp.MustCompile(`^(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$`)
	verdictRE   = regexp.MustCompile(`(?m)^\s*([✓✗]) (\S+?):? (?:\d+ passed|\()`)
	notScoredRE = regexp.MustCompile(`(?m)^\s+[✓✗] (\S+) \(([^)]+)\)$`)
)

// ConformanceRequirements runs the scenarios of the suite's requirement set
// revision ("2026-07-28", "2025-11-25") on leg "client", against the client
// program target (as [ConformanceClient] runs one), or on leg "server",
// against the MCP endpoint target. The suite runs a client leg's scenarios
// in parallel and a server leg's one after the other. It fails t only when
// the suite cannot be run; failed scenarios are in the result.
func ConformanceRequirements(t testing.TB, leg, revision, target string) *ConformanceRun {
	t.Helper()
	run := runSuite(t, "the conformance "+leg+" requirements "+revision, 3*ConformanceTimeout, leg, legTarget(leg), target, "--requirements", revision)
	dir := run.dir
	res := &ConformanceRun{Output: run.output, Passed: run.exitCode == 0,
		Scenarios: map[string][]ConformanceCheck{}, Verdicts: map[string]bool{}, NotScored: map[string]string{}}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return nil
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(path))
		m := resultDirRE.FindStringSubmatch(filepath.ToSlash(rel))
		if m == nil {
			return nil
		}
		name := m[1]
		if leg == "server" {
			name = strings.TrimPrefix(name, "server-")
		}
		res.Scenarios[name] = readChecks(t, path)
		return nil
	})
	summary, notScored, _ := strings.Cut(res.Output[max(strings.LastIndex(res.Output, "SUMMARY ==="), 0):], "Not scored for")
	for _, m := range verdictRE.FindAllStringSubmatch(summary, -1) {
		res.Verdicts[m[2]] = m[1] == "✓"
	}
	for _, m := range notScoredRE.FindAllStringSubmatch(notScored, -1) {
		res.NotScored[m[1]] = m[2]
	}
	if len(res.Scenarios) == 0 {
		t.Fatalf("testenv: the conformance %s requirements %s ran no scenario; output:\n%s", leg, revision, res.Output)
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
	return goEverything(t, false)
}

// GoEverythingStateless is [GoEverything] in stateless mode, the server's
// default: protocol 2026-07-28 without sessions, and the older versions
// without a session to send requests of its own on.
func GoEverythingStateless(t testing.TB) (url string) {
	t.Helper()
	return goEverything(t, true)
}

func goEverything(t testing.TB, stateless bool) (url string) {
	t.Helper()
	bin := BuildGo(t, GoEverythingPkg)
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatalf("testenv: no free loopback port: %v", err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		p, err := startServer(bin, []string{"-http", addr, "-stateless=" + strconv.FormatBool(stateless)}, nil)
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
