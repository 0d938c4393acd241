// The suite's part that spans OS processes: several processes of the test
// binary race for one claim.

package storetest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/store"
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
	location := os.Getenv(claimerEnv)
	if location == "" {
		return
	}
	os.Exit(claimer(open, location, os.Getenv(claimerKey)))
}

func claimer(open StoreAt, location, key string) int {
	s, err := open(location)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Ping(ctx); err != nil { // connected before the start
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	c, err := s.Claim(ctx, key, time.Minute)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if c.State == store.Claimed {
		if err := s.Complete(ctx, key, c.Token, fmt.Appendf(nil, "sent by %d", os.Getpid()), time.Minute); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println(c.State)
	return 0
}

// ClaimAcrossProcesses starts several processes of the test binary, whose
// TestMain calls [ClaimerMain]. Each has its own store at location. They
// claim one key at once, for three rounds. Exactly one wins and completes.
// The others find it pending or completed. The result is the winner's.
func ClaimAcrossProcesses(t *testing.T, location string, open StoreAt) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	for round := range 3 {
		key := fmt.Sprintf("conv-1/call-%d", round)
		var starts []io.Closer
		outs := make([]*strings.Builder, n)
		copied := make([]chan struct{}, n)
		var cmds []*exec.Cmd
		for i := range n {
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), claimerEnv+"="+location, claimerKey+"="+key)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			cmds = append(cmds, cmd)
			starts = append(starts, stdin)
			rd := bufio.NewReader(stdout)
			if line, err := rd.ReadString('\n'); line != "ready\n" {
				t.Fatalf("claimer %d: %q %v", i, line, err)
			}
			outs[i], copied[i] = &strings.Builder{}, make(chan struct{})
			go func() { io.Copy(outs[i], rd); close(copied[i]) }()
		}
		for _, s := range starts { // all at once
			s.Close()
		}
		for i, cmd := range cmds {
			<-copied[i]
			if err := cmd.Wait(); err != nil {
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
