// The store the CLI's processes share (--store). It keeps claims, taint,
// limits and locks. Each choice of store comes with how far it holds.

package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/redisstore"
	"github.com/conduitmcp/conduit/store/sqlitestore"
)

// storeScope is how far a store is shared.
type storeScope int

const (
	// scopeProcess: this process's memory (--store memory).
	scopeProcess storeScope = iota + 1
	// scopeMachine: a SQLite file, shared by the processes of one machine
	// and kept across restarts (the default).
	scopeMachine
	// scopeFleet: Redis, shared by every machine that reaches it.
	scopeFleet
)

// storeFileName is the default store's file in the state directory.
const storeFileName = "store.db"

// storeUsage is the --store flag's text, the same for every command.
const storeUsage = "keep claims, taint, limits and locks in the store at `URL`: sqlite:///PATH (shared by the processes of this machine), redis://HOST:PORT/DB or rediss:// (shared by every machine), or memory (this process only); default the SQLite file $XDG_STATE_HOME/conduit/" + storeFileName + " (~/.local/state/conduit/" + storeFileName + "); write a password as ${env:NAME} (in single quotes for the shell)"

// defaultStorePath is the default store's file: conduit/store.db under
// $XDG_STATE_HOME, or ~/.local/state (the XDG base directory default). It
// is read from the process's environment, as the key of saved states is.
func defaultStorePath() (string, error) {
	if dir := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "conduit", storeFileName), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", errors.New("no state directory for the default store: set XDG_STATE_HOME or HOME, or give --store")
	}
	return filepath.Join(home, ".local", "state", "conduit", storeFileName), nil
}

// openStore opens the store at u for cmd. While the store is unavailable,
// cmd's calls do what meanwhile says. u is "" for the default SQLite file,
// or "memory", sqlite:PATH, or a Redis URL. Its errors never show the URL's
// password.
func openStore(env *Env, cmd, u, meanwhile string) (store.Store, storeScope, error) {
	if u == "memory" {
		return store.NewMemory(), scopeProcess, nil
	}
	if u == "" {
		path, err := defaultStorePath()
		if err != nil {
			return nil, 0, failure("%s: %v", cmd, err)
		}
		return openSQLite(cmd, path)
	}
	scheme, _, _ := strings.Cut(u, ":")
	switch strings.ToLower(scheme) {
	case "sqlite":
		pu, err := url.Parse(u)
		if err != nil {
			return nil, 0, inputError("--store: the sqlite URL is malformed (sqlite:///PATH)")
		}
		path := pu.Path
		if pu.Opaque != "" {
			path = pu.Opaque
		}
		if pu.Host != "" || path == "" {
			return nil, 0, inputError("--store: a sqlite URL names a file: sqlite:///ABSOLUTE/PATH or sqlite:RELATIVE/PATH")
		}
		return openSQLite(cmd, path)
	case "redis", "rediss", "unix":
	default:
		return nil, 0, inputError("--store: a store is sqlite:///PATH, redis://HOST:PORT/DB, rediss://..., unix://PATH or memory, not a %q URL", scheme)
	}
	s, err := redisstore.Open(u, nil)
	if err != nil {
		return nil, 0, inputError("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Ping(ctx); err != nil {
		// Not fatal: it comes back by itself, and calls are refused
		// meanwhile.
		fmt.Fprintf(env.Stderr, "%s: the store is unavailable for now (%s): %v\n", cmd, meanwhile, err)
	}
	return s, scopeFleet, nil
}

// openSQLite opens the SQLite store at path. A file that cannot be opened
// stops the command, since nothing could be claimed in it.
func openSQLite(cmd, path string) (store.Store, storeScope, error) {
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		return nil, 0, failure("%s: the store %s: %v (give another with --store sqlite:///PATH)", cmd, path, err)
	}
	return s, scopeMachine, nil
}
