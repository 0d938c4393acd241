package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// clientScenarios are the client scenarios of the pinned suite
// (@modelcontextprotocol/conformance 0.1.16), in its order: the four core
// ones and the 22 about authorization.
var clientScenarios = []string{
	"initialize",
	"tools_call",
	"elicitation-sep1034-client-defaults",
	"sse-retry",
	"auth/metadata-default",
	"auth/metadata-var1",
	"auth/metadata-var2",
	"auth/metadata-var3",
	"auth/basic-cimd",
	"auth/scope-from-www-authenticate",
	"auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined",
	"auth/scope-step-up",
	"auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic",
	"auth/token-endpoint-auth-post",
	"auth/token-endpoint-auth-none",
	"auth/pre-registration",
	"auth/2025-03-26-oauth-metadata-backcompat",
	"auth/2025-03-26-oauth-endpoint-fallback",
	"auth/resource-mismatch",
	"auth/offline-access-scope",
	"auth/offline-access-not-supported",
	"auth/client-credentials-jwt",
	"auth/client-credentials-basic",
	"auth/cross-app-access-complete-flow",
}

var listedRE = regexp.MustCompile(`(?m)^\s+- (\S+)`)

// TestConformance runs every client scenario of the MCP conformance suite
// against this program; each scenario has its own servers on their own
// ports, so they run in parallel.
func TestConformance(t *testing.T) {
	node, script := testenv.Conformance(t) // skips, or fails under CI, without node_modules
	out, err := exec.Command(node, script, "list", "--client").CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list --client: %v\n%s", err, out)
	}
	var listed []string
	for _, m := range listedRE.FindAllStringSubmatch(string(out), -1) {
		listed = append(listed, m[1])
	}
	if !slices.Equal(listed, clientScenarios) {
		t.Fatalf("the suite lists these client scenarios:\n%s\nthis test runs:\n%s", strings.Join(listed, "\n"), strings.Join(clientScenarios, "\n"))
	}
	bin := filepath.Join(t.TempDir(), "conformance-client")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, name := range clientScenarios {
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
			if len(res.Checks) == 0 {
				t.Fatalf("scenario %s recorded no check", name)
			}
			t.Logf("%d checks passed", len(res.Checks))
		})
	}
}
