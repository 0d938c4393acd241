package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/sqlitestore"
)

// The one opener of --store: the default SQLite file of the state
// directory (XDG_STATE_HOME, else ~/.local/state), sqlite URLs, memory by
// name, and clear refusals of the rest.
func TestOpenStore(t *testing.T) {
	env, _, _ := testEnv("")
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	s, scope, err := openStore(env, "conduit test", "", "")
	if err != nil || scope != scopeMachine {
		t.Fatalf("default: %v %v", scope, err)
	}
	if got, want := s.(*sqlitestore.Store).Path(), filepath.Join(state, "conduit", "store.db"); got != want {
		t.Errorf("default store %s, want %s", got, want)
	}
	s.Close()

	home := t.TempDir()
	t.Setenv("XDG_STATE_HOME", "relative/is/ignored")
	t.Setenv("HOME", home)
	s, _, err = openStore(env, "conduit test", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.(*sqlitestore.Store).Path(), filepath.Join(home, ".local", "state", "conduit", "store.db"); got != want {
		t.Errorf("default store without XDG_STATE_HOME %s, want %s", got, want)
	}
	s.Close()

	file := filepath.Join(t.TempDir(), "x.db")
	s, scope, err = openStore(env, "conduit test", "sqlite://"+file, "")
	if err != nil || scope != scopeMachine || s.(*sqlitestore.Store).Path() != file {
		t.Fatalf("sqlite://%s: %v %v", file, scope, err)
	}
	s.Close()
	s, scope, err = openStore(env, "conduit test", "memory", "")
	if _, ok := s.(*store.Memory); err != nil || !ok || scope != scopeProcess {
		t.Fatalf("memory: %T %v %v", s, scope, err)
	}
	s.Close()
	for u, want := range map[string]string{
		"sqlite://host/x.db":                  "names a file",
		"sqlite:":                             "names a file",
		"mysql://root:s3cret-pw@h/db":         `not a "mysql" URL`,
		"memry":                               `not a "memry" URL`,
		"sqlite://" + t.TempDir() + "/a\x00b": "",
	} {
		_, _, err := openStore(env, "conduit test", u, "")
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: %v, want an error with %q", u, err, want)
		}
	}
}
