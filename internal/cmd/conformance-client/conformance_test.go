package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// clientScenarios are the client scenarios of the pinned suite
// (@modelcontextprotocol/conformance 0.2.0-alpha.12), in its order.
var clientScenarios = []string{
	"initialize",
	"tools_call",
	"elicitation-sep1034-client-defaults",
	"sse-retry",
	"request-metadata",
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
	"auth/authorization-server-migration",
	"auth/iss-supported",
	"auth/iss-not-advertised",
	"auth/iss-supported-missing",
	"auth/iss-wrong-issuer",
	"auth/iss-unexpected",
	"auth/iss-normalized",
	"auth/metadata-issuer-mismatch",
	"auth/client-credentials-jwt",
	"auth/client-credentials-basic",
	"auth/enterprise-managed-authorization",
	"auth/dpop",
	"auth/dpop-nonce",
	"auth/wif-jwt-bearer",
	"sep-2322-client-request-state",
	"http-standard-headers",
	"http-custom-headers",
	"http-invalid-tool-headers",
	"json-schema-ref-no-deref",
	"json-schema-2020-12-preservation",
	"sep-2640-client-no-prefetch",
	"sep-2640-client-verify-digest",
	"sep-2640-client-verify-size",
	"sep-2640-client-verify-frontmatter",
}

// skillScenarios are the skills extension's (SEP-2640), which neither
// requirement set runs: they run alone, as TestSkillScenarios does.
var skillScenarios = []string{
	"sep-2640-client-no-prefetch",
	"sep-2640-client-verify-digest",
	"sep-2640-client-verify-size",
	"sep-2640-client-verify-frontmatter",
}

// revisions are the requirement sets, each run at its revision's wire:
// 2026-07-28 stateless, 2025-11-25 with the initialize handshake.
var revisions = []string{"2026-07-28", "2025-11-25"}

var listedRE = regexp.MustCompile(`(?m)^\s+- (\S+)`)

// TestConformance runs every client scenario of the MCP conformance suite
// against this program: the requirement sets
// of 2026-07-28 and 2025-11-25 (which must pass: exit 0, and no scenario
// failing or warning, scored or not), then, alone, the scenarios neither
// set runs (those of 2025-03-26 and the skills extension's).
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
		t.Fatalf("the suite lists these client scenarios:\n%s\nthis test knows:\n%s", strings.Join(listed, "\n"), strings.Join(clientScenarios, "\n"))
	}
	bin := buildClient(t)
	var mu sync.Mutex
	passed := map[string]bool{}
	pass := func(name string) {
		mu.Lock()
		passed[name] = true
		mu.Unlock()
	}
	for _, rev := range revisions {
		t.Run("requirements "+rev, func(t *testing.T) {
			run := testenv.ConformanceRequirements(t, "client", rev, bin)
			if !run.Passed {
				t.Errorf("client --requirements %s failed:\n%s", rev, run.Output)
			}
			for _, name := range run.Names() {
				if checkScenario(t, name, run.Verdicts[name], run.Scenarios[name]) {
					pass(name)
				}
			}
			t.Logf("%d scenarios (%d scored), %d checks", len(run.Scenarios), len(run.Scored()), run.Checks())
		})
	}
	t.Run("alone", func(t *testing.T) {
		for _, name := range clientScenarios {
			if passed[name] {
				continue
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				res := testenv.ConformanceClient(t, name, bin)
				if !res.Passed {
					t.Errorf("exit %d:\n%s", res.ExitCode, res.Output)
				}
				if checkScenario(t, name, res.Passed, res.Checks) {
					pass(name)
				}
			})
		}
	})
	for _, name := range clientScenarios {
		if !passed[name] {
			t.Errorf("scenario %s did not pass", name)
		}
	}
	t.Logf("%d of the suite's %d client scenarios passed", len(passed), len(clientScenarios))
}

// TestSkillScenarios runs the skills extension's scenarios alone: no
// file read on listing; a SKILL.md whose digest, size or frontmatter is
// not the listing's is refused, and nothing more of its skill is read.
func TestSkillScenarios(t *testing.T) {
	testenv.Conformance(t)
	bin := buildClient(t)
	for _, name := range skillScenarios {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := testenv.ConformanceClient(t, name, bin)
			if !res.Passed {
				t.Errorf("exit %d:\n%s", res.ExitCode, res.Output)
			}
			checkScenario(t, name, res.Passed, res.Checks)
		})
	}
}

// buildClient builds this program into a temporary directory.
func buildClient(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "conformance-client")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// checkScenario reports whether a scenario passed: the suite's verdict,
// no check but a success (or one not applicable), and one success at
// least.
func checkScenario(t *testing.T, name string, verdict bool, checks []testenv.ConformanceCheck) bool {
	t.Helper()
	ok := verdict
	if !verdict {
		t.Errorf("%s: the suite failed it", name)
	}
	succeeded := false
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			succeeded = true
		case "INFO", "SKIPPED":
		default:
			ok = false
			t.Errorf("%s: check %s: %s %s", name, c.ID, c.Status, c.ErrorMessage)
		}
	}
	if !succeeded {
		ok = false
		t.Errorf("%s: no check succeeded", name)
	}
	return ok
}
