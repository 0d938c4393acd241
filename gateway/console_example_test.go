package gateway_test

import (
	"context"
	"fmt"
	"time"

	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/store"
)

// ExampleReadAudit reads the audit trail conduit serve --console keeps in
// its store: here a record appended by hand to an in-memory store.
func ExampleReadAudit() {
	ctx := context.Background()
	st := store.NewMemory()
	defer st.Close()
	st.Append(ctx, gateway.AuditJournal, []byte(`{"time":"2026-12-07T08:00:00Z","kind":"call","principal":"bob","server":"github","tool":"create_issue","decision":"ask","approver":"console:alice","outcome":"ok"}`), time.Hour)
	recs, err := gateway.ReadAudit(ctx, st, time.Now().Add(-time.Hour), 0)
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Println(r.Principal, r.Server+"/"+r.Tool, r.Decision, r.Approver, r.Outcome)
	}
	// Output: bob github/create_issue ask console:alice ok
}
