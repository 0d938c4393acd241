// The conformance tests of store.Journals.

package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/internal/claimer"
)

// testJournals checks appending and reading back, in order, across two
// stores of one namespace. It checks that "since" and "limit" bound the
// read.
func testJournals(t *testing.T, open Opener) {
	a, b := open(t, ns(t)), open(t, ns(t))
	ja, ok := a.(store.Journals)
	if !ok {
		t.Skipf("%T keeps no journals", a)
	}
	jb := b.(store.Journals)
	c := claimer.Ctx(t)
	start := time.Now().Add(-time.Second)
	var ids []string
	for i := range 5 {
		e, err := ja.Append(c, "audit", fmt.Appendf(nil, "r%d", i), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if e.Time.Before(start) || string(e.Record) != fmt.Sprintf("r%d", i) {
			t.Fatalf("append %d: %+v", i, e)
		}
		ids = append(ids, e.ID)
	}
	if _, err := ja.Append(c, "other", []byte("x"), time.Hour); err != nil {
		t.Fatal(err)
	}
	all, err := jb.Read(c, "audit", start, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 {
		t.Fatalf("read %d records, want 5: %+v", len(all), all)
	}
	for i, e := range all {
		if e.ID != ids[i] || string(e.Record) != fmt.Sprintf("r%d", i) {
			t.Fatalf("record %d is %s %q, want %s r%d", i, e.ID, e.Record, ids[i], i)
		}
	}
	last, err := jb.Read(c, "audit", start, 2)
	if err != nil || len(last) != 2 || string(last[0].Record) != "r3" || string(last[1].Record) != "r4" {
		t.Fatalf("the newest two: %+v, %v", last, err)
	}
	later, err := jb.Read(c, "audit", time.Now().Add(time.Hour), 0)
	if err != nil || len(later) != 0 {
		t.Fatalf("records from an hour on: %+v, %v", later, err)
	}
	// A record past its keep is dropped when another is appended.
	if _, err := ja.Append(c, "short", []byte("old"), 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, err := ja.Append(c, "short", []byte("new"), 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	kept, err := jb.Read(c, "short", start, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range kept {
		if string(e.Record) == "old" {
			t.Fatalf("a record past its keep is still read: %+v", kept)
		}
	}
}
