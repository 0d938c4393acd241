package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeUsage: what conduit serve refuses, each with a message that
// says what to fix and never a token.
func TestServeUsage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("one.json", `{"mcpServers": {"a": {"command": "/nonexistent"}}, "policy": [{"allow": ["*"]}]}`)
	two := write("two.json", `{"mcpServers": {"a": {"command": "/nonexistent"}, "b": {"command": "/nonexistent"}}}`)
	tokens := write("tokens.json", `{"mcpServers": {"a": {"command": "/nonexistent"}},
		"serve": {"tokens": [{"principal": "alice", "env": "T_ALICE"}, {"principal": "bob", "env": "T_BOB"}]}}`)
	for _, tc := range []struct {
		args []string
		env  map[string]string
		code int
		want string
	}{
		{[]string{"serve", "--config", one, "--no-auth"}, nil, ExitUsage, "--no-auth is for --http"},
		{[]string{"serve", "--config", one, "extra"}, nil, ExitUsage, `unexpected argument "extra"`},
		{[]string{"serve", "--config", two, "--transparent"}, nil, ExitUsage, "--transparent serves one server"},
		{[]string{"serve", "--config", one, "--http", "0.0.0.0:0", "--no-auth"}, nil, ExitUsage, "loopback address only"},
		{[]string{"serve", "--config", one, "--http", "8080"}, nil, ExitUsage, "want host:port"},
		{[]string{"serve", "--config", one, "--http", "127.0.0.1:0"}, nil, ExitUsage, `--http needs bearer tokens: add to`},
		{[]string{"serve", "--config", tokens, "--http", "127.0.0.1:0"}, map[string]string{"T_ALICE": "alice-secret-0123456789"}, ExitUsage, "T_BOB is not set"},
		{[]string{"serve", "--config", tokens, "--http", "127.0.0.1:0"}, map[string]string{"T_ALICE": "short-secret", "T_BOB": "bob-secret-0123456789"}, ExitUsage, `principal "alice" is shorter than 16`},
	} {
		env, _, errb := testEnv("")
		env.Getenv = func(k string) string { return tc.env[k] }
		code := Main(context.Background(), tc.args, env)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", tc.args, code, tc.code, errb.String(), tc.want)
		}
		for _, v := range tc.env {
			if strings.Contains(errb.String(), v) {
				t.Errorf("%v: stderr shows a token: %q", tc.args, errb.String())
			}
		}
	}
}
