package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/agent/agenttest"
)

// openPTY opens a pseudo-terminal pair with the standard library only:
// /dev/ptmx, unlocked with TIOCSPTLCK, its number from TIOCGPTN.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var unlock int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); errno != 0 {
		m.Close()
		t.Fatalf("TIOCSPTLCK: %v", errno)
	}
	var n uint32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); errno != 0 {
		m.Close()
		t.Fatalf("TIOCGPTN: %v", errno)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// terminal is a run of the binary with a pseudo-terminal as its
// controlling terminal: what it writes there is read from the screen, and
// keys are typed into it.
type terminal struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
	mu     sync.Mutex
	screen strings.Builder
	done   chan struct{}
	err    error
}

// startTerminal runs the binary. With ttyStdin the terminal is stdin;
// otherwise stdin is the given data and the terminal is only the
// controlling terminal (/dev/tty), as when a response is piped in.
func startTerminal(t *testing.T, dir string, ttyStdin bool, stdin []byte, env []string, args ...string) *terminal {
	t.Helper()
	master, tty := openPTY(t)
	tm := &terminal{t: t, master: master, done: make(chan struct{})}
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(binaryEnv(), env...)
	cmd.Stdout, cmd.Stderr = &tm.stdout, &tm.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if ttyStdin {
		cmd.Stdin = tty
		cmd.SysProcAttr.Ctty = 0
	} else {
		cmd.Stdin = bytes.NewReader(stdin)
		cmd.ExtraFiles = []*os.File{tty} // fd 3
		cmd.SysProcAttr.Ctty = 3
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tm.cmd = cmd
	tty.Close()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			tm.mu.Lock()
			tm.screen.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { tm.err = cmd.Wait(); close(tm.done) }()
	t.Cleanup(func() {
		select {
		case <-tm.done:
		default:
			cmd.Process.Kill()
			<-tm.done
		}
	})
	return tm
}

// waitFor waits until the screen shows s after offset from, and returns the
// offset past it.
func (tm *terminal) waitFor(from int, s string) (string, int) {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		screen := tm.text()
		if i := strings.Index(screen[from:], s); i >= 0 {
			return screen[from : from+i], from + i + len(s)
		}
		select {
		case <-tm.done:
			tm.t.Fatalf("conduit exited before showing %q\nscreen:\n%s\nstderr:\n%s", s, screen, tm.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	tm.t.Fatalf("the screen never showed %q:\n%s", s, tm.text())
	return "", 0
}

// text is what the screen shows so far.
func (tm *terminal) text() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.screen.String()
}

func (tm *terminal) typeLine(s string) {
	tm.t.Helper()
	if _, err := tm.master.Write([]byte(s + "\n")); err != nil {
		tm.t.Fatal(err)
	}
}

func (tm *terminal) wait() result {
	tm.t.Helper()
	select {
	case <-tm.done:
	case <-time.After(60 * time.Second):
		tm.t.Fatal("conduit did not exit")
	}
	r := result{stdout: tm.stdout.String(), stderr: tm.stderr.String()}
	if ee, ok := tm.err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if tm.err != nil {
		tm.t.Fatal(tm.err)
	}
	return r
}

// answerPrompts answers each approval prompt by the tool it names.
func (tm *terminal) answerPrompts(n int, answers map[string]string) {
	tm.t.Helper()
	off := 0
	for range n {
		var before string
		before, off = tm.waitFor(off, "Allow? [a]llow, [d]eny, deny and [h]alt: ")
		answered := false
		for tool, a := range answers {
			if strings.Contains(before, tool) {
				tm.typeLine(a)
				answered = true
				break
			}
		}
		if !answered {
			tm.t.Fatalf("a prompt for no expected tool:\n%s", before)
		}
	}
}

func TestExecPromptsOnTerminal(t *testing.T) {
	dir := demoDir(t)
	resp := filepath.Join(dir, "resp.json")
	os.WriteFile(resp, turn(t, "2-openai-chat.json"), 0o644)
	// stdin is the terminal, so --approve defaults to ask.
	tm := startTerminal(t, dir, true, nil, nil, "exec", "--provider", "openai-chat", "--response", resp)
	tm.answerPrompts(2, map[string]string{"notes__delete_note": "d", "notes__add_note": "a"})
	r := tm.wait()
	expect(t, r, 0)
	var out execOut
	decode(t, r, &out)
	if out.Halted || !strings.Contains(out.Results[0]["content"].(string), "The user denied this call") ||
		out.Results[1]["content"] != "Added note n4 (Pasta shopping)." {
		t.Errorf("results %v\nscreen:\n%s", out.Results, tm.text())
	}
}

func TestExecPromptWithResponseOnStdin(t *testing.T) {
	dir := demoDir(t)
	// The response comes on stdin, so the prompt must read /dev/tty. A
	// halt stops the other call of the batch from being sent.
	tm := startTerminal(t, dir, false, turn(t, "2-openai-chat.json"), nil, "exec", "--provider", "openai-chat", "--approve", "ask")
	_, off := tm.waitFor(0, "Allow? ")
	tm.typeLine("what")
	_, _ = tm.waitFor(off, "answer a, d or h")
	tm.typeLine("h")
	r := tm.wait()
	expect(t, r, 0, "halted")
	var out execOut
	decode(t, r, &out)
	if !out.Halted {
		t.Fatalf("not halted: %s", r)
	}
	for i, res := range out.Results {
		if !strings.HasPrefix(res["content"].(string), "Error: ") {
			t.Errorf("result %d was not refused: %v", i, res)
		}
	}
	if strings.Count(tm.text(), "Allow? ") != 2 {
		t.Errorf("after a halt, conduit asked again:\n%s", tm.text())
	}
}

func TestAgentHaltOnTerminal(t *testing.T) {
	p := adapters.Anthropic
	f := agenttest.New(t, p, model,
		agenttest.ToolTurn(p, agenttest.Call{ID: "c1", Name: "notes__add_note", Args: map[string]any{"title": "t", "body": "b"}}),
		agenttest.TextTurn(p, "never asked for"))
	tm := startTerminal(t, demoDir(t), true, nil, []string{p.Wire().KeyEnv + "=" + agenttest.Key},
		"agent", "--provider", "anthropic", "--model", model, "--base-url", f.URL, "save a note")
	tm.answerPrompts(1, map[string]string{"notes__add_note": "h"})
	r := tm.wait()
	expect(t, r, 1, "halted")
	if n := len(f.Requests()); n != 1 {
		t.Errorf("%d requests after a halt", n)
	}
}
