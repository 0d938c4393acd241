package gateway_test

import (
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// skillScenarios are the suite's server scenarios of the skills extension.
// They are in no revision's requirement set, so they run by name.
var skillScenarios = []string{"sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory"}

// TestConformanceSkills runs the conformance suite's skills scenarios
// against conduit serve in front of the conformance backend, whose skills
// conduit passes on: each must pass, no check failing or skipped. The
// requirement set of 2026-07-28 through the same serve is
// TestConformanceTasks'.
func TestConformanceSkills(t *testing.T) {
	testenv.Conformance(t) // skips, or fails under CI, without node_modules
	url := serveHTTP(t, tasksConfig(t, ""), nil, "--transparent", "--no-auth")
	checks := 0
	for _, name := range skillScenarios {
		res := testenv.ConformanceServer(t, name, url)
		var bad []string
		for _, c := range res.Checks {
			if c.Status == "FAILURE" || c.Status == "SKIPPED" || c.Status == "WARNING" {
				bad = append(bad, c.Status+" "+c.ID+": "+c.ErrorMessage)
			}
		}
		if !res.Passed || len(bad) > 0 || len(res.Checks) == 0 {
			t.Errorf("%s through conduit serve: %s\n%s", name, strings.Join(bad, "\n"), res.Output)
		}
		checks += len(res.Checks)
	}
	t.Logf("%d skills scenarios, %d checks, pass through conduit serve", len(skillScenarios), checks)
}
