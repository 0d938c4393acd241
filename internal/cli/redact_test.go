package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nastySecret has each character that some encoding of it escapes: a
// quote, a backslash, URL delimiters, a percent sign, a newline,
// non-ASCII letters and one above U+FFFF.
const nastySecret = "s3cr3tQ\"quo\\te/sl#ash?x=1&%25pct\nnl-ünï-✓<b>😀-fin"

// secretPieces are the runs of nastySecret between the characters that an
// encoding escapes, and those characters' escapes: none may appear in
// output, in any encoding.
var secretPieces = []string{"s3cr3tQ", "quo", "sl#ash", "pct", "nl-", "ünï", `\u00fc`, "%C3%BC", "😀", `\ud83d`, "-fin"}

// noSecret fails t for each piece of nastySecret in text.
func noSecret(t *testing.T, what, text string) {
	t.Helper()
	for _, p := range secretPieces {
		if strings.Contains(text, p) {
			t.Errorf("%s shows %q of the secret:\n%s", what, p, text)
		}
	}
}

// TestServersSecretEncodings: a ${env:} value that every encoding
// changes never shows in conduit servers' (or tools', or call's)
// output: not in a URL's error (which %q quotes), not in what a child
// wrote to stderr, not in the JSON the command prints.
func TestServersSecretEncodings(t *testing.T) {
	t.Setenv("CONDUIT_TEST_NASTY", nastySecret)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: the connection is refused
	sh := "/bin/sh"
	if _, err := os.Stat(sh); err != nil {
		t.Skip("no /bin/sh")
	}
	config := filepath.Join(t.TempDir(), "mcp.json")
	data, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{
			// url.Parse refuses the newline, quoting the URL with %q.
			"inpath": map[string]any{"url": "http://" + addr + "/mcp/${env:CONDUIT_TEST_NASTY}"},
			// A URL without the newline: parsed, cut at # and ?, and
			// escaped in a refused connection's error.
			"inquery":  map[string]any{"url": "http://" + addr + "/mcp/${env:CONDUIT_TEST_NASTY_LINE}?key=${env:CONDUIT_TEST_NASTY_LINE}"},
			"inheader": map[string]any{"url": "http://" + addr + "/mcp", "headers": map[string]string{"X-Api-Key": "${env:CONDUIT_TEST_NASTY}"}},
			// A child that says the value as it is, quoted and as JSON.
			"child": map[string]any{"command": sh, "args": []string{"-c", `printf 'bad key %s\n"%s"\n{"key":"%s"}\n' "$KEY" "$KEY" "$KEY" >&2; exit 3`},
				"env": map[string]string{"KEY": "${env:CONDUIT_TEST_NASTY}"}},
		},
		"policy": []any{map[string]any{"allow": []string{"*"}}},
	})
	t.Setenv("CONDUIT_TEST_NASTY_LINE", strings.ReplaceAll(nastySecret, "\n", ""))
	if err := os.WriteFile(config, data, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errb := run(t, "servers", "--config", config)
	if code != ExitFailure || strings.Count(out, `"status": "down"`) != 4 {
		t.Fatalf("servers: exit %d\n%s%s", code, out, errb)
	}
	if !strings.Contains(out, "${env:CONDUIT_TEST_NASTY}") || !strings.Contains(out, "${env:CONDUIT_TEST_NASTY_LINE}") {
		t.Errorf("the errors do not say where the values were:\n%s", out)
	}
	noSecret(t, "servers' output", out+errb)
	code, out, errb = run(t, "tools", "--config", config, "--provider", "anthropic")
	noSecret(t, fmt.Sprintf("tools' output (exit %d)", code), out+errb)
	code, out, errb = run(t, "call", "--config", config, "child__x")
	noSecret(t, fmt.Sprintf("call's output (exit %d)", code), out+errb)
}

// TestStoreURLHidesPassword: a store's password that breaks a URL's
// parser (an unescaped '/', '#', '?', '@', '%', quote, backslash,
// newline) stops conduit serve with an error that shows none of it,
// given by --store or in the "serve" object.
func TestStoreURLHidesPassword(t *testing.T) {
	config, write, _ := defsConfig(t, "web")
	write("web", defTool("fetch", "Fetches a page."))
	for _, pw := range []string{"908172/Qj7kPx", "Qj7kPx/Wm4Zt", "Zq/#?@%zz\"\\\nü9x-Wk", "h7Gx#Rt-Yq", "Vb@Nm@Kl/", "Tr%Gh%Yu", "Pk?Lo=Ji"} {
		t.Setenv("CONDUIT_TEST_STORE_PW", pw)
		url := "redis://:${env:CONDUIT_TEST_STORE_PW}@127.0.0.1:1/0"
		check := func(how string, code int, out, errb string) {
			t.Helper()
			if code == ExitOK {
				t.Errorf("%s, password %q: exit 0", how, pw)
			}
			text := strings.ReplaceAll(out+errb, config, "CONFIG") // its digits are random
			r := []rune(pw)
			for i := 0; i+3 <= len(r); i++ {
				if g := string(r[i : i+3]); strings.Contains(text, g) {
					t.Errorf("%s: the output shows %q of the password %q:\n%s%s", how, g, pw, out, errb)
				}
			}
		}
		code, out, errb := run(t, "serve", "--config", config, "--store", url)
		check("--store", code, out, errb)
		editConfig(t, config, func(cfg map[string]any) { cfg["serve"] = map[string]any{"store": url} })
		code, out, errb = run(t, "serve", "--config", config)
		check(`"serve": {"store"}`, code, out, errb)
		editConfig(t, config, func(cfg map[string]any) {
			cfg["serve"] = map[string]any{"store": "mysql://:${env:CONDUIT_TEST_STORE_PW}@127.0.0.1:1/0"}
		})
		code, out, errb = run(t, "serve", "--config", config)
		check("a scheme that is no store's", code, out, errb)
		editConfig(t, config, func(cfg map[string]any) { delete(cfg, "serve") })
	}
}
