// Fuzzing of the console's readers of records a store holds.

package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/store"
)

// FuzzConsoleRecords: whatever a journal holds (another release's
// records, a damaged store), the console's readers skip what they cannot
// read, and never panic.
func FuzzConsoleRecords(f *testing.F) {
	f.Add([]byte(`{"kind":"ask","id":"A","principal":"bob","server":"s","tool":"t","asked":"2026-01-01T00:00:00Z","until":"2999-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"kind":"decided","id":"A","decision":"approve","by":"alice"}`))
	f.Add([]byte(`{"kind":"allow","id":"P","principal":"bob","until":"2999-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"time":"2026-01-01T00:00:00Z","kind":"call","approved":true}`))
	f.Add([]byte(`{"kind":7}`))
	f.Add([]byte("\xff"))
	f.Fuzz(func(t *testing.T, rec []byte) {
		ctx := context.Background()
		st := store.NewMemory()
		defer st.Close()
		c, err := newConsole(ConsoleOptions{Admins: []string{"alice"}}, st, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{approvalsJournal, patternsJournal, AuditJournal} {
			if _, err := st.Append(ctx, k, rec, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		waiting, _, err := c.readApprovals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range waiting {
			if w.Kind != "ask" || !time.Now().Before(w.Until) {
				t.Fatalf("listed as waiting: %+v", w)
			}
		}
		if _, err := c.patterns(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadAudit(ctx, st, time.Time{}, 0); err != nil {
			t.Fatal(err)
		}
	})
}
