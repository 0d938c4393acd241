package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
)

func testEnv(stdin string) (*Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}, &out, &errb
}

func TestParseInterspersed(t *testing.T) {
	env, _, _ := testEnv("")
	for _, tc := range []struct {
		args      []string
		pos       []string
		principal string
	}{
		{[]string{"a", "{}", "--principal", "u"}, []string{"a", "{}"}, "u"},
		{[]string{"--principal=u", "a"}, []string{"a"}, "u"},
		{[]string{"a", "--", "--principal", "x"}, []string{"a", "--principal", "x"}, ""},
		{[]string{"-", "b"}, []string{"-", "b"}, ""},
	} {
		fs := newFlags(env, "call", "")
		p := fs.String("principal", "", "")
		pos, err := fs.parse(tc.args)
		if err != nil || !slices.Equal(pos, tc.pos) || *p != tc.principal {
			t.Errorf("%v: pos %v principal %q err %v", tc.args, pos, *p, err)
		}
	}
}

func TestMainExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		stdin string
		code  int
		want  string
	}{
		{nil, "", ExitUsage, "Usage:"},
		{[]string{"help"}, "", ExitOK, ""},
		{[]string{"nope"}, "", ExitUsage, "unknown command"},
		{[]string{"strict"}, `{"type": "object", "properties": {"a": {"type": "string"}}}`, ExitOK, ""},
		{[]string{"strict"}, `{"type": "object", "properties": {"a": {"not": {}}}}`, ExitUsage, "not convertible"},
		{[]string{"tools", "--provider", "anthropic", "--config", "/nonexistent/mcp.json"}, "", ExitUsage, "no configuration file"},
	} {
		env, _, errb := testEnv(tc.stdin)
		if code := Main(context.Background(), tc.args, env); code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d (want %d), stderr %q", tc.args, code, tc.code, errb.String())
		}
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("/dev/null is not a terminal")
	}
}

// fakeTTY is a terminal whose keys are a string and whose screen is a
// buffer.
type fakeTTY struct {
	io.Reader
	screen bytes.Buffer
}

func (f *fakeTTY) Write(p []byte) (int, error) { return f.screen.Write(p) }
func (f *fakeTTY) Close() error                { return nil }

func TestPrompter(t *testing.T) {
	tty := &fakeTTY{Reader: strings.NewReader("maybe\na\nd\nh\n")}
	env, _, _ := testEnv("")
	env.OpenTTY = func() (io.ReadWriteCloser, error) { return tty, nil }
	a := approveFlag{mode: "ask"}
	approve, release, err := a.approver("exec", env)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	req := conduit.ApprovalRequest{Call: &conduit.Call{Exposed: "notes__add_note", Args: map[string]any{"title": "t"}, Taint: []string{"web"}}, Rule: conduit.Ask("notes/*")}
	ctx := context.Background()
	if got := approve(ctx, req); !got.Allow {
		t.Errorf("a: %+v", got)
	}
	if got := approve(ctx, req); got.Allow || got.Halt {
		t.Errorf("d: %+v", got)
	}
	if got := approve(ctx, req); got.Allow || !got.Halt {
		t.Errorf("h: %+v", got)
	}
	// After a halt, nothing more is asked.
	if got := approve(ctx, req); !got.Halt {
		t.Errorf("after halt: %+v", got)
	}
	screen := tty.screen.String()
	for _, want := range []string{"notes__add_note {\"title\":\"t\"}", "ask notes/*", "output from: web", "answer a, d or h"} {
		if !strings.Contains(screen, want) {
			t.Errorf("prompt lacks %q:\n%s", want, screen)
		}
	}
	if n := strings.Count(screen, "Allow? "); n != 4 {
		t.Errorf("%d prompts:\n%s", n, screen)
	}
}

func TestPrompterTimeout(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	tty := &fakeTTY{Reader: r}
	env, _, _ := testEnv("")
	env.OpenTTY = func() (io.ReadWriteCloser, error) { return tty, nil }
	a := approveFlag{mode: "ask"}
	approve, release, err := a.approver("exec", env)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if got := approve(ctx, conduit.ApprovalRequest{Call: &conduit.Call{Exposed: "x"}}); got.Allow {
		t.Errorf("an unanswered prompt allowed: %+v", got)
	}
}

func TestDefaultApproval(t *testing.T) {
	env, _, errb := testEnv("")
	var a approveFlag
	approve, _, err := a.approver("exec", env)
	if err != nil {
		t.Fatal(err)
	}
	if got := approve(context.Background(), conduit.ApprovalRequest{Call: &conduit.Call{Exposed: "x"}}); got.Allow {
		t.Error("no terminal, yet allowed")
	}
	if !strings.Contains(errb.String(), "no terminal to ask on") {
		t.Errorf("stderr %q", errb.String())
	}
}

func TestShorten(t *testing.T) {
	got := compact(map[string]any{"a": strings.Repeat("x", 10), "b": []any{"<tag>"}}, 4)
	if got != `{"a":"xxxx…","b":["<tag…"]}` {
		t.Errorf("compact: %s", got)
	}
}
