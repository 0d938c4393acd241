package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// setPolicy replaces the policy of the configuration file at path.
func setPolicy(t *testing.T, path string, policy []any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["policy"] = policy
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPolicyWarnings: a policy that names a server the configuration
// does not have is reported on stderr, and the command runs.
func TestPolicyWarnings(t *testing.T) {
	t.Parallel()
	config, write, _ := defsConfig(t, "github", "web")
	write("github", defTool("get_issue", "Gets an issue."))
	write("web", defTool("fetch", "Fetches a page."))
	setPolicy(t, config, []any{
		map[string]any{"deny": []string{"gihtub/*"}},
		map[string]any{"deny": []string{"github/*"}, "tainted": []string{"wbe"}},
		map[string]any{"allow": []string{"*/get_*", "web", "conduit/search_tools"}},
	})
	code, out, errb := run(t, "servers", "--config", config)
	if code != ExitOK || !strings.Contains(out, `"status": "up"`) {
		t.Fatalf("servers: exit %d\n%s%s", code, out, errb)
	}
	for _, want := range []string{
		config + `: policy rule 1 (deny gihtub/*): pattern "gihtub/*" names no configured server (did you mean "github"?)` + "\n",
		config + `: policy rule 2 (deny github/* (when ...)): tainted "wbe" names no configured server (did you mean "web"?)` + "\n",
	} {
		if !strings.Contains(errb, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}
	if n := strings.Count(errb, "names no configured server"); n != 2 {
		t.Errorf("%d warnings:\n%s", n, errb)
	}
}
