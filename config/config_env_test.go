package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/redact"
)

// envOf is a lookup over m.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestExpandEnv(t *testing.T) {
	env := envOf(map[string]string{"GH_TOKEN": "ghp_abc", "EMPTY": "", "HOST": "mcp.example.com", "NESTED": "${env:GH_TOKEN}", "_x1": "y"})
	for _, tt := range []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"", "", ""},
		{"${env:GH_TOKEN}", "ghp_abc", ""},
		{"Bearer ${env:GH_TOKEN}", "Bearer ghp_abc", ""},
		{"https://${env:HOST}/mcp?k=${env:GH_TOKEN}&x=1", "https://mcp.example.com/mcp?k=ghp_abc&x=1", ""},
		{"a${env:EMPTY}b", "ab", ""},
		{"${env:_x1}${env:_x1}", "yy", ""},
		{"${env:NESTED}", "${env:GH_TOKEN}", ""}, // a value is not expanded again
		{"$${env:HOST}", "$mcp.example.com", ""}, // no escape, as in VS Code
		{"${workspaceFolder}/x ${HOME} $HOME ${", "${workspaceFolder}/x ${HOME} $HOME ${", ""},
		{"${env:MISSING}", "", "${env:MISSING} is not set"},
		{"Bearer ${env:GH_TOKEN", "", `"${env:" is not closed by "}"`},
		{"${env:}", "", "${env:}: a variable's name is letters"},
		{"${env:1X}", "", "${env:1X}: a variable's name"},
		{"${env:A B}", "", "${env:…}: a variable's name"},
		{"${env:${env:HOST}}", "", "${env:…}: a variable's name"},
		{"Bearer ${input:github_token}", "Bearer ${input:github_token}", ""},
	} {
		x := &envExpander{lookup: env}
		got, err := x.expand(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("expand(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.err)
		}
	}
	x := &envExpander{lookup: env}
	if _, err := x.expand("${env:MISSING}"); !errors.Is(err, ErrEnvNotSet) {
		t.Errorf("not ErrEnvNotSet: %v", err)
	}
	x.expand("${env:GH_TOKEN} ${env:GH_TOKEN} ${env:HOST}")
	if want := []envValue{{"GH_TOKEN", "ghp_abc"}, {"HOST", "mcp.example.com"}}; !slices.Equal(x.read, want) {
		t.Errorf("read = %v", x.read)
	}
}

// FuzzExpandEnv: expanding never fails on a value it could read, puts
// each value where its reference was and nowhere else, and no error
// shows a value.
func FuzzExpandEnv(f *testing.F) {
	f.Add("Bearer ${env:GH_TOKEN}", "GH_TOKEN")
	f.Add("${env:A}${env:B}x${env:", "B")
	f.Add("${input:x}${env:}$${env:A_1}", "A_1")
	f.Fuzz(func(t *testing.T, s, set string) {
		const secret = "\x00value-of-"
		lookup := func(k string) (string, bool) {
			if k == set || strings.HasPrefix(k, "A") {
				return secret + k, true
			}
			return "", false
		}
		x := &envExpander{lookup: lookup}
		got, err := x.expand(s)
		if err != nil {
			if strings.Contains(err.Error(), secret) && !strings.Contains(s, secret) {
				t.Fatalf("expand(%q): the error shows a value: %v", s, err)
			}
			return
		}
		if !strings.Contains(s, "${") && got != s {
			t.Fatalf("expand(%q) = %q changed a value without references", s, got)
		}
		// With every variable holding its own reference, expansion is the
		// identity: each value lands where its reference was, and is not
		// expanded again.
		self := &envExpander{lookup: func(k string) (string, bool) {
			_, ok := lookup(k)
			return "${env:" + k + "}", ok
		}}
		if again, err := self.expand(s); err != nil || again != s {
			t.Fatalf("expand(%q) with self-references = %q, %v", s, again, err)
		}
	})
}

