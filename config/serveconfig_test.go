package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseServe(t *testing.T) {
	cfg, err := Parse([]byte(`{
		"mcpServers": {"a": {"command": "x"}},
		"serve": {
			"tokens": [{"principal": "alice", "env": "T_ALICE"}, {"principal": "anon", "env": "T_ANON"}],
			"hosts": ["mcp.internal", "box:8080"],
			"origins": ["https://app.example.com/"]
		}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []ServeToken{{"alice", "T_ALICE"}, {"anon", "T_ANON"}}
	if s := cfg.Serve; s == nil || !slices.Equal(s.Tokens, want) || !slices.Equal(s.Hosts, []string{"mcp.internal", "box:8080"}) ||
		!slices.Equal(s.Origins, []string{"https://app.example.com"}) {
		t.Fatalf("serve = %+v", cfg.Serve)
	}
	env := map[string]string{"T_ALICE": "alice-secret-0123456789", "T_ANON": "anon-secret-0123456789"}
	tokens, err := cfg.Serve.ResolveTokens(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if got := map[string]string{"alice-secret-0123456789": "alice", "anon-secret-0123456789": "anon"}; !maps.Equal(tokens, got) {
		t.Errorf("tokens = %v", tokens)
	}
	delete(env, "T_ALICE")
	_, err = cfg.Serve.ResolveTokens(func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "T_ALICE is not set") || strings.Contains(err.Error(), "anon-secret") {
		t.Errorf("missing variable: %v", err)
	}
	env["T_ALICE"] = env["T_ANON"]
	_, err = cfg.Serve.ResolveTokens(func(k string) string { return env[k] })
	if err == nil || strings.Contains(err.Error(), "anon-secret") {
		t.Errorf("a token shared by two principals: %v", err)
	}
}

func TestParseServeOAuth(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}, "serve": {
		"oauth": {"issuer": "https://login.example.com", "resource": "https://mcp.example.com/mcp", "principalClaim": "email", "scopes": ["mcp"], "requireTokenType": true},
		"taintLifetime": "2h", "taintScope": "conversation"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := ServeOAuth{Issuer: "https://login.example.com", Resource: "https://mcp.example.com/mcp", PrincipalClaim: "email", Scopes: []string{"mcp"}}
	if o := cfg.Serve.OAuth; o == nil || o.Issuer != want.Issuer || o.Resource != want.Resource || o.PrincipalClaim != want.PrincipalClaim ||
		!slices.Equal(o.Scopes, want.Scopes) || !o.RequireTokenType || cfg.Serve.TaintLifetime != 2*time.Hour || cfg.Serve.TaintScope != "conversation" {
		t.Errorf("serve = %+v %+v", cfg.Serve, cfg.Serve.OAuth)
	}
}

// The stores "serve" names besides Redis: a SQLite file and this
// process's memory.
func TestParseServeStores(t *testing.T) {
	for _, store := range []string{"sqlite:///var/lib/conduit/store.db", "memory", "rediss://h:6380/1"} {
		cfg, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}, "serve": {"store": "` + store + `"}}`))
		if err != nil || cfg.Serve.Store != store {
			t.Errorf("store %q: %v", store, err)
		}
	}
}

