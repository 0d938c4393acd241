package gateway_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/pins"
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

// TestSkillsPolicyThroughServe: what a principal's policy does not allow
// of skills, conduit serve neither lists nor fetches. The careless case
// first: alice's rules name a tool and no skill, so she sees no skill
// and reads none. bob may load pdf-processing only: release-notes is
// neither listed nor answered, and a URI outside the manifest is refused.
func TestSkillsPolicyThroughServe(t *testing.T) {
	bin := testenv.BuildGo(t, backendPkg)
	config := fmt.Sprintf(`{"mcpServers": {"backend": {"command": %q}},
		"policy": [{"allow": ["backend/greet"]},
			{"allow": ["backend/skill:pdf-processing", "backend/skill://pdf-processing/*"], "principal": ["bob"]}],
		"serve": {"tokens": [{"principal": "alice", "env": "T_ALICE"}, {"principal": "bob", "env": "T_BOB"}]}}`, bin)
	url := serveHTTP(t, config, []string{"T_ALICE=" + aliceToken, "T_BOB=" + bobToken}, "--transparent")
	const skillMD = "skill://pdf-processing/SKILL.md"

	names := func(token string) []string {
		a := rpc(t, url, token, "skills/list", nil, true)
		if a.Error != nil {
			t.Fatalf("skills/list: %+v", a.Error)
		}
		var out []string
		list, _ := a.Result["skills"].([]any)
		for _, e := range list {
			out = append(out, e.(map[string]any)["uri"].(string))
		}
		return out
	}
	refused := func(who, token, method string, params map[string]any) {
		t.Helper()
		if a := rpc(t, url, token, method, params, true); a.Error == nil || a.Error.Code != -32602 {
			t.Errorf("%s's %s %v = %+v %+v, want -32602", who, method, params["uri"], a, a.Error)
		}
	}

	if got := names(aliceToken); len(got) != 0 {
		t.Errorf("alice, allowed no skill, is listed %v", got)
	}
	refused("alice", aliceToken, "skills/get", map[string]any{"uri": skillMD})
	refused("alice", aliceToken, "resources/read", map[string]any{"uri": skillMD})
	refused("alice", aliceToken, "resources/directory/read", map[string]any{"uri": "skill://pdf-processing"})

	if got := names(bobToken); strings.Join(got, " ") != skillMD {
		t.Errorf("bob is listed %v, want only %s", got, skillMD)
	}
	if a := rpc(t, url, bobToken, "skills/get", map[string]any{"uri": skillMD}, true); a.Error != nil {
		t.Errorf("bob's skills/get: %+v", a.Error)
	}
	read := rpc(t, url, bobToken, "resources/read", map[string]any{"uri": skillMD}, true)
	if c, _ := read.Result["contents"].([]any); read.Error != nil || len(c) != 1 || !strings.Contains(c[0].(map[string]any)["text"].(string), "name: pdf-processing") {
		t.Errorf("bob's read of SKILL.md = %+v %+v", read, read.Error)
	}
	dir := rpc(t, url, bobToken, "resources/directory/read", map[string]any{"uri": "skill://pdf-processing"}, true)
	if r, _ := dir.Result["resources"].([]any); dir.Error != nil || len(r) != 2 {
		t.Errorf("bob's directory read = %+v, want SKILL.md and references", dir)
	}
	refused("bob", bobToken, "skills/get", map[string]any{"uri": "skill://release-notes/SKILL.md"})
	refused("bob", bobToken, "resources/read", map[string]any{"uri": "skill://release-notes/SKILL.md"})
	refused("bob", bobToken, "resources/read", map[string]any{"uri": "skill://pdf-processing/secret.md"})
	refused("bob", bobToken, "resources/directory/read", map[string]any{"uri": "skill://release-notes"})
}

// TestSkillPinsThroughServe: with a lock file, conduit serve passes on a
// skill's files only while the skill is as pinned. conduit pin pins the
// backend's skills; a lock whose pin of pdf-processing is another digest
// (the skill changed after review) refuses its read, nothing passed on.
func TestSkillPinsThroughServe(t *testing.T) {
	bin := testenv.BuildGo(t, backendPkg)
	conduit, err := conduitBin()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	config := fmt.Sprintf(`{"mcpServers": {"backend": {"command": %q}}, "policy": [{"allow": ["*"]}]}`, bin)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	pin := exec.Command(conduit, "pin", "--config", path)
	pin.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	if out, err := pin.CombinedOutput(); err != nil {
		t.Fatalf("conduit pin: %v\n%s", err, out)
	}
	lock, err := pins.Load(pins.LockPath(path))
	if err != nil {
		t.Fatal(err)
	}
	pinned, ok := lock.SkillDigest("backend", "pdf-processing")
	if !ok {
		t.Fatalf("conduit pin did not pin the skill: %s", pins.LockPath(path))
	}
	const skillMD = "skill://pdf-processing/SKILL.md"
	read := func() rpcAnswer {
		url := serveHTTP(t, config, nil, "--transparent", "--no-auth", "--config", path)
		return rpc(t, url, "", "resources/read", map[string]any{"uri": skillMD}, true)
	}
	if a := read(); a.Error != nil {
		t.Fatalf("the pinned skill's read: %+v", a.Error)
	}
	if err := lock.PinSkill("backend", "pdf-processing", "sha256:"+strings.Repeat("0", 64)); err != nil {
		t.Fatal(err)
	}
	if err := lock.Save(pins.LockPath(path)); err != nil {
		t.Fatal(err)
	}
	if a := read(); a.Error == nil || !strings.Contains(a.Error.Message, "changed since it was pinned") {
		t.Errorf("a skill not as pinned (%s) was read: %+v %+v", pinned, a, a.Error)
	}
}
