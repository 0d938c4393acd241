package main

import (
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	r := conduit(t, runOpts{})
	expect(t, r, 2, "Usage:", "demo", "agent")

	r = conduit(t, runOpts{}, "help")
	expect(t, r, 0)
	for _, cmd := range []string{"demo", "servers", "tools", "exec", "call", "strict", "agent"} {
		if !strings.Contains(r.stdout, "  "+cmd) {
			t.Errorf("help lacks %s:\n%s", cmd, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "demo-server") {
		t.Error("help lists the hidden demo-server")
	}

	r = conduit(t, runOpts{}, "frobnicate")
	expect(t, r, 2, `unknown command "frobnicate"`)

	r = conduit(t, runOpts{}, "version")
	expect(t, r, 0)
	if !strings.HasPrefix(r.stdout, "conduit ") {
		t.Errorf("version: %s", r)
	}
}

func TestCommandHelp(t *testing.T) {
	for _, cmd := range []string{"demo", "servers", "tools", "exec", "call", "strict", "agent", "demo-server", "version"} {
		r := conduit(t, runOpts{}, cmd, "-h")
		expect(t, r, 0)
		if !strings.HasPrefix(r.stdout, "Usage: conduit "+cmd) {
			t.Errorf("%s -h:\n%s", cmd, r)
		}
	}
	r := conduit(t, runOpts{}, "help", "exec")
	expect(t, r, 0)
	if !strings.Contains(r.stdout, "--approve") {
		t.Errorf("help exec:\n%s", r)
	}
}

func TestBadUsage(t *testing.T) {
	dir := demoDir(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"tools"}, "--provider is required"},
		{[]string{"tools", "--provider", "claude"}, `unknown provider "claude"`},
		{[]string{"tools", "--provider", "openai-chat", "--strict", "maybe"}, "--strict is auto, true or false"},
		{[]string{"tools", "--provider", "gemini", "extra"}, `unexpected argument "extra"`},
		{[]string{"servers", "extra"}, `unexpected argument "extra"`},
		{[]string{"exec", "--provider", "anthropic", "--approve", "sometimes"}, "--approve is ask, allow, deny or defer"},
		{[]string{"exec", "--provider", "anthropic", "--approve", "ask"}, "--approve ask needs a terminal"},
		{[]string{"exec", "--provider", "anthropic", "--structured", "always"}, `--structured: unknown structured mode "always"`},
		{[]string{"resume"}, "--state FILE is required"},
		{[]string{"resume", "--state", "s", "--halt"}, "--halt is a denial's"},
		{[]string{"resume", "--state", "s", "--structured", "always"}, `--structured: unknown structured mode "always"`},
		{[]string{"call"}, "name the tool"},
		{[]string{"call", "a", "{}", "c"}, "too many arguments"},
		{[]string{"call", "web__fetch", "--taint", "nowhere"}, `--taint names "nowhere"`},
		{[]string{"agent", "--provider", "anthropic", "hi"}, "--model is required"},
		{[]string{"agent", "--provider", "anthropic", "--model", "m"}, "give the prompt"},
		{[]string{"agent", "--provider", "anthropic", "--model", "m", "--max-turns", "0", "hi"}, "--max-turns must be at least 1"},
		{[]string{"demo", "extra"}, `unexpected argument "extra"`},
		{[]string{"demo-server"}, "name one server"},
		{[]string{"demo-server", "mail"}, `no demo server "mail"`},
		{[]string{"strict", "a.json", "b.json"}, "one schema at a time"},
	} {
		r := conduit(t, runOpts{dir: dir, stdin: strings.NewReader("")}, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("conduit %v: want exit 2 and %q, got %s", tc.args, tc.want, r)
		}
	}
}

func TestAgentNeedsKey(t *testing.T) {
	for env, p := range map[string]string{"ANTHROPIC_API_KEY": "anthropic", "OPENAI_API_KEY": "openai-responses", "GEMINI_API_KEY": "gemini"} {
		r := conduit(t, runOpts{dir: demoDir(t), env: []string{env + "="}}, "agent", "--provider", p, "--model", "m", "hi")
		expect(t, r, 2, "set "+env)
	}
}

// TestServeHelpTaint: serve -h says one thing about whose taint it is: the
// principal's and the conversation's, never a session's.
func TestServeHelpTaint(t *testing.T) {
	r := conduit(t, runOpts{}, "serve", "-h")
	expect(t, r, 0)
	help := strings.Join(strings.Fields(r.stdout), " ")
	if strings.Contains(help, "apply to each session") {
		t.Errorf("serve -h says taint is a session's:\n%s", r.stdout)
	}
	for _, want := range []string{`"tainted" rules apply once the caller's principal, or the conversation,`, "Taint belongs to a principal"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve -h lacks %q", want)
		}
	}
}
