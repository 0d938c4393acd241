// The journal of a SQLite store: one table, rows in the order appended.

package sqlitestore

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"time"

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/internal/ttl"
)

var _ store.Journals = (*Store)(nil)

// Append implements store.Journals. A row keeps its own expiry, so the
// sweep of expired rows drops it after keep.
func (s *Store) Append(ctx context.Context, key string, record []byte, keep time.Duration) (store.Entry, error) {
	if err := ttl.Check(keep); err != nil {
		return store.Entry{}, err
	}
	var e store.Entry
	err := s.tx(ctx, "append", func(tx *sql.Tx, t int64) error {
		res, err := tx.ExecContext(ctx, "INSERT INTO journal (key, at, record, expires) VALUES (?, ?, ?, ?)", key, t, record, t+ms(keep))
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		e = store.Entry{ID: strconv.FormatInt(id, 10), Time: time.UnixMilli(t), Record: slices.Clone(record)}
		return nil
	})
	return e, err
}

// Read implements store.Journals.
func (s *Store) Read(ctx context.Context, key string, since time.Time, limit int) ([]store.Entry, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		limit = -1 // SQLite's "no limit"
	}
	rows, err := s.db.QueryContext(ctx, "SELECT id, at, record FROM journal WHERE key = ? AND at >= ? AND expires > ? ORDER BY id DESC LIMIT ?", key, since.UnixMilli(), now(), limit)
	if err != nil {
		return nil, s.fail(ctx, "read", err)
	}
	defer rows.Close()
	var out []store.Entry
	for rows.Next() {
		var id, at int64
		var rec []byte
		if err := rows.Scan(&id, &at, &rec); err != nil {
			return nil, s.fail(ctx, "read", err)
		}
		out = append(out, store.Entry{ID: strconv.FormatInt(id, 10), Time: time.UnixMilli(at), Record: rec})
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, "read", err)
	}
	slices.Reverse(out)
	return out, nil
}
