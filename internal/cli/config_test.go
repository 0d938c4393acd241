package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// editConfig changes the configuration file at path with edit.
func editConfig(t *testing.T, path string, edit func(cfg map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPolicyWarnings: a policy that names a server the configuration
// does not have stops the command, with every problem on stderr; with
// "strictPolicy": false they are warnings and the command runs.
func TestPolicyWarnings(t *testing.T) {
	t.Parallel()
	config, write, _ := defsConfig(t, "github", "web")
	write("github", defTool("get_issue", "Gets an issue."))
	write("web", defTool("fetch", "Fetches a page."))
	editConfig(t, config, func(cfg map[string]any) {
		cfg["policy"] = []any{
			map[string]any{"deny": []string{"gihtub/*"}},
			map[string]any{"deny": []string{"github/*"}, "tainted": []string{"wbe"}},
			map[string]any{"allow": []string{"*/get_*", "web", "conduit/search_tools"}},
		}
	})
	problems := []string{
		`policy rule 1 (deny gihtub/*): pattern "gihtub/*" names no configured server (did you mean "github"?)`,
		`policy rule 2 (deny github/* (when ...)): tainted "wbe" names no configured server (did you mean "web"?)`,
	}
	code, out, errb := run(t, "servers", "--config", config)
	if code != ExitUsage || out != "" {
		t.Fatalf("servers: exit %d\n%s%s", code, out, errb)
	}
	for _, want := range append(problems, `"strictPolicy": false`) {
		if !strings.Contains(errb, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}

	editConfig(t, config, func(cfg map[string]any) { cfg["strictPolicy"] = false })
	code, out, errb = run(t, "servers", "--config", config)
	if code != ExitOK || !strings.Contains(out, `"status": "up"`) {
		t.Fatalf("servers: exit %d\n%s%s", code, out, errb)
	}
	for _, want := range problems {
		if want = config + ": " + want + "\n"; !strings.Contains(errb, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}
	if n := strings.Count(errb, "names no configured server"); n != 2 {
		t.Errorf("%d warnings:\n%s", n, errb)
	}
}

// setServerEnv sets variables of the env of a server of the
// configuration file at path.
func setServerEnv(t *testing.T, path, server string, env map[string]string) {
	editConfig(t, path, func(cfg map[string]any) {
		e := cfg["mcpServers"].(map[string]any)[server].(map[string]any)["env"].(map[string]any)
		for k, v := range env {
			e[k] = v
		}
	})
}

// TestConfigEnvCommand: ${env:NAME} is read from the environment, a
// variable that is not set stops the command with its name, and a secret
// written in the file is reported without its value.
func TestConfigEnvCommand(t *testing.T) {
	t.Setenv("CONDUIT_TEST_NOTES_KEY", "from-the-environment")
	config, write, _ := defsConfig(t, "notes")
	write("notes", defTool("add", "Adds a note."))
	setServerEnv(t, config, "notes", map[string]string{"NOTES_KEY": "${env:CONDUIT_TEST_NOTES_KEY}", "NOTES_TOKEN": "written-in-the-file"})
	code, out, errb := run(t, "servers", "--config", config)
	if code != ExitOK {
		t.Fatalf("servers: exit %d\n%s%s", code, out, errb)
	}
	want := config + `: server "notes": env "NOTES_TOKEN" is written in the file: keep the secret in an environment variable and write ${env:NAME} in its place` + "\n"
	if !strings.Contains(errb, want) || strings.Contains(errb, "written-in-the-file") || strings.Contains(errb, "from-the-environment") {
		t.Errorf("stderr:\n%s", errb)
	}

	setServerEnv(t, config, "notes", map[string]string{"NOTES_KEY": "${env:CONDUIT_TEST_UNSET}"})
	code, out, errb = run(t, "servers", "--config", config)
	if code != ExitUsage || !strings.Contains(errb, `server "notes": env: "NOTES_KEY": ${env:CONDUIT_TEST_UNSET} is not set`) {
		t.Errorf("unset: exit %d\n%s%s", code, out, errb)
	}
}
