package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skip and Fatal instead of stopping.
type recorder struct {
	testing.TB
	skipped, fatal string
}

func (r *recorder) Helper()           {}
func (r *recorder) Skip(args ...any)  { r.skipped = args[0].(string) }
func (r *recorder) Fatal(args ...any) { r.fatal = args[0].(string) }

func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		ci, e2e string
		fatal   bool
	}{
		{"", "", false},
		{"true", "", true},
		{"", "1", true},
		{"", "0", false},
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv("CONDUIT_E2E", tc.e2e)
		r := &recorder{TB: t}
		unavailable(r, "%s is missing", "x")
		got := r.skipped
		if tc.fatal {
			got = r.fatal
		}
		if want := "testenv: x is missing: " + MissingMessage; got != want {
			t.Errorf("CI=%q CONDUIT_E2E=%q: skipped %q, fatal %q; want %s %q", tc.ci, tc.e2e, r.skipped, r.fatal,
				map[bool]string{true: "fatal", false: "skipped"}[tc.fatal], want)
		}
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestResolveBin(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "package-lock.json"), `{"packages": {
		"node_modules/@x/one": {"version": "1.0.0"},
		"node_modules/@x/many": {"version": "2.0.0"},
		"node_modules/@x/stale": {"version": "3.0.0"}}}`)
	writeFile(t, filepath.Join(root, "node_modules/@x/one/package.json"), `{"version": "1.0.0", "bin": "dist/index.js"}`)
	writeFile(t, filepath.Join(root, "node_modules/@x/one/dist/index.js"), "")
	writeFile(t, filepath.Join(root, "node_modules/@x/many/package.json"), `{"version": "2.0.0", "bin": {"other": "o.js", "many": "m.js"}}`)
	writeFile(t, filepath.Join(root, "node_modules/@x/many/m.js"), "")
	writeFile(t, filepath.Join(root, "node_modules/@x/stale/package.json"), `{"version": "2.9.0", "bin": "s.js"}`)

	for pkg, want := range map[string]string{
		"@x/one":     "node_modules/@x/one/dist/index.js",
		"@x/many":    "node_modules/@x/many/m.js",
		"@x/stale":   "error: package-lock.json pins",
		"@x/missing": "error: not installed",
	} {
		got := resolveBin(root, pkg)
		if e, ok := strings.CutPrefix(want, "error: "); ok {
			if !strings.Contains(got.err, e) {
				t.Errorf("resolveBin(%s) = %+v, want an error with %q", pkg, got, e)
			}
			continue
		}
		if got.err != "" || got.script != filepath.Join(root, want) {
			t.Errorf("resolveBin(%s) = %+v, want script %s", pkg, got, want)
		}
	}
}

func TestModulePath(t *testing.T) {
	dir := t.TempDir()
	for text, want := range map[string]string{
		"module github.com/conduitmcp/conduit\n\ngo 1.26\n":      RootModule,
		"// comment\nmodule \"github.com/conduitmcp/conduit\"\n": RootModule,
		"module github.com/conduitmcp/conduit/bench // nested\n": RootModule + "/bench",
		"go 1.26\n": "",
	} {
		path := filepath.Join(dir, "go.mod")
		writeFile(t, path, text)
		if got := modulePath(path); got != want {
			t.Errorf("modulePath(%q) = %q, want %q", text, got, want)
		}
	}
}

// A program that is not installed skips the test under a bare go test and
// fails it under ./scripts/test, naming the Debian package to install.
func TestBinaryMissing(t *testing.T) {
	for _, e2e := range []string{"", "1"} {
		t.Setenv("CI", "")
		t.Setenv("CONDUIT_E2E", e2e)
		r := &recorder{TB: t}
		if got := Binary(r, "conduit-no-such-program", "conduit-no-such-package"); got != "" {
			t.Errorf("Binary of a missing program = %q", got)
		}
		msg, other := r.skipped, r.fatal
		if e2e == "1" {
			msg, other = other, msg
		}
		if want := "testenv: conduit-no-such-program not found: install the Debian package conduit-no-such-package (./scripts/test installs it)"; msg != want || other != "" {
			t.Errorf("CONDUIT_E2E=%q: skipped %q, fatal %q; want %q", e2e, r.skipped, r.fatal, want)
		}
	}
}
