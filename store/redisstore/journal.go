// The journal of a Redis store: a stream per journal.

package redisstore

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/internal/ttl"
)

// journalSpace is the key space of journals: each one a stream.
const journalSpace = "journal:"

var _ store.Journals = (*Store)(nil)

// Append implements store.Journals with XADD and MINID. MINID trims the
// records older than keep by the server's clock. A PEXPIRE of the whole
// stream follows, so that an idle stream goes too.
func (s *Store) Append(ctx context.Context, key string, record []byte, keep time.Duration) (store.Entry, error) {
	if err := ttl.Check(keep); err != nil {
		return store.Entry{}, err
	}
	if err := s.begin(); err != nil {
		return store.Entry{}, err
	}
	k := s.key(journalSpace, key)[0]
	var add *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		add = p.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []any{"r", record}})
		p.PExpire(ctx, k, time.Duration(ms(keep))*time.Millisecond)
		return nil
	})
	if err != nil {
		return store.Entry{}, s.fail("append", err)
	}
	id := add.Val()
	at := idTime(id)
	// Trimming is by the new id's time, the server's clock: a separate
	// step, as MINID takes no expression. A failed trim is retried by the
	// next append.
	if cut := at.Add(-keep).UnixMilli(); cut > 0 {
		s.rdb.XTrimMinID(ctx, k, strconv.FormatInt(cut, 10))
	}
	return store.Entry{ID: id, Time: at, Record: slices.Clone(record)}, nil
}

// Read implements store.Journals: XREVRANGE from the newest down to
// since, reversed.
func (s *Store) Read(ctx context.Context, key string, since time.Time, limit int) ([]store.Entry, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	k := s.key(journalSpace, key)[0]
	start := strconv.FormatInt(max(since.UnixMilli(), 0), 10)
	var msgs []redis.XMessage
	var err error
	if limit > 0 {
		msgs, err = s.rdb.XRevRangeN(ctx, k, "+", start, int64(limit)).Result()
	} else {
		msgs, err = s.rdb.XRevRange(ctx, k, "+", start).Result()
	}
	if err != nil {
		return nil, s.fail("read", err)
	}
	out := make([]store.Entry, 0, len(msgs))
	for _, m := range slices.Backward(msgs) {
		rec, _ := m.Values["r"].(string)
		out = append(out, store.Entry{ID: m.ID, Time: idTime(m.ID), Record: []byte(rec)})
	}
	return out, nil
}

// idTime is the time in a stream id ("ms-seq").
func idTime(id string) time.Time {
	msPart, _, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseInt(msPart, 10, 64)
	return time.UnixMilli(n)
}
