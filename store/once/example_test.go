package once_test

import (
	"context"
	"fmt"
	"time"

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/once"
)

// A decided call is sent at most once: whoever resumes first sends it and
// records the answer; a second resumer reads that answer.
func ExampleDo() {
	ctx := context.Background()
	claims := store.NewMemory()
	defer claims.Close()
	send := func(context.Context) ([]byte, error) {
		return []byte(`{"content":[{"type":"text","text":"file written"}]}`), nil
	}
	for range 2 {
		out, err := once.Do(ctx, claims, "conv-42/call_7", 7*24*time.Hour, send)
		if err != nil {
			fmt.Println("not sent:", err) // fail closed
			continue
		}
		switch out.State {
		case once.Ran, once.Recorded:
			fmt.Printf("%s: %s\n", out.State, out.Result)
		case once.Unknown:
			fmt.Println("sent by another, whose outcome is unknown: not sent again")
		}
	}
	// Output:
	// ran: {"content":[{"type":"text","text":"file written"}]}
	// recorded: {"content":[{"type":"text","text":"file written"}]}
}

// Claim and Record split Do, for work that runs in a batch: claim every
// key first, run what was won, then record each.
func ExampleClaim() {
	ctx := context.Background()
	claims := store.NewMemory()
	defer claims.Close()
	ticket, found, err := once.Claim(ctx, claims, "conv-42/call_8", time.Hour)
	if err != nil || ticket == nil {
		fmt.Println(found.State, err)
		return
	}
	_ = ticket.Record(ctx, []byte("42"), nil)
	_, found, _ = once.Claim(ctx, claims, "conv-42/call_8", time.Hour)
	fmt.Println(found.State, string(found.Result))
	// Output: recorded 42
}
