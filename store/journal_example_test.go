package store_test

import (
	"context"
	"fmt"
	"time"

	"github.com/conduitmcp/conduit/store"
)

// ExampleJournals appends records to a journal and reads the newest back.
func ExampleJournals() {
	ctx := context.Background()
	var st store.Store = store.NewMemory()
	defer st.Close()
	j := st.(store.Journals) // every store of this module keeps journals
	for _, r := range []string{"first", "second", "third"} {
		j.Append(ctx, "log", []byte(r), 24*time.Hour)
	}
	last, _ := j.Read(ctx, "log", time.Now().Add(-time.Hour), 2)
	for _, e := range last {
		fmt.Println(string(e.Record))
	}
	// Output:
	// second
	// third
}
