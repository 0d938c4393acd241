package sqlitestore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/sqlitestore"
	"github.com/conduitmcp/conduit/store/storetest"
)

func TestMain(m *testing.M) {
	storetest.ClaimerMain(func(path string) (store.Store, error) { return sqlitestore.Open(path, nil) })
	os.Exit(m.Run())
}

func open(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Each namespace is a file of its own; every store opened for it is a
// client of its own on that file, as another process's would be.
func TestConformance(t *testing.T) {
	dir := t.TempDir()
	storetest.Run(t, func(t *testing.T, namespace string) store.Store {
		sum := sha256.Sum256([]byte(namespace))
		return open(t, filepath.Join(dir, hex.EncodeToString(sum[:8])+".db"))
	})
}

// Several OS processes claim one key in one file: exactly one wins.
func TestClaimAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	open(t, path) // the processes race for the claim, not for creating the file
	storetest.ClaimAcrossProcesses(t, path, func(path string) (store.Store, error) { return sqlitestore.Open(path, nil) })
}

// A claim outlives the process that made it: a store opened again on the
// file (a restart) finds it, with its result.
func TestClaimsSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	ctx := context.Background()
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ctx, "k", time.Hour)
	if err != nil || c.State != store.Claimed {
		t.Fatalf("claim: %+v %v", c, err)
	}
	if err := s.Complete(ctx, "k", c.Token, []byte("answer"), time.Hour); err != nil {
		t.Fatal(err)
	}
	pending, _ := s.Claim(ctx, "p", time.Hour)
	if err := s.AddMembers(ctx, "alice", time.Hour, "web"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	again := open(t, path)
	if c, err := again.Claim(ctx, "k", time.Hour); err != nil || c.State != store.Completed || string(c.Result) != "answer" {
		t.Errorf("after reopening: %+v %v, want completed with the answer", c, err)
	}
	if c, err := again.Claim(ctx, "p", time.Hour); err != nil || c.State != store.Pending || pending.State != store.Claimed {
		t.Errorf("a claim left pending, after reopening: %+v %v", c, err)
	}
	if m, err := again.Members(ctx, "alice"); err != nil || len(m) != 1 {
		t.Errorf("taint after reopening: %v %v", m, err)
	}
}

// The file and the directory Open creates are their owner's only, and so
// are the files SQLite puts beside it.
func TestPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "conduit")
	path := filepath.Join(dir, "store.db")
	s := open(t, path)
	if _, err := s.Claim(context.Background(), "k", time.Minute); err != nil {
		t.Fatal(err)
	}
	if s.Path() != path {
		t.Errorf("Path = %q, want %q", s.Path(), path)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory: %v %v, want 0700", fi.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		fi, _ := e.Info()
		names = append(names, e.Name())
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	if !strings.Contains(strings.Join(names, " "), "store.db-wal") {
		t.Errorf("files %v: no WAL", names)
	}
}

// A file of a later release's layout is refused, not written over; one
// that is not SQLite's fails its operations as unavailable.
func TestForeignFiles(t *testing.T) {
	later := filepath.Join(t.TempDir(), "later.db")
	open(t, later).Close()
	setVersion(t, later, 99)
	if _, err := sqlitestore.Open(later, nil); err == nil || !strings.Contains(err.Error(), "later release") {
		t.Errorf("opening a later layout: %v", err)
	}
	junk := filepath.Join(t.TempDir(), "junk.db")
	os.WriteFile(junk, []byte(strings.Repeat("not a database ", 200)), 0o600)
	if _, err := sqlitestore.Open(junk, nil); err == nil {
		t.Error("a file that is not SQLite's opened")
	}
}

// While another process holds the file's write lock past the busy
// timeout, an operation fails with ErrUnavailable; it succeeds once the
// lock is gone.
func TestBusyIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := sqlitestore.Open(path, &sqlitestore.Options{BusyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	release := holdWriteLock(t, path)
	ctx := context.Background()
	if _, err := s.Claim(ctx, "k", time.Minute); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("claim while the file is locked: %v, want ErrUnavailable", err)
	}
	release()
	if c, err := s.Claim(ctx, "k", time.Minute); err != nil || c.State != store.Claimed {
		t.Errorf("claim once the lock is gone: %+v %v", c, err)
	}
}

// Many goroutines of one process, each with a store of its own on one
// file, all claim: one wins.
func TestManyClientsOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	open(t, path)
	var wg sync.WaitGroup
	results := make(chan store.ClaimState, 8)
	for range 8 {
		s := open(t, path)
		wg.Go(func() {
			c, err := s.Claim(context.Background(), "k", time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			results <- c.State
		})
	}
	wg.Wait()
	close(results)
	won := 0
	for st := range results {
		if st == store.Claimed {
			won++
		}
	}
	if won != 1 {
		t.Errorf("%d of 8 clients won the claim", won)
	}
}
