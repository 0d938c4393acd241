package conduit

import (
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/internal/names"
)

func TestValidServerID(t *testing.T) {
	valid := []string{"github", "files", "a", "_x", "my-server", "srv_2", "A", strings.Repeat("s", 32)}
	for _, id := range valid {
		if err := validServerID(id); err != nil {
			t.Errorf("validServerID(%q) = %v, want nil", id, err)
		}
	}
	invalid := map[string]string{
		"":                      "empty",
		"a__b":                  `"__"`,
		"__":                    `"__"`,
		"a.b":                   "must match",
		"a/b":                   "must match",
		"1st":                   "must match",
		"-x":                    "must match",
		"with space":            "must match",
		"ünï":                   "must match",
		strings.Repeat("s", 33): "longer than 32",
	}
	for id, want := range invalid {
		err := validServerID(id)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validServerID(%q) = %v, want an error containing %q", id, err, want)
		}
	}
}

func TestExposedName(t *testing.T) {
	tests := []struct {
		namespace      bool
		server, prefix string
		tool, want     string
	}{
		{true, "github", "", "get_issue", "github__get_issue"},
		{true, "fs", "", "read.file", "fs__read_file"},
		{true, "fs", "x_", "9lives", "x_fs__9lives"}, // a hub's prefix too goes in front
		{false, "fs", "", "9lives", "_9lives"},
		{false, "fs", "gh_", "get", "gh_get"},
		{false, "fs", "", "a/b", "a_b"},
	}
	for _, tt := range tests {
		if got := exposedName(tt.namespace, tt.server, tt.prefix, tt.tool); got != tt.want {
			t.Errorf("exposedName(%v, %q, %q, %q) = %q, want %q", tt.namespace, tt.server, tt.prefix, tt.tool, got, tt.want)
		}
	}
	long := exposedName(true, "server", "", strings.Repeat("t", 80))
	if len(long) != names.MaxLen || !strings.HasPrefix(long, "server__") {
		t.Errorf("long hub name: %q", long)
	}
}
