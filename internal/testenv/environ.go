package testenv

// What a stdio child's environment holds, as a test reads it back.

import (
	"strings"
	"testing"
)

// Environ parses text of NAME=value lines, as a child that prints its
// environment writes it.
func Environ(text string) map[string]string {
	env := map[string]string{}
	for _, kv := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// NoneOf fails t for each of secrets (name to value) that env holds, by
// name or in any value. who names the child in the failure.
// An environment without PATH was not read at all, which would hide any
// secret: it fails too, as does an empty secret, which any value holds.
func NoneOf(t testing.TB, who string, env, secrets map[string]string) {
	t.Helper()
	if _, ok := env["PATH"]; !ok {
		t.Errorf("%s's child printed no environment (no PATH): nothing was checked", who)
	}
	for name, secret := range secrets {
		if secret == "" {
			t.Errorf("the secret %s is empty: it cannot be looked for", name)
			continue
		}
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
