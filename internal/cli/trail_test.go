package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeConsoleCareless: a console that would serve no one, or
// approvals sent to a console that is not served, are refused at start,
// saying what to add; so is an unknown "approvals".
func TestServeConsoleCareless(t *testing.T) {
	noAdmins := configFile(t, "noadmins.json", `{"mcpServers": {"a": {"command": "/nonexistent"}}, "policy": [{"allow": ["*"]}],
		"serve": {"tokens": [{"principal": "alice", "env": "T_ALICE"}]}}`)
	approvals := configFile(t, "approvals.json", `{"mcpServers": {"a": {"command": "/nonexistent"}}, "policy": [{"allow": ["*"]}],
		"serve": {"tokens": [{"principal": "alice", "env": "T_ALICE"}], "admins": ["alice"], "approvals": "console"}}`)
	unknown := configFile(t, "unknown.json", `{"mcpServers": {"a": {"command": "/nonexistent"}}, "serve": {"approvals": "email"}}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--config", noAdmins, "--http", "127.0.0.1:0", "--console"}, `it names none: add "serve": {"admins": ["PRINCIPAL"]}`},
		{[]string{"serve", "--config", approvals, "--http", "127.0.0.1:0"}, `"approvals": "console" needs the console: add --console`},
		{[]string{"serve", "--config", approvals, "--console"}, "--console is for --http"},
		{[]string{"serve", "--config", unknown}, `approvals: "email" is "client" (the default) or "console"`},
		{[]string{"trail", "--since", "0s"}, "--since is a positive duration"},
	} {
		env, _, errb := testEnv("")
		env.Getenv = func(k string) string { return map[string]string{"T_ALICE": "alice-secret-0123456789"}[k] }
		if code := Main(context.Background(), tc.args, env); code == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestTrailEmpty: conduit trail on a store with no trail prints nothing
// and succeeds.
func TestTrailEmpty(t *testing.T) {
	env, out, errb := testEnv("")
	if code := Main(context.Background(), []string{"trail", "--store", "sqlite://" + filepath.Join(t.TempDir(), "s.db")}, env); code != 0 || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
