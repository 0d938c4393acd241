package conduit

// Tests of a stdio child's environment: an allowlist of this process's,
// what InheritEnv names, its own Env and its principal's, and nothing else.

import (
	"context"
	"github.com/conduitmcp/conduit/internal/testenv"
	"os"
	"slices"
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
	return testenv.Environ(resultText(res))
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
	testenv.NoneOf(t, "kid", env, secrets)
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
	testenv.NoneOf(t, "plain", env, secrets)
	if _, ok := env["CONDUIT_TEST_NAMED"]; ok {
		t.Error("plain has CONDUIT_TEST_NAMED, which only kid's inheritEnv names")
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

// TestServerInheritEnvValidate: the library's own check of InheritEnv,
// for a Server built in code.
func TestServerInheritEnvValidate(t *testing.T) {
	for _, s := range []Server{
		{ID: "u", URL: "http://x", InheritEnv: []string{"HOME"}},
		{ID: "c", Command: "x", InheritEnv: []string{"NUL\x00"}},
	} {
		if err := s.validate(); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}
