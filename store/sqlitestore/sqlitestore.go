// Package sqlitestore is a store.Store in one SQLite file. The processes of
// one machine share it. They are the commands of the CLI, the restarts of
// conduit serve, and the workers of one host. It survives restarts, since
// the file stays. The CLI and conduit serve use it when no store is given. A
// fleet of machines shares store/redisstore's instead.
//
// It runs on modernc.org/sqlite, SQLite translated to Go. So conduit stays
// one static binary built without cgo.
//
// # Across processes
//
// The file is in WAL mode, so readers never wait for a writer. Every
// operation that decides is one transaction begun with BEGIN IMMEDIATE. Such
// operations are a claim, a completion, a hit, an acquire and a lock. The
// transaction takes the file's write lock before it reads. So two processes
// never both see a key free. A process that finds the lock taken waits for
// it (SQLite's busy timeout, Options.BusyTimeout). One that waits longer
// fails with store.ErrUnavailable. So does one whose context ends first.
//
// # Clock
//
// Expiry is measured by the machine's wall clock. Each row holds when it
// expires, in Unix milliseconds. The processes of one machine share that
// clock, so they agree on what has expired. A clock set forward ends
// lifetimes early, and a claim could be won again. One set back makes them
// last longer.
//
// # Files
//
// Open creates the file readable and writable by its owner only (0600). It
// creates its directory, when missing, for its owner only (0700). Claims
// hold the answers of calls. SQLite gives the files beside it (FILE-wal,
// FILE-shm) the file's permissions. Expired rows are deleted as operations
// meet them. All of them are deleted at most once a minute.
package sqlitestore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/internal/ttl"
)

// DefaultBusyTimeout is how long an operation waits for another process's
// write by default.
const DefaultBusyTimeout = 10 * time.Second

// schemaVersion is the layout of the file this release writes and reads
// (PRAGMA user_version).
const schemaVersion = 1

// Options configures a Store. The zero value (or nil) is the default.
type Options struct {
	// BusyTimeout is how long an operation waits while another process
	// writes (default DefaultBusyTimeout); past it the operation fails
	// with store.ErrUnavailable.
	BusyTimeout time.Duration
}

// Store is a store.Store in a SQLite file. Its methods are safe for
// concurrent use, and several processes may open the same file.
type Store struct {
	db     *sql.DB
	path   string
	closed atomic.Bool
	// sweptAt is when expired rows were last deleted, in Unix ms.
	sweptAt atomic.Int64
	// closing ends the waits of Lock when the store closes.
	closeOnce sync.Once
	closing   chan struct{}
}

