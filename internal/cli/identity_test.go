package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/identitytest"
	"github.com/conduitmcp/conduit/internal/oauthtest"
)

// The CLI's --principal, for a server of "identity": "principal": each
// principal's calls and listings go through their own session, with their
// own credentials from the environment.
func TestCallPrincipal(t *testing.T) {
	t.Setenv("CONDUIT_TEST_KID_ALICE", "kid-alice-token")
	t.Setenv("CONDUIT_TEST_KID_BOB", "kid-bob-token")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "mcp.json")
	data, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"kid": map[string]any{
			"command": exe, "env": map[string]string{childEnv: "identity", "GORACE": "atexit_sleep_ms=0"},
			"identity": "principal",
			"principals": map[string]any{
				"alice": map[string]any{"env": map[string]string{identitytest.TokenEnv: "${env:CONDUIT_TEST_KID_ALICE}"}},
				"bob":   map[string]any{"env": map[string]string{identitytest.TokenEnv: "${env:CONDUIT_TEST_KID_BOB}"}},
			},
		}},
		"policy": []any{map[string]any{"allow": []string{"*"}}},
	})
	os.WriteFile(config, data, 0o600)
	for who, want := range map[string]string{"alice": "kid-alice-token", "bob": "kid-bob-token"} {
		code, out, errb := run(t, "call", "--config", config, "kid__whoami", "--principal", who)
		if code != ExitOK || !strings.Contains(out, `"`+want+`"`) {
			t.Errorf("%s: exit %d\n%s%s", who, code, out, errb)
		}
	}
	code, out, errb := run(t, "call", "--config", config, "kid__whoami")
	if code != ExitFailure || !strings.Contains(errb, "names no user") {
		t.Errorf("no principal: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = run(t, "call", "--config", config, "kid__whoami", "--principal", "carol")
	if code != ExitFailure || !strings.Contains(errb, `needs a login by "carol"`) || strings.Contains(errb, "conduit login") {
		t.Errorf("carol: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = run(t, "servers", "--config", config)
	if code != ExitOK || !strings.Contains(out, `"status": "per principal"`) {
		t.Errorf("servers: exit %d\n%s%s", code, out, errb)
	}
	code, out, _ = run(t, "tools", "--config", config, "--provider", "anthropic", "--principal", "alice")
	if code != ExitOK || !strings.Contains(out, `"kid__whoami"`) {
		t.Errorf("alice's tools: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "tools", "--config", config, "--provider", "anthropic")
	if code != ExitOK || strings.Contains(out, `"kid__whoami"`) {
		t.Errorf("nobody's tools: exit %d\n%s", code, out)
	}
}

// TestLoginPrincipal: conduit login --principal stores each principal's
// tokens apart; a call uses its principal's, and one who has not logged
// in is told how to.
func TestLoginPrincipal(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	config := filepath.Join(dir, "mcp.json")
	os.WriteFile(config, []byte(`{"mcpServers": {"remote": {"url": "`+as.MCPURL()+`", "identity": "principal", "oauth": {}}},
		"policy": [{"allow": ["*"]}]}`), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	command := func(signIn string, args ...string) (int, string, string) {
		env, out, errb := testEnv("")
		env.Getenv = func(k string) string {
			if k == "CONDUIT_OAUTH_DIR" {
				return tokens
			}
			return ""
		}
		// A browser in which signIn signs in.
		env.OpenURL = func(u string) error {
			go func() {
				pu, _ := url.Parse(u)
				q := pu.Query()
				q.Set("oauthtest_user", signIn)
				pu.RawQuery = q.Encode()
				if resp, err := http.Get(pu.String()); err == nil {
					resp.Body.Close()
				}
			}()
			return nil
		}
		code := Main(ctx, args, env)
		return code, out.String(), errb.String()
	}
	if code, _, errb := command("alice", "login", "--config", config, "remote"); code != ExitUsage || !strings.Contains(errb, "--principal") {
		t.Errorf("login without --principal: exit %d, %s", code, errb)
	}
	if code, _, errb := command("alice", "login", "--config", config, "remote", "--principal", "alice"); code != ExitOK || !strings.Contains(errb, `logged in to remote as "alice"`) {
		t.Fatalf("alice's login: exit %d, %s", code, errb)
	}
	if _, err := os.Stat(filepath.Join(tokens, "remote.json")); err == nil {
		t.Error("alice's login stored shared tokens")
	}
	code, out, errb := command("", "call", "--config", config, "remote__whoami", "--principal", "alice")
	if code != ExitOK || !strings.Contains(out, "hello alice") {
		t.Errorf("alice's call: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = command("", "call", "--config", config, "remote__whoami", "--principal", "bob")
	if code != ExitFailure || !strings.Contains(errb, `conduit login --config `+config+` remote --principal "bob"`) {
		t.Errorf("bob's call: exit %d\n%s%s", code, out, errb)
	}
	if code, _, errb := command("", "logout", "--config", config, "remote", "--principal", "alice"); code != ExitOK {
		t.Errorf("logout: exit %d, %s", code, errb)
	}
	if code, _, _ := command("", "call", "--config", config, "remote__whoami", "--principal", "alice"); code != ExitFailure {
		t.Errorf("alice's call after her logout: exit %d", code)
	}
}
