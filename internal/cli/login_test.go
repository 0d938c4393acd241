package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/oauthtest"
)

func TestLoginServersLogout(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{ExpiresIn: 5})
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	config := filepath.Join(dir, "mcp.json")
	os.WriteFile(config, []byte(`{"mcpServers": {"remote": {"url": "`+as.MCPURL()+`", "oauth": {}}}}`), 0o600)
	newEnv := func() (*Env, *strings.Builder, *strings.Builder) {
		env, _, _ := testEnv("")
		env.Getenv = func(k string) string {
			if k == "CONDUIT_OAUTH_DIR" {
				return tokens
			}
			return ""
		}
		o, e := &strings.Builder{}, &strings.Builder{}
		env.Stdout, env.Stderr = o, e
		return env, o, e
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// No browser and no terminal: login fails at once, saying why.
	env, _, errb := newEnv()
	if code := Main(ctx, []string{"login", "--config", config, "remote"}, env); code != ExitFailure || !strings.Contains(errb.String(), "neither a browser") {
		t.Fatalf("login without a browser: exit %d, %s", code, errb)
	}

	// A browser that follows the URL to the loopback listener.
	env, _, errb = newEnv()
	env.OpenURL = func(u string) error {
		go func() {
			if resp, err := http.Get(u); err == nil {
				resp.Body.Close()
			}
		}()
		return nil
	}
	if code := Main(ctx, []string{"login", "--config", config, "remote"}, env); code != ExitOK {
		t.Fatalf("login: exit %d, %s", code, errb)
	}
	if !strings.Contains(errb.String(), "logged in to remote") || !strings.Contains(errb.String(), as.URL+"/authorize?") {
		t.Errorf("login said %s", errb)
	}
	fi, err := os.Stat(filepath.Join(tokens, "remote.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", fi, err)
	}

	servers := func() (int, []serverJSON, string) {
		env, out, errb := newEnv()
		code := Main(ctx, []string{"servers", "--config", config}, env)
		var got struct{ Servers []serverJSON }
		json.Unmarshal([]byte(out.String()), &got)
		return code, got.Servers, out.String() + errb.String()
	}
	if code, got, text := servers(); code != ExitOK || len(got) != 1 || got[0].Status != "up" || got[0].Tools != 1 {
		t.Fatalf("servers after login: exit %d, %s", code, text)
	}

	as.RevokeRefreshTokens()
	as.RevokeAccessTokens()
	code, got, text := servers()
	if code != ExitFailure || len(got) != 1 || got[0].Status != "needs login" || got[0].Login != "conduit login --config "+config+" remote" {
		t.Fatalf("servers with a refused refresh token: exit %d, %s", code, text)
	}
	for _, s := range as.Secrets() {
		if strings.Contains(text, s) {
			t.Fatalf("a secret in the output: %s", text)
		}
	}

	env, _, errb = newEnv()
	if code := Main(ctx, []string{"logout", "--config", config, "remote"}, env); code != ExitOK {
		t.Fatalf("logout: exit %d, %s", code, errb)
	}
	if _, err := os.Stat(filepath.Join(tokens, "remote.json")); !os.IsNotExist(err) {
		t.Fatalf("token file after logout: %v", err)
	}
	env, _, errb = newEnv()
	if code := Main(ctx, []string{"login", "--config", config, "nope"}, env); code != ExitUsage {
		t.Fatalf("login to an unknown server: exit %d, %s", code, errb)
	}
}

// loginEnv is a CLI environment whose tokens live in dir/tokens, with
// stdout and stderr captured.
func loginEnv(dir string) (*Env, *strings.Builder, *strings.Builder) {
	env, _, _ := testEnv("")
	env.Getenv = func(k string) string {
		if k == "CONDUIT_OAUTH_DIR" {
			return filepath.Join(dir, "tokens")
		}
		return ""
	}
	o, e := &strings.Builder{}, &strings.Builder{}
	env.Stdout, env.Stderr = o, e
	return env, o, e
}

// A command other than servers, with no one to ask, fails at once with the
// command that logs in; it sends no authorization request.
func TestToolsNeedsLoginFailsFast(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	os.WriteFile(config, []byte(`{"mcpServers": {"remote": {"url": "`+as.MCPURL()+`", "oauth": {}}}}`), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env, out, errb := loginEnv(dir)
	start := time.Now()
	code := Main(ctx, []string{"tools", "--config", config, "--provider", "anthropic"}, env)
	took := time.Since(start)
	want := "server remote needs a login: run 'conduit login --config " + config + " remote'"
	if code != ExitFailure || !strings.Contains(errb.String(), want) {
		t.Fatalf("tools: exit %d, stderr %s\nwant %q", code, errb, want)
	}
	if took > 10*time.Second {
		t.Errorf("tools took %v to say a login is needed", took)
	}
	if out.Len() != 0 {
		t.Errorf("tools printed %s", out)
	}
	if n := len(as.Snapshot().Authorize); n != 0 {
		t.Fatalf("%d authorization requests from a command that cannot ask", n)
	}
}

// A login that the browser never answers is asked for once: it fails after
// --timeout (not twice that), with the command to run again.
func TestLoginTimeout(t *testing.T) {
	as := oauthtest.New(t, oauthtest.Options{})
	dir := t.TempDir()
	config := filepath.Join(dir, "servers.json")
	os.WriteFile(config, []byte(`{"mcpServers": {"remote": {"url": "`+as.MCPURL()+`", "oauth": {}}}}`), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env, _, errb := loginEnv(dir)
	opened := 0
	env.OpenURL = func(string) error { opened++; return nil } // a browser nobody uses
	const timeout = time.Second
	start := time.Now()
	code := Main(ctx, []string{"login", "--config", config, "--timeout", timeout.String(), "remote"}, env)
	took := time.Since(start)
	if code != ExitFailure {
		t.Fatalf("login: exit %d, %s", code, errb)
	}
	if want := "no answer from the browser within 1s; run 'conduit login --config " + config + " remote' again"; !strings.Contains(errb.String(), want) {
		t.Errorf("login said %s\nwant %q", errb, want)
	}
	if opened != 1 || took >= 2*timeout {
		t.Fatalf("the browser was opened %d times and login took %v; want once, in about %v", opened, took, timeout)
	}
	if n := len(as.Snapshot().Authorize); n != 0 {
		t.Fatalf("%d authorization requests reached the server", n)
	}
}
