// The suite's part that spans OS processes: several processes of the test
// binary race for one claim.

package storetest

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/internal/claimer"
)

// claimerEnv makes the test binary a claimer process (see [ClaimerMain]).
// Its value is where the store is. claimerKey names the key to claim.
const (
	claimerEnv = "CONDUIT_STORETEST_CLAIMER"
	claimerKey = "CONDUIT_STORETEST_CLAIMER_KEY"
)

// StoreAt opens the store at a location (a URL, a file) in a claimer
// process.
type StoreAt func(location string) (store.Store, error)

// ClaimerMain makes the test binary a claimer process when
// [ClaimAcrossProcesses] started it, and then exits; otherwise it returns
// at once. Call it first in TestMain.
//
// A claimer opens the store, prints "ready", and waits for its standard
// input to close. Then it claims the key, and completes it with its pid when
// it won. It prints the claim's state.
func ClaimerMain(open StoreAt) {
	claimer.Main(claimerEnv, func(location string) error {
		return claimOnce(open, location, os.Getenv(claimerKey))
	})
}

func claimOnce(open StoreAt, location, key string) error {
	s, err := open(location)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Ping(ctx); err != nil { // connected before the start
		return err
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	c, err := s.Claim(ctx, key, time.Minute)
	if err != nil {
		return err
	}
	if c.State == store.Claimed {
		if err := s.Complete(ctx, key, c.Token, fmt.Appendf(nil, "sent by %d", os.Getpid()), time.Minute); err != nil {
			return err
		}
	}
	fmt.Println(c.State)
	return nil
}

// ClaimAcrossProcesses starts several processes of the test binary, whose
// TestMain calls [ClaimerMain]. Each has its own store at location. They
// claim one key at once, for three rounds. Exactly one wins and completes.
// The others find it pending or completed. The result is the winner's.
func ClaimAcrossProcesses(t *testing.T, location string, open StoreAt) {
	const n = 6
	for round := range 3 {
		key := fmt.Sprintf("conv-1/call-%d", round)
		procs := make([]*claimer.Process, n)
		outs := make([]*strings.Builder, n)
		copied := make([]chan struct{}, n)
		for i := range n {
			procs[i] = claimer.Start(t, claimer.Command(t, claimerEnv+"="+location, claimerKey+"="+key), "ready")
			outs[i], copied[i] = &strings.Builder{}, make(chan struct{})
			go func() { io.Copy(outs[i], procs[i].Stdout); close(copied[i]) }()
		}
		for _, p := range procs { // all at once
			p.Stdin.Close()
		}
		for i, p := range procs {
			<-copied[i]
			if err := p.Wait(); err != nil {
				t.Fatalf("claimer %d: %v", i, err)
			}
		}
		counts := map[string]int{}
		for _, out := range outs {
			counts[strings.TrimSpace(out.String())]++
		}
		if counts["claimed"] != 1 || counts["claimed"]+counts["pending"]+counts["completed"] != n {
			t.Fatalf("round %d: %v, want one claimed and the others pending or completed", round, counts)
		}
		s, err := open(location)
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.Claim(context.Background(), key, time.Minute)
		s.Close()
		if err != nil || c.State != store.Completed || !strings.HasPrefix(string(c.Result), "sent by ") {
			t.Fatalf("round %d: claim after the race = %+v %v, want the winner's result", round, c, err)
		}
	}
}
