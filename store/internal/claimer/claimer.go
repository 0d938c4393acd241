// Package claimer holds what the store suites share: a bounded context, a
// patient wait, and the test binary run again as a claimer process.
//
// A claim's guarantees span processes, so the suites check them with real
// ones. Both suites start, read and kill those processes the same way.
package claimer

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Ctx is a context bounded well past any wait in a suite. So a store that
// hangs fails the test instead of the whole run.
func Ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// Eventually calls cond until it is true, for at most 10 s. Expiries are
// checked this way. So a loaded machine makes a test slower, not flaky.
func Eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Command is the test binary run again, running no test, with env added
// to its environment. Its TestMain sees env and becomes the claimer.
func Command(t *testing.T, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Process is a claimer process that Start started.
type Process struct {
	Cmd *exec.Cmd
	// Stdin is its standard input. A claimer waits for it to close.
	Stdin io.WriteCloser
	// Stdout is the rest of its standard output, after the first line.
	Stdout *bufio.Reader
	stderr bytes.Buffer
}

// Start starts cmd and reads the first line it prints. It fails t unless
// the line is first. The process is killed and reaped when t ends.
func Start(t *testing.T, cmd *exec.Cmd, first string) *Process {
	t.Helper()
	p := &Process{Cmd: cmd}
	var err error
	if p.Stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Reaped too, so no process or stderr copier outlives the test
		// (Wait again after a test's own Wait only reports so).
		p.Stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	p.Stdout = bufio.NewReader(stdout)
	if line, err := p.Stdout.ReadString('\n'); line != first+"\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the claimer said %q, want %q (%v): %s", line, first, err, p.stderr.Bytes())
	}
	return p
}

// Wait waits for the process to end. Its error names what the process
// wrote to standard error.
func (p *Process) Wait() error {
	if err := p.Cmd.Wait(); err != nil {
		return fmt.Errorf("%w: %s", err, p.stderr.Bytes())
	}
	return nil
}

// Main makes the test binary a claimer when the variable env is set, and
// then exits; otherwise it returns at once. Call it first in TestMain.
// The claimer runs body with the variable's value; an error exits 1.
func Main(env string, body func(value string) error) {
	value := os.Getenv(env)
	if value == "" {
		return
	}
	if err := body(value); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}
