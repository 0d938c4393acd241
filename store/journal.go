// The optional journal: append-only records, for an audit trail.

package store

import (
	"context"
	"time"
)

// Journals are append-only logs of records, for what must be kept and read
// back in order. The audit trail of conduit serve and its console's
// approvals is one. It is not part of [Store], so that a Store of another
// module still satisfies Store. [Memory] and the SQLite and Redis stores
// implement it. A caller finds it with a type assertion.
//
// Records are kept at least for the keep given when appended. That is
// measured by the store's clock, as every expiry is. A store drops older
// records when it appends, or sweeps.
type Journals interface {
	// Append adds record to the end of the journal of key, and drops its
	// records older than keep.
	Append(ctx context.Context, key string, record []byte, keep time.Duration) (Entry, error)
	// Read returns the newest limit records of the journal of key appended
	// at or after since, oldest first. A limit of 0 or less returns all of
	// them.
	Read(ctx context.Context, key string, since time.Time, limit int) ([]Entry, error)
}

// An Entry is a record of a journal.
type Entry struct {
	// ID orders the records of one journal: it grows with each append.
	// Its form is the store's (a Redis stream's id, a number).
	ID string
	// Time is when the record was appended, by the store's clock, to the
	// millisecond.
	Time time.Time
	// Record is what was appended.
	Record []byte
}

var _ Journals = (*Memory)(nil)

// memJournal is one journal of a Memory.
type memJournal struct {
	entries []Entry
	next    int64
}

// Append implements [Journals].
func (m *Memory) Append(ctx context.Context, key string, record []byte, keep time.Duration) (Entry, error) {
	now, err := m.begin(ctx)
	if err != nil {
		return Entry{}, err
	}
	defer m.mu.Unlock()
	if m.journals == nil {
		m.journals = map[string]*memJournal{}
	}
	j := m.journals[key]
	if j == nil {
		j = &memJournal{}
		m.journals[key] = j
	}
	cut := now.Add(-keep)
	drop := 0
	for drop < len(j.entries) && j.entries[drop].Time.Before(cut) {
		drop++
	}
	j.entries = j.entries[drop:]
	j.next++
	e := Entry{ID: formatID(j.next), Time: now.Truncate(time.Millisecond), Record: append([]byte{}, record...)}
	j.entries = append(j.entries, e)
	return e, nil
}

// Read implements [Journals].
func (m *Memory) Read(ctx context.Context, key string, since time.Time, limit int) ([]Entry, error) {
	if _, err := m.begin(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	j := m.journals[key]
	if j == nil {
		return nil, nil
	}
	var out []Entry
	for _, e := range j.entries {
		if !e.Time.Before(since) {
			out = append(out, Entry{ID: e.ID, Time: e.Time, Record: append([]byte{}, e.Record...)})
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// formatID is a journal id that sorts as a string as it does as a number.
func formatID(n int64) string {
	const width = 19
	b := []byte("0000000000000000000")
	for i := width - 1; i >= 0 && n > 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b)
}
