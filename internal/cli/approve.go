package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit"
)

// approveFlag is --approve: how the policy's "ask" rules are decided.
type approveFlag struct{ mode string }

func (a *approveFlag) register(fs *flagSet) {
	usage := "the `mode` for the policy's \"ask\" rules: ask (prompt on the terminal; the default when stdin is a terminal), allow, or deny (the default otherwise)"
	if fs.cmd == "exec" {
		usage += "; defer (with --state) leaves them pending, for 'conduit resume'"
	}
	fs.StringVar(&a.mode, "approve", "", usage)
}

// approver returns the approver for the mode, and a func that releases the
// terminal. A prompt reads the terminal itself (/dev/tty), never stdin,
// which may carry the response being executed.
func (a *approveFlag) approver(cmd string, env *Env) (conduit.Approver, func(), error) {
	mode := a.mode
	if mode == "" {
		mode = "deny"
		if env.StdinTerminal && env.OpenTTY != nil {
			mode = "ask"
		}
	}
	switch mode {
	case "allow":
		return func(_ context.Context, req conduit.ApprovalRequest) conduit.Approval {
			fmt.Fprintf(env.Stderr, "conduit: %s approved by --approve allow (%s)\n", req.Call.Exposed, req.Rule)
			return conduit.Approve()
		}, func() {}, nil
	case "deny":
		explicit := a.mode != ""
		return func(_ context.Context, req conduit.ApprovalRequest) conduit.Approval {
			why := "no terminal to ask on"
			if explicit {
				why = "--approve deny"
			}
			fmt.Fprintf(env.Stderr, "conduit: %s needs approval (%s); denied: %s\n", req.Call.Exposed, req.Rule, why)
			return conduit.Reject("It needs the user's approval, and none could be asked for.")
		}, func() {}, nil
	case "defer":
		if cmd != "exec" {
			break
		}
		return func(_ context.Context, req conduit.ApprovalRequest) conduit.Approval {
			fmt.Fprintf(env.Stderr, "conduit: %s needs approval (%s); deferred (--approve defer)\n", req.Call.Exposed, req.Rule)
			return conduit.Defer("--approve defer: decide it with conduit resume")
		}, func() {}, nil
	case "ask":
		if env.OpenTTY == nil {
			return nil, nil, usageError(cmd, "--approve ask needs a terminal; use --approve allow or --approve deny")
		}
		tty, err := env.OpenTTY()
		if err != nil {
			return nil, nil, usageError(cmd, "--approve ask needs a terminal (%v); use --approve allow or --approve deny", err)
		}
		p := &prompter{tty: tty, lines: make(chan string), done: make(chan struct{})}
		go p.read()
		return p.approve, func() { close(p.done); tty.Close() }, nil
	}
	if cmd == "exec" {
		return nil, nil, usageError(cmd, "--approve is ask, allow, deny or defer, not %q", a.mode)
	}
	return nil, nil, usageError(cmd, "--approve is ask, allow or deny, not %q", a.mode)
}

// prompter asks the person at the terminal, one call at a time. The calls of
// a turn run concurrently, but their questions must not interleave.
type prompter struct {
	tty   io.ReadWriteCloser
	lines chan string
	done  chan struct{}
	mu    sync.Mutex
	// halted is set once the person chose to halt: later questions of the
	// batch are answered without asking.
	halted bool
	eof    bool
}

func (p *prompter) read() {
	sc := bufio.NewScanner(p.tty)
	defer close(p.lines)
	for sc.Scan() {
		select {
		case p.lines <- sc.Text():
		case <-p.done:
			return
		}
	}
}

func (p *prompter) approve(ctx context.Context, req conduit.ApprovalRequest) conduit.Approval {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.halted {
		return conduit.RejectAndHalt("The user stopped the agent.")
	}
	if p.eof {
		return conduit.Reject("The user could not be asked.")
	}
	args, _ := json.Marshal(req.Call.Args)
	fmt.Fprintf(p.tty, "\nconduit: the policy asks before this call (%s)\n  %s %s\n", req.Rule, req.Call.Exposed, args)
	if len(req.Call.Taint) > 0 {
		fmt.Fprintf(p.tty, "  the conversation already holds output from: %s\n", strings.Join(req.Call.Taint, ", "))
	}
	for {
		fmt.Fprint(p.tty, "Allow? [a]llow, [d]eny, deny and [h]alt: ")
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			fmt.Fprintln(p.tty, "\nconduit: no answer in time; denied")
			return conduit.Reject("The user did not answer in time.")
		case line, ok = <-p.lines:
		}
		if !ok {
			p.eof = true
			fmt.Fprintln(p.tty, "\nconduit: no answer; denied")
			return conduit.Reject("The user could not be asked.")
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "allow", "y", "yes":
			return conduit.Approve()
		case "d", "deny", "n", "no":
			return conduit.Reject("The user denied this call.")
		case "h", "halt", "q", "quit", "stop":
			p.halted = true
			return conduit.RejectAndHalt("The user denied this call and stopped the agent.")
		}
		fmt.Fprintln(p.tty, "  answer a, d or h")
	}
}