func TestParseServeErrors(t *testing.T) {
	for _, tt := range []struct{ serve, want string }{
		{`{"tokens": [{"principal": "a", "token": "s3cret"}]}`, "never written in the configuration"},
		{`{"tokens": [{"env": "X"}]}`, `needs a "principal"`},
		{`{"tokens": [{"principal": "", "env": "X"}]}`, `"principal" is empty`},
		{`{"tokens": [{"principal": "a", "env": "1X"}]}`, `"env" must name an environment variable`},
		{`{"tokens": [{"principal": "a", "env": "X"}, {"principal": "a", "env": "Y"}]}`, `principal "a" has a token already`},
		{`{"tokens": [{"principal": "a", "env": "X"}, {"principal": "b", "env": "X"}]}`, "X holds another principal's token"},
		{`{"tokens": [{"principal": "a", "env": "X", "scope": 1}]}`, `unknown key "scope"`},
		{`{"hosts": ["http://x"]}`, "is not a host name"},
		{`{"origins": ["app.example.com"]}`, "is not an origin"},
		{`{"origins": ["https://x/path"]}`, "is not an origin"},
		{`{"token": "x"}`, `unknown key "token"`},
		{`{"oauth": {"resource": "https://m/mcp"}}`, `oauth: needs "issuer"`},
		{`{"oauth": {"issuer": "https://i"}}`, `oauth: needs "resource"`},
		{`{"oauth": {"issuer": "http://login.example.com", "resource": "https://m/mcp"}}`, `must use HTTPS`},
		{`{"oauth": {"issuer": "https://i", "resource": "https://m/mcp", "audience": "x"}}`, `unknown key "audience"`},
		{`{"taintLifetime": "forever"}`, `not a positive duration`},
		{`{"taintLifetime": "-1h"}`, `not a positive duration`},
		{`{"taintScope": "session"}`, `taintScope: "session" is "principal" (the default) or "conversation"`},
		{`[]`, "must be an object"},
		{`{"store": "http://redis:6379"}`, "is not a store's URL"},
		{`{"store": "redis://:${env:CONDUIT_TEST_UNSET_PW}@h:6379/0"}`, "${env:CONDUIT_TEST_UNSET_PW} is not set"},
		{`{"store": "mysql://root:s3cret@h/db"}`, "is not a store's URL"},
		{`{"store": "memry"}`, `or "memory"`},
		{`{"limits": [{"tool": "*"}]}`, `limit 1: needs "perMinute" or "atOnce"`},
		{`{"limits": [{"perMinute": -1}]}`, "not negative"},
		{`{"limits": [{"perMinute": 1, "principal": ["*", "a"]}]}`, `"*" is every principal`},
		{`{"limits": [{"perMinute": 1, "principal": []}]}`, `"principal" must be a string or a non-empty list`},
		{`{"limits": [{"perMinute": 1, "tool": ""}]}`, `"tool" is empty`},
		{`{"limits": [{"perMinute": 1, "tool": "a/[x"}]}`, `tool: pattern "a/[x"`},
		{`{"limits": [{"perMinute": 1, "per": "hour"}]}`, `unknown key "per"`},
		{`{"limits": [{"perMinute": "60"}]}`, `"perMinute" must be a whole number, not a string`},
		{`{"tasks": {"after": "soon"}}`, `tasks: after: "soon" is not a positive duration`},
		{`{"tasks": {"ttl": "0s"}}`, `tasks: ttl: "0s" is not a positive duration`},
		{`{"tasks": {"tools": ["a/[x"]}}`, `tasks: "a/[x" is not a tool pattern`},
		{`{"tasks": {"required": [""]}}`, `tasks: "" is not a tool pattern`},
		{`{"tasks": {"tool": ["a/b"]}}`, `unknown key "tool"`},
	} {
		_, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}, "serve": ` + tt.serve + `}`))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("serve %s: err = %v, want %q", tt.serve, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("serve %s: the error shows the token: %v", tt.serve, err)
		}
	}
}

func FuzzParseServe(f *testing.F) {
	for _, s := range []string{
		`{"tokens": [{"principal": "alice", "env": "T_A"}], "hosts": ["h"], "origins": ["https://o"]}`,
		`{"tokens": [{"principal": "a", "token": "t"}]}`,
		`{"tokens": [{}]}`, `{"hosts": [1]}`, `{}`, `null`, `[`, `{"origins": ["http://[::1]:80"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var warnings []string
		sc, err := parseServe(data, func(string) (string, bool) { return "v", true }, &warnings)
		if err != nil {
			if sc != nil {
				t.Fatal("a serve config with an error")
			}
			return
		}
		principals, envs := map[string]bool{}, map[string]bool{}
		for _, tok := range sc.Tokens {
			if !envName.MatchString(tok.Env) || principals[tok.Principal] || envs[tok.Env] {
				t.Fatalf("bad token entry accepted: %+v", tok)
			}
			principals[tok.Principal], envs[tok.Env] = true, true
		}
		tokens, _ := sc.ResolveTokens(func(k string) string { return "v-" + k })
		if len(tokens) != len(sc.Tokens) {
			t.Fatalf("%d tokens resolved of %d", len(tokens), len(sc.Tokens))
		}
		for _, l := range sc.Limits {
			if l.PerMinute < 0 || l.AtOnce < 0 || l.PerMinute+l.AtOnce == 0 || len(l.Tools) == 0 || slices.Contains(l.Principals, "*") {
				t.Fatalf("bad limit accepted: %+v", l)
			}
		}
	})
}

func TestParseServeStoreAndLimits(t *testing.T) {
	env := map[string]string{"REDIS_PW": "pw-0123456789"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := parseConfig([]byte(`{"mcpServers": {"a": {"command": "x"}}, "serve": {
		"store": "redis://:${env:REDIS_PW}@127.0.0.1:6390/2",
		"limits": [
			{"principal": "*", "tool": "github/*", "perMinute": 60, "atOnce": 4},
			{"principal": "ci", "perMinute": 600},
			{"principal": ["alice", "bob"], "tool": ["fs/write_*", "web"], "atOnce": 1}
		]}}`), lookup)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Serve
	if s.Store != "redis://:pw-0123456789@127.0.0.1:6390/2" {
		t.Errorf("store = %q", s.Store)
	}
	want := []ServeLimit{
		{Tools: []string{"github/*"}, PerMinute: 60, AtOnce: 4},
		{Principals: []string{"ci"}, Tools: []string{"*"}, PerMinute: 600},
		{Principals: []string{"alice", "bob"}, Tools: []string{"fs/write_*", "web"}, AtOnce: 1},
	}
	if !slices.EqualFunc(s.Limits, want, func(a, b ServeLimit) bool {
		return slices.Equal(a.Principals, b.Principals) && slices.Equal(a.Tools, b.Tools) && a.PerMinute == b.PerMinute && a.AtOnce == b.AtOnce
	}) {
		t.Errorf("limits = %+v", s.Limits)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
	// A password written in the file works, and is warned about without
	// being shown.
	cfg, err = parseConfig([]byte(`{"mcpServers": {"a": {"command": "x"}}, "serve": {"store": "rediss://u:s3cret-pw@r:6380"}}`), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "${env:NAME}") || strings.Contains(cfg.Warnings[0], "s3cret") {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
}

func TestParseServeTasks(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}, "serve": {"tasks": {
		"tools": ["a/slow_*"], "required": ["a/batch"], "after": "10s", "ttl": "2h", "pollInterval": "500ms"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &ServeTasks{Tools: []string{"a/slow_*"}, Required: []string{"a/batch"}, After: 10 * time.Second, TTL: 2 * time.Hour, PollInterval: 500 * time.Millisecond}
	if got := cfg.Serve.Tasks; !reflect.DeepEqual(got, want) {
		t.Errorf("tasks = %+v, want %+v", got, want)
	}
	// None configured: no tasks.
	cfg, err = Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}, "serve": {}}`))
	if err != nil || cfg.Serve.Tasks != nil {
		t.Errorf("no tasks key: %+v, %v", cfg.Serve.Tasks, err)
	}
}
