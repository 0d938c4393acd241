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
	return conformanceScenario(t, "client", scenario, "--command", clientCommand)
}

// ConformanceServer runs the conformance suite's server scenario against
// the MCP endpoint url, as [ConformanceClient] runs a client scenario. It
// runs a scenario outside every requirement set too (an extension's).
func ConformanceServer(t testing.TB, scenario, url string) *ConformanceResult {
	t.Helper()
	return conformanceScenario(t, "server", scenario, "--url", url)
}

// conformanceScenario runs one scenario of leg ("client", "server") with
// the leg's target flag and value.
func conformanceScenario(t testing.TB, leg, scenario, flag, target string) *ConformanceResult {
	t.Helper()
	node, script := Conformance(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), ConformanceTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, leg,
		flag, target, "--scenario", scenario, "-o", dir)
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
	res := &ConformanceResult{Output: ansiRE.ReplaceAllString(out.String(), "")}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("testenv: conformance scenario %s did not finish within %v; output:\n%s", scenario, ConformanceTimeout, res.Output)
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	case err != nil:
		t.Fatalf("testenv: running the conformance suite: %v", err)
	}
	res.Passed = res.ExitCode == 0
	// The suite writes DIR/<scenario>-<time>/checks.json, and a scenario
	// named auth/x makes that DIR/auth/x-<time>/checks.json.
	var matches []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
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
	data, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if err := json.Unmarshal(data, &res.Checks); err != nil {
		t.Fatalf("testenv: %s: %v", matches[0], err)
	}
	return res
}