var _ store.Store = (*Store)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS sets (key TEXT NOT NULL, member TEXT NOT NULL, expires INTEGER NOT NULL, PRIMARY KEY (key, member)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, token TEXT NOT NULL, done INTEGER NOT NULL, result BLOB, expires INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS windows (key TEXT PRIMARY KEY, count INTEGER NOT NULL, expires INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS slots (key TEXT NOT NULL, token TEXT NOT NULL, expires INTEGER NOT NULL, PRIMARY KEY (key, token)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS locks (key TEXT PRIMARY KEY, token TEXT NOT NULL, expires INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, at INTEGER NOT NULL, record BLOB NOT NULL, expires INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS journal_key ON journal (key, id);
`

// Open opens the store in the SQLite file at path, creating the file (and
// its directory) when missing. Every process that opens the same file
// shares its claims, sets, counters and locks.
func Open(path string, opts *Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlitestore: no file")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	busy := DefaultBusyTimeout
	if opts != nil && opts.BusyTimeout > 0 {
		busy = opts.BusyTimeout
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	// Created here, not by SQLite, so that it is the owner's only whatever
	// the umask.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	f.Close()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	// FULL: a claim that was answered survives a power loss.
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	// One connection: the process's operations queue in database/sql,
	// honouring their contexts, and only other processes are waited for
	// inside SQLite.
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	s := &Store{db: db, path: abs, closing: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), busy+5*time.Second)
	defer cancel()
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// migrate creates the tables, or checks that the file's are this
// release's.
func (s *Store) migrate(ctx context.Context) error {
	return s.tx(ctx, "open", func(tx *sql.Tx, _ int64) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		if v > schemaVersion {
			return keepError{fmt.Errorf("sqlitestore: %s was written by a later release (layout %d; this one reads %d)", s.path, v, schemaVersion)}
		}
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(schemaVersion))
		return err
	})
}

// Path returns the absolute path of the store's file.
func (s *Store) Path() string { return s.path }

// now is the store's clock: the wall clock, in Unix milliseconds.
func now() int64 { return time.Now().UnixMilli() }

// ms converts d to whole milliseconds, at least one.
func ms(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

// fail turns a database error into the store's:
//
//   - ErrClosed;
//   - a plain error when ctx was cancelled;
//   - ErrUnavailable for the rest: the file locked past the busy timeout,
//     unreadable, full, a deadline passed.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrClosed), s.closed.Load():
		// Closed while the operation ran.
		return store.ErrClosed
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("sqlitestore: %s: %w", op, ctx.Err())
	}
	return fmt.Errorf("sqlitestore: %s: %w: %w", op, store.ErrUnavailable, err)
}

// tx runs fn in one transaction begun with BEGIN IMMEDIATE. fn gets the time
// the transaction began. tx commits when fn returns nil.
func (s *Store) tx(ctx context.Context, op string, fn func(tx *sql.Tx, now int64) error) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(ctx, op, err)
	}
	t := now()
	if err := fn(tx, t); err != nil {
		tx.Rollback()
		var keep keepError
		if errors.As(err, &keep) {
			return keep.err
		}
		return s.fail(ctx, op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.fail(ctx, op, err)
	}
	s.sweep(t)
	return nil
}

// keepError carries an answer of the store (ErrNotHeld) out of tx
// unchanged.
type keepError struct{ err error }

func (k keepError) Error() string { return k.err.Error() }

// sweepEvery is how often expired rows of every key are deleted.
const sweepEvery = time.Minute

// sweep deletes every expired row, at most once per sweepEvery per
// process; a failure is left for the next one.
func (s *Store) sweep(t int64) {
	last := s.sweptAt.Load()
	if t-last < sweepEvery.Milliseconds() || !s.sweptAt.CompareAndSwap(last, t) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, table := range []string{"sets", "claims", "windows", "slots", "locks", "journal"} {
		s.db.ExecContext(ctx, "DELETE FROM "+table+" WHERE expires <= ?", t)
	}
}

// AddMembers implements store.Sets.
func (s *Store) AddMembers(ctx context.Context, key string, lifetime time.Duration, members ...string) error {
	if err := ttl.Check(lifetime); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	if len(members) == 0 {
		return nil
	}
	return s.tx(ctx, "add members", func(tx *sql.Tx, t int64) error {
		// An expired set starts again empty.
		if _, err := tx.ExecContext(ctx, "DELETE FROM sets WHERE key = ? AND expires <= ?", key, t); err != nil {
			return err
		}
		exp := t + ms(lifetime)
		for _, m := range members {
			if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO sets (key, member, expires) VALUES (?, ?, ?)", key, m, exp); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "UPDATE sets SET expires = ? WHERE key = ?", exp, key)
		return err
	})
}

// Members implements store.Sets.
func (s *Store) Members(ctx context.Context, key string) ([]string, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	// ORDER BY compares bytes, as Go's sort of strings does.
	rows, err := s.db.QueryContext(ctx, "SELECT member FROM sets WHERE key = ? AND expires > ? ORDER BY member", key, now())
	if err != nil {
		return nil, s.fail(ctx, "members", err)
	}
	defer rows.Close()
	var members []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return nil, s.fail(ctx, "members", err)
		}
		members = append(members, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "members", err)
	}
	return members, nil
}

// claimRow is a claim as the file holds it.
type claimRow struct {
	token  string
	done   bool
	result []byte
}

// readClaim reads the live claim of key; ok is false when there is none.
func readClaim(ctx context.Context, tx *sql.Tx, key string, t int64) (c claimRow, ok bool, err error) {
	err = tx.QueryRowContext(ctx, "SELECT token, done, result FROM claims WHERE key = ? AND expires > ?", key, t).Scan(&c.token, &c.done, &c.result)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, err
}

// Claim implements store.Claims.
func (s *Store) Claim(ctx context.Context, key string, lifetime time.Duration) (store.Claim, error) {
	if err := ttl.Check(lifetime); err != nil {
		return store.Claim{}, err
	}
	var c store.Claim
	err := s.tx(ctx, "claim", func(tx *sql.Tx, t int64) error {
		row, ok, err := readClaim(ctx, tx, key, t)
		if err != nil {
			return err
		}
		switch {
		case ok && row.done:
			c = store.Claim{State: store.Completed, Result: row.result}
			if c.Result == nil {
				c.Result = []byte{}
			}
			return nil
		case ok:
			c = store.Claim{State: store.Pending}
			return nil
		}
		token := rand.Text()
		if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO claims (key, token, done, result, expires) VALUES (?, ?, 0, NULL, ?)", key, token, t+ms(lifetime)); err != nil {
			return err
		}
		c = store.Claim{State: store.Claimed, Token: token}
		return nil
	})
	if err != nil {
		return store.Claim{}, err
	}
	return c, nil
}

// Complete implements store.Claims.
func (s *Store) Complete(ctx context.Context, key, token string, result []byte, lifetime time.Duration) error {
	if err := ttl.Check(lifetime); err != nil {
		return err
	}
	if result == nil {
		result = []byte{}
	}
	return s.tx(ctx, "complete", func(tx *sql.Tx, t int64) error {
		row, ok, err := readClaim(ctx, tx, key, t)
		if err != nil {
			return err
		}
		if !ok || token == "" || row.token != token || row.done && string(row.result) != string(result) {
			return keepError{store.ErrNotHeld}
		}
		_, err = tx.ExecContext(ctx, "UPDATE claims SET done = 1, result = ?, expires = ? WHERE key = ?", result, t+ms(lifetime), key)
		return err
	})
}

// Hit implements store.Counters: a fixed window that starts at its first
// hit.
func (s *Store) Hit(ctx context.Context, key string, limit int64, window time.Duration) (store.Window, error) {
	if err := ttl.Check(window); err != nil {
		return store.Window{}, err
	}
	var w store.Window
	err := s.tx(ctx, "hit", func(tx *sql.Tx, t int64) error {
		var count, exp int64
		err := tx.QueryRowContext(ctx, "SELECT count, expires FROM windows WHERE key = ? AND expires > ?", key, t).Scan(&count, &exp)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if count < limit {
			if count == 0 {
				exp = t + ms(window)
			}
			count++
			w.Allowed = true
			if _, err := tx.ExecContext(ctx, "INSERT OR REPLACE INTO windows (key, count, expires) VALUES (?, ?, ?)", key, count, exp); err != nil {
				return err
			}
		}
		w.Count = count
		if count > 0 {
			w.Reset = time.Duration(exp-t) * time.Millisecond
		}
		return nil
	})
	if err != nil {
		return store.Window{}, err
	}
	return w, nil
}

// Acquire implements store.Counters: a row per slot, with the end of its
// lease.
func (s *Store) Acquire(ctx context.Context, key string, limit int64, lease time.Duration) (store.Slot, error) {
	if err := ttl.Check(lease); err != nil {
		return store.Slot{}, err
	}
	var sl store.Slot
	err := s.tx(ctx, "acquire", func(tx *sql.Tx, t int64) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM slots WHERE key = ? AND expires <= ?", key, t); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM slots WHERE key = ?", key).Scan(&sl.InUse); err != nil {
			return err
		}
		if sl.InUse >= limit {
			return nil
		}
		token := rand.Text()
		if _, err := tx.ExecContext(ctx, "INSERT INTO slots (key, token, expires) VALUES (?, ?, ?)", key, token, t+ms(lease)); err != nil {
			return err
		}
		sl = store.Slot{Acquired: true, Token: token, InUse: sl.InUse + 1}
		return nil
	})
	if err != nil {
		return store.Slot{}, err
	}
	return sl, nil
}

// Release implements store.Counters.
func (s *Store) Release(ctx context.Context, key, token string) error {
	return s.tx(ctx, "release", func(tx *sql.Tx, _ int64) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM slots WHERE key = ? AND token = ?", key, token)
		return err
	})
}

// How often Lock tries again while another owner holds the lock. It starts
// at lockPollMin and doubles up to lockPollMax, never past the lock's
// expiry.
const (
	lockPollMin = 5 * time.Millisecond
	lockPollMax = 100 * time.Millisecond
)

// Lock implements store.Locks. While another owner holds the lock it polls.
// It backs off with jitter up to 100 ms, never past the lock's expiry.
func (s *Store) Lock(ctx context.Context, key string, lifetime time.Duration) (string, error) {
	if err := ttl.Check(lifetime); err != nil {
		return "", err
	}
	token := rand.Text()
	poll := lockPollMin
	for {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("sqlitestore: waiting for lock %q: %w", key, err)
		}
		var left int64
		err := s.tx(ctx, "lock", func(tx *sql.Tx, t int64) error {
			var exp int64
			err := tx.QueryRowContext(ctx, "SELECT expires FROM locks WHERE key = ? AND expires > ?", key, t).Scan(&exp)
			if err == nil {
				left = exp - t
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			_, err = tx.ExecContext(ctx, "INSERT OR REPLACE INTO locks (key, token, expires) VALUES (?, ?, ?)", key, token, t+ms(lifetime))
			return err
		})
		if err != nil {
			if ctx.Err() != nil && !s.closed.Load() {
				return "", fmt.Errorf("sqlitestore: waiting for lock %q: %w", key, ctx.Err())
			}
			return "", err
		}
		if left == 0 {
			return token, nil
		}
		wait := min(poll/2+mrand.N(poll/2+1), time.Duration(left)*time.Millisecond)
		poll = min(2*poll, lockPollMax)
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
		case <-s.closing:
			timer.Stop()
			return "", store.ErrClosed
		}
	}
}

// Unlock implements store.Locks.
func (s *Store) Unlock(ctx context.Context, key, token string) error {
	return s.tx(ctx, "unlock", func(tx *sql.Tx, t int64) error {
		r, err := tx.ExecContext(ctx, "DELETE FROM locks WHERE key = ? AND token = ? AND expires > ?", key, token, t)
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil || n != 1 {
			return keepError{store.ErrNotHeld}
		}
		return nil
	})
}

// Ping implements store.Store: it reads the file.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	var v int
	return s.fail(ctx, "ping", s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v))
}

// Close implements store.Store: it closes the file. A Lock waiting for
// another owner returns store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.closeOnce.Do(func() { close(s.closing) })
	return s.db.Close()
}
