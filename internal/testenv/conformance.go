package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ConformanceTimeout bounds one run of [ConformanceClient]: the suite's own
// client time-out (30 s) plus its start-up.
const ConformanceTimeout = 60 * time.Second

// A ConformanceCheck is one check the conformance suite recorded, as in its
// checks.json.
type ConformanceCheck struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// A ConformanceResult is the outcome of one client scenario.
type ConformanceResult struct {
	// Passed is whether the suite passed the scenario (it exited 0): no check
	// failed or warned, and the client exited 0 in time.
	Passed bool
	// ExitCode is the suite's exit status.
	ExitCode int
	// Output is what the suite printed, ANSI colours removed.
	Output string
	// Checks are the checks the suite recorded, INFO included.
	Checks []ConformanceCheck
}

// Check returns the check with the given id, or nil.
func (r *ConformanceResult) Check(id string) *ConformanceCheck {
	for i := range r.Checks {
		if r.Checks[i].ID == id {
			return &r.Checks[i]
		}
	}
	return nil
}

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// ConformanceClient runs the conformance suite's client scenario against the
// client program clientCommand, which the suite runs through a shell with
// the test server's URL appended as the last argument and
// MCP_CONFORMANCE_SCENARIO=scenario in its environment (see the package
// doc). clientCommand is split on spaces by the suite, so its words must not
// contain spaces. It fails t only when the suite cannot be run at all; a
// failed scenario is reported in the result, whose Output is worth logging.
func ConformanceClient(t testing.TB, scenario, clientCommand string) *ConformanceResult {
	t.Helper()
	return conformanceScenario(t, "client", scenario, clientCommand)
}

// ConformanceServer runs the conformance suite's server scenario against
// the MCP endpoint url, as [ConformanceClient] runs a client scenario. It
// runs a scenario outside every requirement set too (an extension's).
func ConformanceServer(t testing.TB, scenario, url string) *ConformanceResult {
	t.Helper()
	return conformanceScenario(t, "server", scenario, url)
}

// conformanceScenario runs one scenario of leg ("client", "server")
// against target (see [legTarget]).
func conformanceScenario(t testing.TB, leg, scenario, target string) *ConformanceResult {
	t.Helper()
	run := runSuite(t, "conformance scenario "+scenario, ConformanceTimeout, leg, legTarget(leg), target, "--scenario", scenario)
	res := &ConformanceResult{Output: run.output, ExitCode: run.exitCode, Passed: run.exitCode == 0}
	// The suite writes DIR/<scenario>-<time>/checks.json, and a scenario
	// named auth/x makes that DIR/auth/x-<time>/checks.json.
	var matches []string
	filepath.WalkDir(run.dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "checks.json" {
			matches = append(matches, path)
		}
		return nil
	})
	if len(matches) != 1 {
		if strings.Contains(res.Output, "Unknown scenario") {
			t.Fatalf("testenv: conformance suite has no %s scenario %q; output:\n%s", leg, scenario, res.Output)
		}
		t.Fatalf("testenv: conformance suite wrote %d checks.json files; output:\n%s", len(matches), res.Output)
	}
	res.Checks = readChecks(t, matches[0])
	return res
}

// legTarget is the flag that names a leg's target: the client program's
// command, or the server's URL.
func legTarget(leg string) string {
	if leg == "server" {
		return "--url"
	}
	return "--command"
}

// suiteRun is one run of the conformance suite.
type suiteRun struct {
	dir      string // where it wrote its results
	output   string // what it printed, colours removed
	exitCode int
}

// runSuite runs the conformance suite with args, writing into a directory
// of its own, for at most timeout. It fails t when the suite cannot run or
// does not end in time; what names the run then.
func runSuite(t testing.TB, what string, timeout time.Duration, args ...string) suiteRun {
	t.Helper()
	node, script := Conformance(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append(append([]string{script}, args...), "-o", dir)...)
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
	// The suite ends the client itself; this reaches anything left over.
	signalGroup(cmd, true)
	run := suiteRun{dir: dir, output: ansiRE.ReplaceAllString(out.String(), "")}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("testenv: %s did not finish within %v; output:\n%s", what, timeout, run.output)
	case errors.As(err, &exit):
		run.exitCode = exit.ExitCode()
	case err != nil:
		t.Fatalf("testenv: running the conformance suite: %v", err)
	}
	return run
}

// readChecks reads a checks.json the suite wrote.
func readChecks(t testing.TB, path string) []ConformanceCheck {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	var checks []ConformanceCheck
	if err := json.Unmarshal(data, &checks); err != nil {
		t.Fatalf("testenv: %s: %v", path, err)
	}
	return checks
}