func TestConfigEnv(t *testing.T) {
	env := envOf(map[string]string{"GH_TOKEN": "ghp_0123456789", "MCP_HOST": "mcp.example.com", "NOTES_DB": "/var/notes.db"})
	cfg, err := parseConfig([]byte(`{"mcpServers": {
		"gh": {"url": "https://${env:MCP_HOST}/mcp", "headers": {"Authorization": "Bearer ${env:GH_TOKEN}", "X-Static": "${workspaceFolder}"}},
		"notes": {"command": "notes-server", "args": ["${env:NOTES_DB}"], "env": {"DB": "${env:NOTES_DB}"}}
	}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	gh, notes := cfg.Servers[0], cfg.Servers[1]
	if gh.URL != "https://mcp.example.com/mcp" || gh.Headers["Authorization"] != "Bearer ghp_0123456789" || gh.Headers["X-Static"] != "${workspaceFolder}" {
		t.Errorf("gh = %q %q", gh.URL, gh.Headers)
	}
	// args are not expanded: a secret on a command line is seen by every
	// user of the machine; the child reads its env.
	if notes.Env["DB"] != "/var/notes.db" || notes.Args[0] != "${env:NOTES_DB}" {
		t.Errorf("notes = %q %q", notes.Env, notes.Args)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %q", cfg.Warnings)
	}

	for _, tt := range []struct{ config, want string }{
		{`{"mcpServers": {"gh": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${env:GH_TOKN}"}}}}`,
			`config: mcpServers: server "gh": headers: "Authorization": ${env:GH_TOKN} is not set`},
		{`{"mcpServers": {"gh": {"url": "${env:GH_URL}"}}}`, `config: mcpServers: server "gh": url: ${env:GH_URL} is not set`},
		{`{"mcpServers": {"n": {"command": "x", "env": {"K": "${env:NOPE}"}}}}`, `config: mcpServers: server "n": env: "K": ${env:NOPE} is not set`},
	} {
		_, err := parseConfig([]byte(tt.config), env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.config, err, tt.want)
		}
	}
	// A disabled server's variables are not read.
	if _, err := parseConfig([]byte(`{"mcpServers": {"a": {"url": "${env:NOPE}", "disabled": true}, "b": {"command": "x"}}}`), env); err != nil {
		t.Errorf("disabled: %v", err)
	}
	// An OAuth error that quotes the URL shows the reference, not the
	// value.
	_, err = parseConfig([]byte(`{"mcpServers": {"gh": {"url": "ftp://${env:GH_TOKEN}/x", "oauth": {}}}}`), env)
	if err == nil || strings.Contains(err.Error(), "ghp_0123456789") {
		t.Errorf("oauth error: %v", err)
	}
}

func TestConfigWrittenSecrets(t *testing.T) {
	cfg, err := parseConfig([]byte(`{"mcpServers": {
		"gh": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ghp_written", "X-API-Key": "k", "X-Trace": "on", "Cookie": "${env:C}"}},
		"notes": {"command": "x", "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_written", "NODE_ENV": "production", "KEY_FILE": "/k", "OPENAI_API_KEY": ""}}
	}}`), envOf(map[string]string{"C": "c"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`server "gh": header "Authorization" is written in the file: keep the secret in an environment variable and write ${env:NAME} in its place`,
		`server "gh": header "X-API-Key" is written in the file: keep the secret in an environment variable and write ${env:NAME} in its place`,
		`server "notes": env "GITHUB_PERSONAL_ACCESS_TOKEN" is written in the file: keep the secret in an environment variable and write ${env:NAME} in its place`,
	}
	if !slices.Equal(cfg.Warnings, want) {
		t.Errorf("warnings:\n%s", strings.Join(cfg.Warnings, "\n"))
	}
	for _, w := range cfg.Warnings {
		if strings.Contains(w, "ghp_written") {
			t.Errorf("a warning shows the value: %s", w)
		}
	}
}

// TestEnvRedacted: a value read from the environment never reaches a
// server's status, the log or the Trace through an error, even when the
// error quotes the URL that holds it.
func TestEnvRedacted(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: the connection is refused
	const key = "sk-live/0123456789 abc"
	cfg, err := parseConfig([]byte(`{"mcpServers": {"remote": {"url": "http://`+addr+`/mcp/${env:KEY}?key=${env:KEY}"}}}`), envOf(map[string]string{"KEY": key}))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs bytes.Buffer
	var traced []string
	cl, err := conduit.NewClient(context.Background(), cfg.Servers[0], &conduit.Options{
		ConnectTimeout: 5 * time.Second,
		Reconnect:      conduit.Backoff{Disabled: true},
		Logger:         slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)),
		Trace: &conduit.Trace{ServerDown: func(i conduit.ServerEvent) {
			mu.Lock()
			traced = append(traced, fmt.Sprint(i.Err))
			mu.Unlock()
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	st := cl.Status()[0]
	if st.State != conduit.StateDown || st.Err == nil {
		t.Fatalf("status %v %v", st.State, st.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	for what, text := range map[string]string{"status": st.Err.Error(), "log": logs.String(), "trace": strings.Join(traced, "\n")} {
		for _, form := range []string{key, "sk-live%2F0123456789+abc", "sk-live%2F0123456789%20abc", "0123456789"} {
			if strings.Contains(text, form) {
				t.Errorf("the %s shows the key (%q): %s", what, form, text)
			}
		}
		if !strings.Contains(text, "${env:KEY}") {
			t.Errorf("the %s does not say where the URL's value was: %s", what, text)
		}
	}
	var ne *net.OpError
	if !errors.As(st.Err, &ne) {
		t.Errorf("the redacted error does not unwrap to its cause: %#v", st.Err)
	}
}

// TestConfigIdentity: a server's "identity" and each principal's
// credentials, read from the environment as other values are.
func TestConfigIdentity(t *testing.T) {
	env := envOf(map[string]string{"GH_ALICE": "ghp_alice_0123", "GH_BOB": "ghp_bob_0123", "NOTES_ALICE": "n-alice-0123"})
	cfg, err := parseConfig([]byte(`{"mcpServers": {
		"gh": {"url": "https://mcp.github.example/mcp", "identity": "principal", "headers": {"X-Org": "acme"},
			"principals": {
				"alice": {"headers": {"Authorization": "Bearer ${env:GH_ALICE}"}},
				"bob":   {"headers": {"Authorization": "Bearer ${env:GH_BOB}"}}}},
		"notes": {"command": "notes-server", "identity": "principal",
			"principals": {"alice": {"env": {"NOTES_TOKEN": "${env:NOTES_ALICE}"}}}},
		"linear": {"url": "https://mcp.linear.example/mcp", "identity": "principal", "oauth": {}},
		"web": {"url": "https://web.example/mcp", "identity": "shared"}
	}}`), env)
	if err != nil {
		t.Fatal(err)
	}
	gh, notes, linear, web := cfg.Servers[0], cfg.Servers[1], cfg.Servers[2], cfg.Servers[3]
	if gh.Identity != conduit.IdentityPrincipal || gh.Principals["alice"].Headers["Authorization"] != "Bearer ghp_alice_0123" ||
		gh.Principals["bob"].Headers["Authorization"] != "Bearer ghp_bob_0123" || gh.Headers["X-Org"] != "acme" {
		t.Errorf("gh = %v %q", gh.Identity, gh.Principals)
	}
	if notes.Principals["alice"].Env["NOTES_TOKEN"] != "n-alice-0123" || linear.OAuth == nil || linear.Identity != conduit.IdentityPrincipal || web.Identity != conduit.IdentityShared {
		t.Errorf("notes %q, linear %v %v, web %v", notes.Principals, linear.OAuth, linear.Identity, web.Identity)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %q", cfg.Warnings)
	}
	// A principal's secret comes out of errors as the rest do.
	if err := redact.Env(errors.New("refused: Bearer ghp_bob_0123"), gh.FromEnv); strings.Contains(err.Error(), "ghp_bob") {
		t.Errorf("redacted: %v", err)
	}
	cfg, err = parseConfig([]byte(`{"mcpServers": {"gh": {"url": "https://x/mcp", "identity": "principal",
		"principals": {"alice": {"headers": {"Authorization": "Bearer written"}}}}}}`), env)
	if err != nil || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], `server "gh": principal "alice": header "Authorization" is written in the file`) {
		t.Errorf("written secret: %q, %v", cfg.Warnings, err)
	}

	for _, tt := range []struct{ config, want string }{
		{`{"mcpServers": {"gh": {"url": "https://x/mcp", "identity": "everyone"}}}`, `unknown identity "everyone"`},
		{`{"mcpServers": {"gh": {"url": "https://x/mcp", "principals": {"a": {"headers": {"X": "y"}}}}}}`, `"principals" are for "identity": "principal"`},
		{`{"mcpServers": {"gh": {"url": "https://x/mcp", "identity": "principal"}}}`, `needs each principal's credentials`},
		{`{"mcpServers": {"gh": {"url": "https://x/mcp", "identity": "principal", "headers": {"Authorization": "Bearer ${env:GH_ALICE}"}, "principals": {"a": {"headers": {"X": "y"}}}}}}`,
			`header "Authorization" would be every principal's credential`},
		{`{"mcpServers": {"n": {"command": "x", "identity": "principal", "env": {"NOTES_TOKEN": "t"}, "principals": {"a": {"env": {"X": "y"}}}}}}`,
			`env "NOTES_TOKEN" would be every principal's credential`},
		{`{"mcpServers": {"gh": {"url": "https://x/mcp", "identity": "principal", "principals": {"a": {"env": {"X": "y"}}}}}}`, `"env" is for a "command"`},
		{`{"mcpServers": {"n": {"command": "x", "identity": "principal", "principals": {"a": {"headers": {"X": "y"}}}}}}`, `"headers" are for a "url"`},
		{`{"mcpServers": {"gh": {"url": "https://x/mcp", "identity": "principal", "oauth": {}, "principals": {"a": {"headers": {"X": "y"}}}}}}`, `"principals" or from "oauth", not both`},
		{`{"mcpServers": {"gh": {"url": "https://x/mcp", "identity": "principal", "principals": {"a": {}}}}}`, `has neither "headers" nor "env"`},
		{`{"mcpServers": {"gh": {"url": "https://x/mcp", "identity": "principal", "principals": {"a": {"headers": {"Authorization": "${env:NOPE}"}}}}}}`,
			`principal "a": headers: "Authorization": ${env:NOPE} is not set`},
	} {
		_, err := parseConfig([]byte(tt.config), env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.config, err, tt.want)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
