package store_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/conduitmcp/conduit/store"
)

// A store is opened once per process and shared by everything in it.
func ExampleNewMemory() {
	s := store.NewMemory()
	defer s.Close()
	fmt.Println(s.Ping(context.Background()))
	// Output: <nil>
}

// Taint per principal: each server whose output alice's calls have seen
// is added, and the taint lasts a day after the latest addition.
func ExampleMemory_AddMembers() {
	ctx := context.Background()
	s := store.NewMemory()
	defer s.Close()
	_ = s.AddMembers(ctx, "principal/alice", 24*time.Hour, "web")
	_ = s.AddMembers(ctx, "principal/alice", 24*time.Hour, "mail")
	taint, err := s.Members(ctx, "principal/alice")
	fmt.Println(taint, err)
	// Output: [mail web] <nil>
}

// At most once: whoever claims a decided call first sends it and records
// the answer; a second resumer of the same state reads that answer.
func ExampleMemory_Claim() {
	ctx := context.Background()
	s := store.NewMemory()
	defer s.Close()
	const key, life = "conv-42/call_7", 7 * 24 * time.Hour

	answer := func() string {
		c, err := s.Claim(ctx, key, life)
		if err != nil {
			return "not sent: " + err.Error() // fail closed
		}
		switch c.State {
		case store.Claimed:
			result := []byte("file written") // send the call here
			if err := s.Complete(ctx, key, c.Token, result, life); err != nil {
				return "sent, but not recorded: " + err.Error()
			}
			return "sent: " + string(result)
		case store.Completed:
			return "already sent: " + string(c.Result)
		default:
			return "another process is sending it, or died while it did"
		}
	}
	fmt.Println(answer())
	fmt.Println(answer())
	// Output:
	// sent: file written
	// already sent: file written
}

// Calls per minute per principal and tool.
func ExampleMemory_Hit() {
	ctx := context.Background()
	s := store.NewMemory()
	defer s.Close()
	for range 3 {
		w, _ := s.Hit(ctx, "alice/fs__write_file", 2, time.Minute)
		if w.Allowed {
			fmt.Println("call", w.Count)
		} else {
			fmt.Printf("refused, %d calls this minute; retry within a minute: %v\n", w.Count, w.Reset <= time.Minute)
		}
	}
	// Output:
	// call 1
	// call 2
	// refused, 2 calls this minute; retry within a minute: true
}

// Calls at once: a slot is held for the call and released after it; the
// lease gives it back if the process dies during the call.
func ExampleMemory_Acquire() {
	ctx := context.Background()
	s := store.NewMemory()
	defer s.Close()
	slot, _ := s.Acquire(ctx, "alice", 1, 10*time.Minute)
	fmt.Println(slot.Acquired, slot.InUse)
	again, _ := s.Acquire(ctx, "alice", 1, 10*time.Minute)
	fmt.Println(again.Acquired, again.InUse)
	_ = s.Release(ctx, "alice", slot.Token)
	again, _ = s.Acquire(ctx, "alice", 1, 10*time.Minute)
	fmt.Println(again.Acquired, again.InUse)
	// Output:
	// true 1
	// false 1
	// true 1
}

// One process at a time refreshes a server's OAuth token: the others wait
// for the lock, then find the token fresh.
func ExampleMemory_Lock() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := store.NewMemory()
	defer s.Close()
	token, err := s.Lock(ctx, "oauth-refresh/github", time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	// ... refresh and save the token ...
	fmt.Println(s.Unlock(ctx, "oauth-refresh/github", token))
	fmt.Println(errors.Is(s.Unlock(ctx, "oauth-refresh/github", token), store.ErrNotHeld))
	// Output:
	// <nil>
	// true
}
