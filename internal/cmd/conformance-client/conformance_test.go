package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// TestConformance runs the MCP conformance suite's client scenarios
// against this program.
func TestConformance(t *testing.T) {
	testenv.Conformance(t) // skips, or fails under CI, without node_modules
	bin := filepath.Join(t.TempDir(), "conformance-client")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, name := range []string{"initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := testenv.ConformanceClient(t, name, bin)
			if !res.Passed {
				t.Fatalf("scenario %s failed (exit %d):\n%s", name, res.ExitCode, res.Output)
			}
			for _, c := range res.Checks {
				if c.Status != "SUCCESS" && c.Status != "INFO" {
					t.Errorf("check %s: %s %s", c.ID, c.Status, c.ErrorMessage)
				}
			}
			t.Logf("%d checks passed", len(res.Checks))
		})
	}
}
