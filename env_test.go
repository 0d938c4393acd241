package conduit

// Tests of a stdio child's environment: an allowlist of this process's,
// what InheritEnv names, its own Env and its principal's, and nothing else.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// childEnviron asks the child for its whole environment (tool environ of
// the basic child) as principal p ("" for none).
func childEnviron(t *testing.T, h *Hub, tool, p string) map[string]string {
	t.Helper()
	var opts *CallOptions
	if p != "" {
		opts = &CallOptions{Principal: p}
	}
	res, err := h.CallTool(context.Background(), tool, nil, opts)
	if err != nil {
		t.Fatalf("%s as %q: %v", tool, p, err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(resultText(res), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// noneOf fails t for each of secrets that the child's environment holds,
// by name or in any value.
func noneOf(t *testing.T, who string, env map[string]string, secrets map[string]string) {
	t.Helper()
	for name, secret := range secrets {
		if _, ok := env[name]; ok {
			t.Errorf("%s's child has %s", who, name)
		}
		for k, v := range env {
			if strings.Contains(v, secret) {
				t.Errorf("%s's child has the value of %s in %s", who, name, k)
			}
		}
	}
}

// What a careless configuration gives: a server with no env settings
// started while this process holds secrets. The child sees the allowlist,
// its own env and what inheritEnv names; no secret.
func TestChildEnvironment(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY":            "sk-test-openai-key-0123456789",
		"CONDUIT_STATE_KEY":         "state-key-0123456789abcdef0123456789",
		"TOK_ALICE":                 "alice-serve-token-0123456789",
		"CONDUIT_TEST_SECRET_OTHER": "other-secret-0123456789",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("LANG", "de_DE.UTF-8")
	t.Setenv("LC_CTYPE", "de_DE.UTF-8")
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CONDUIT_TEST_NAMED", "named-by-inheritEnv")
	t.Setenv("CONDUIT_TEST_OVERRIDDEN", "this process's")
	// A shell's exported function is no value for a child (the SDK's rule).
	t.Setenv("SHELL", "() { echo pwned; }")

	kid, _ := childServer(t, "kid", "basic")
	kid.Env["CONDUIT_TEST_OWN"] = "its own"
	kid.Env["CONDUIT_TEST_OVERRIDDEN"] = "the server's"
	kid.InheritEnv = []string{"CONDUIT_TEST_NAMED", "CONDUIT_TEST_OVERRIDDEN", "CONDUIT_TEST_NOT_SET"}
	plain, _ := childServer(t, "plain", "basic")
	h := newHub(t, []Server{kid, plain}, &Options{Policy: NewPolicy(Allow("*"))})

	env := childEnviron(t, h, "kid__environ", "")
	noneOf(t, "kid", env, secrets)
	for k, want := range map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"), "LANG": "de_DE.UTF-8", "LC_CTYPE": "de_DE.UTF-8",
		"TMPDIR": os.Getenv("TMPDIR"), "CONDUIT_TEST_OWN": "its own", "CONDUIT_TEST_NAMED": "named-by-inheritEnv",
		"CONDUIT_TEST_OVERRIDDEN": "the server's",
	} {
		if got, ok := env[k]; !ok || got != want {
			t.Errorf("kid's %s = %q (set %v), want %q", k, got, ok, want)
		}
	}
	for _, k := range []string{"SHELL", "CONDUIT_TEST_NOT_SET"} {
		if v, ok := env[k]; ok {
			t.Errorf("kid has %s=%q", k, v)
		}
	}
	// Every variable the child has is accounted for.
	for k := range env {
		if !inheritedByDefault(k) && !slices.Contains(kid.InheritEnv, k) && kid.Env[k] == "" {
			t.Errorf("kid has %s, which neither the allowlist, InheritEnv nor Env gives", k)
		}
	}

	env = childEnviron(t, h, "plain__environ", "")
	noneOf(t, "plain", env, secrets)
	if _, ok := env["CONDUIT_TEST_NAMED"]; ok {
		t.Error("plain has CONDUIT_TEST_NAMED, which only kid's inheritEnv names")
	}
}

// Under "identity": "principal", started from a configuration file as
// conduit serve starts it: alice's child has her credential, never
// bob's, nor the source variables of either, nor the serve tokens, nor
// the state key; a shared server's child has none of them.
func TestChildEnvironmentPrincipals(t *testing.T) {
	secrets := map[string]string{
		"ALICE_SECRET":      "alice-credential-0123456789",
		"BOB_SECRET":        "bob-credential-0123456789",
		"TOK_ALICE":         "alice-gateway-token-0123456789",
		"TOK_BOB":           "bob-gateway-token-0123456789",
		"CONDUIT_STATE_KEY": "state-key-0123456789abcdef0123456789",
		"OPENAI_API_KEY":    "sk-test-openai-key-0123456789",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := fmt.Sprintf(`"command": %q, "env": {%q: "basic", "GORACE": "atexit_sleep_ms=0"}`, exe, childModeEnv)
	config := `{"mcpServers": {
		"own": {` + child + `, "identity": "principal", "inheritEnv": ["TOK_ALICE_NOT_SET"], "principals": {
			"alice": {"env": {"GH_TOKEN": "${env:ALICE_SECRET}"}},
			"bob":   {"env": {"GH_TOKEN": "${env:BOB_SECRET}", "BOB_ONLY": "${env:BOB_SECRET}"}}}},
		"shared": {` + child + `}},
		"serve": {"tokens": [{"principal": "alice", "env": "TOK_ALICE"}, {"principal": "bob", "env": "TOK_BOB"}]}}`
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	h := newHub(t, cfg.Servers, &Options{Policy: NewPolicy(Allow("*"))})

	alice := childEnviron(t, h, "own__environ", "alice")
	if alice["GH_TOKEN"] != secrets["ALICE_SECRET"] {
		t.Errorf("alice's GH_TOKEN = %q", alice["GH_TOKEN"])
	}
	others := maps.Clone(secrets)
	delete(others, "ALICE_SECRET")
	noneOf(t, "alice", alice, others)
	if _, ok := alice["ALICE_SECRET"]; ok {
		t.Error("alice's child has ALICE_SECRET, the source of her ${env:}")
	}
	if _, ok := alice["BOB_ONLY"]; ok {
		t.Error("alice's child has BOB_ONLY, a variable only bob's env sets")
	}

	bob := childEnviron(t, h, "own__environ", "bob")
	if bob["GH_TOKEN"] != secrets["BOB_SECRET"] || bob["BOB_ONLY"] != secrets["BOB_SECRET"] {
		t.Errorf("bob's GH_TOKEN = %q, BOB_ONLY = %q", bob["GH_TOKEN"], bob["BOB_ONLY"])
	}
	others = maps.Clone(secrets)
	delete(others, "BOB_SECRET")
	noneOf(t, "bob", bob, others)

	noneOf(t, "the shared server", childEnviron(t, h, "shared__environ", "alice"), secrets)
}

// inheritEnv in mcp.json: names, kept as written (never expanded); ${env:}
// in the server's env is read as before; a url server has no environment.
func TestConfigInheritEnv(t *testing.T) {
	env := envOf(map[string]string{"NOTES_DB": "/var/notes.db", "AWS_PROFILE": "dev"})
	cfg, err := parseConfig([]byte(`{"mcpServers": {
		"notes": {"command": "notes-server", "env": {"DB": "${env:NOTES_DB}"}, "inheritEnv": ["AWS_PROFILE", "KUBECONFIG", "${env:NOTES_DB}"]},
		"bare":  {"command": "x"}
	}}`), env)
	if err == nil || !strings.Contains(err.Error(), "not ${...} references") {
		t.Fatalf("a ${env:} in inheritEnv, which holds names: %v", err)
	}
	cfg, err = parseConfig([]byte(`{"mcpServers": {
		"notes": {"command": "notes-server", "env": {"DB": "${env:NOTES_DB}"}, "inheritEnv": ["AWS_PROFILE", "KUBECONFIG"]},
		"bare":  {"command": "x"}
	}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	notes, bare := cfg.Servers[0], cfg.Servers[1]
	if !slices.Equal(notes.InheritEnv, []string{"AWS_PROFILE", "KUBECONFIG"}) || notes.Env["DB"] != "/var/notes.db" {
		t.Errorf("notes: inheritEnv %q, env %q", notes.InheritEnv, notes.Env)
	}
	if bare.InheritEnv != nil {
		t.Errorf("bare: inheritEnv %q", bare.InheritEnv)
	}
	for _, tt := range []struct{ config, want string }{
		{`{"mcpServers": {"a": {"url": "http://x", "inheritEnv": ["HOME"]}}}`, `"inheritEnv" and "cwd" are for a "command"`},
		{`{"mcpServers": {"a": {"command": "x", "inheritEnv": "HOME"}}}`, `"inheritEnv" must be a list of strings, not a string`},
		{`{"mcpServers": {"a": {"command": "x", "inheritEnv": ["A=B"]}}}`, `InheritEnv: "…" is not a variable's name`},
		{`{"mcpServers": {"a": {"command": "x", "inheritEnv": [""]}}}`, `InheritEnv: "" is not a variable's name`},
	} {
		if _, err := parseConfig([]byte(tt.config), env); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.config, err, tt.want)
		}
	}
	// The library's own check, for a Server built in code.
	for _, s := range []Server{
		{ID: "u", URL: "http://x", InheritEnv: []string{"HOME"}},
		{ID: "c", Command: "x", InheritEnv: []string{"NUL\x00"}},
	} {
		if err := s.validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

// environ, on a made-up parent environment: the platform's allowlist,
// the locale, the temporary directory, what InheritEnv names, then Env;
// never a shell function from the allowlist, never a scrubbed name.
func TestEnviron(t *testing.T) {
	parent := []string{
		"PATH=/bin", "HOME=/home/u", "USER=u", "LOGNAME=u", "TERM=xterm", "SHELL=() { :; }",
		"LANG=C.UTF-8", "LANGUAGE=en", "LC_ALL=C", "LC_TIME=de_DE", "TMPDIR=/t", "TMP=/t2", "TEMP=/t3",
		"OPENAI_API_KEY=sk-x", "CONDUIT_STATE_KEY=k", "GH_TOKEN=operator's", "AWS_PROFILE=dev",
		"LC=no", "=C:=C:\\", "BROKEN", "OWN=parent's",
	}
	s := Server{ID: "x", Command: "x", InheritEnv: []string{"AWS_PROFILE", "GH_TOKEN", "OWN"}, Env: map[string]string{"OWN": "server's", "B": "1"},
		scrub: []string{"GH_TOKEN"}}
	got := s.environ(parent)
	want := []string{
		"PATH=/bin", "HOME=/home/u", "USER=u", "LOGNAME=u", "TERM=xterm",
		"LANG=C.UTF-8", "LANGUAGE=en", "LC_ALL=C", "LC_TIME=de_DE", "TMPDIR=/t", "TMP=/t2", "TEMP=/t3",
		"AWS_PROFILE=dev", "B=1", "OWN=server's",
	}
	if !slices.Equal(got, want) {
		t.Errorf("environ:\n got %q\nwant %q", got, want)
	}
	if got := (Server{}).environ(nil); got == nil || len(got) != 0 {
		t.Errorf("an empty environment is %#v; nil would give the child all of this process's", got)
	}
}
