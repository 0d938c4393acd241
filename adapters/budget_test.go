package adapters_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/identitytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reportLine is line n of a report tool's text.
func reportLine(n int) string { return fmt.Sprintf("line %d of the report: all is well", n) }

// reportHub is a hub of servers, each offering report ("lines" lines of
// text; "width" makes one line of that many bytes instead) and recording
// the calls it receives, under policy (AllowAll when nil).
func reportHub(t *testing.T, policy *conduit.Policy, servers ...conduit.Server) (*conduit.Hub, func() int) {
	t.Helper()
	return reportHubWith(t, &conduit.Options{Policy: policy}, servers...)
}

// reportHubWith is reportHub with the hub's options o (AllowAll when
// o.Policy is nil).
func reportHubWith(t *testing.T, o *conduit.Options, servers ...conduit.Server) (*conduit.Hub, func() int) {
	t.Helper()
	var mu sync.Mutex
	received := 0
	for i := range servers {
		srv := mcp.NewServer(&mcp.Implementation{Name: servers[i].ID, Version: "1.0.0"}, nil)
		srv.AddTool(&mcp.Tool{Name: "report", Description: "Reports at length.", InputSchema: map[string]any{"type": "object"}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				mu.Lock()
				received++
				mu.Unlock()
				var a struct{ Lines, Width int }
				json.Unmarshal(req.Params.Arguments, &a)
				var b strings.Builder
				if a.Width > 0 {
					b.WriteString(strings.Repeat("abcdefghij", a.Width/10))
				}
				for n := 1; n <= a.Lines; n++ {
					b.WriteString(reportLine(n) + "\n")
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, nil
			})
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		servers[i].Transport = ct
	}
	ho := *o
	if ho.Policy == nil {
		ho.Policy = conduit.AllowAll()
	}
	ho.Reconnect = conduit.Backoff{Disabled: true}
	if ho.Store == nil {
		ho.Store = memoryStore(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hub, err := conduit.NewHub(ctx, servers, &ho)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	return hub, func() int {
		mu.Lock()
		defer mu.Unlock()
		return received
	}
}

func turn(t *testing.T, conv *adapters.Conversation, p adapters.Provider, calls ...scripted) *adapters.Execution {
	t.Helper()
	exec, err := conv.Execute(context.Background(), script(p, calls...))
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

// TestBudgetLevels: a call's own budget takes the place of its
// server's, which takes the place of the conversation's, which takes the
// place of the default; negative is none at every level.
func TestBudgetLevels(t *testing.T) {
	hub, _ := reportHub(t, nil, conduit.Server{ID: "small", MaxResultTokens: 500}, conduit.Server{ID: "plain"},
		conduit.Server{ID: "whole", MaxResultTokens: -1})
	p := adapters.OpenAIChat
	big := map[string]any{"lines": 3000}
	o := &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Budget: adapters.BudgetOptions{MaxTurnTokens: -1, CallTokens: func(c toolcall.Call) int {
		switch c.ID {
		case "own":
			return 300
		case "none":
			return -1
		}
		return 0
	}}}}
	o.Answers.MaxResultTokens = 2000
	exec := turn(t, newConv(t, hub, p, o), p,
		scripted{id: "server", name: "small__report", args: big},
		scripted{id: "conversation", name: "plain__report", args: big},
		scripted{id: "own", name: "small__report", args: big},
		scripted{id: "none", name: "plain__report", args: big},
		scripted{id: "server-none", name: "whole__report", args: big},
	)
	for i, want := range []int{500, 2000, 300, 0, 0} {
		b := exec.Budgets[i]
		if b.Budget != want || b.Cut != (want > 0) || (want > 0 && b.Kept > want) || b.Tokens < 30000 {
			t.Errorf("call %d: %+v, want a budget of %d", i, b, want)
		}
		if text := resultText(p, exec.Results[i]); strings.Contains(text, "[conduit: the result was cut") != (want > 0) {
			t.Errorf("call %d: the notice is there: %v", i, want > 0)
		}
	}
	// The default, in a conversation that sets nothing.
	exec = turn(t, newConv(t, hub, p, nil), p, scripted{id: "default", name: "plain__report", args: map[string]any{"lines": 4000}})
	if b := exec.Budgets[0]; b.Budget != adapters.DefaultMaxResultTokens || !b.Cut {
		t.Errorf("the default: %+v", b)
	}
}

// TestBudgetReported: a result over the warning threshold is reported
// to Trace and the Logger, cut or not; a small one is not; Execution
// has every answer's figures.
func TestBudgetReported(t *testing.T) {
	hub, _ := reportHub(t, nil, conduit.Server{ID: "r"})
	var mu sync.Mutex
	var traced []adapters.ResultBudgetInfo
	var logged []string
	logger := slog.New(handlerFunc(func(r slog.Record) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, r.Message)
	}))
	o := &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Logger: logger, Trace: &adapters.Trace{
		ResultBudget: func(i adapters.ResultBudgetInfo) {
			mu.Lock()
			defer mu.Unlock()
			traced = append(traced, i)
		}}}}
	p := adapters.Anthropic
	exec := turn(t, newConv(t, hub, p, o), p,
		scripted{id: "small", name: "r__report", args: map[string]any{"lines": 3}},
		scripted{id: "large", name: "r__report", args: map[string]any{"lines": 1200}},
		scripted{id: "huge", name: "r__report", args: map[string]any{"lines": 5000}},
	)
	if len(traced) != 2 || traced[0].Call.ID != "large" || traced[0].Budgeted.Cut || traced[0].Budgeted.Tokens <= adapters.DefaultWarnTokens ||
		traced[1].Call.ID != "huge" || !traced[1].Budgeted.Cut || traced[1].Context == nil {
		t.Fatalf("traced %+v", traced)
	}
	if len(logged) != 2 || logged[0] != "conduit: a large tool result" || logged[1] != "conduit: a tool result was cut to its budget" {
		t.Fatalf("logged %q", logged)
	}
	if b := exec.Budgets[0]; b.Cut || b.Tokens == 0 || b.Kept != b.Tokens || b.Budget != adapters.DefaultMaxResultTokens {
		t.Fatalf("the small one: %+v", b)
	}
}

type handlerFunc func(slog.Record)

func (h handlerFunc) Enabled(context.Context, slog.Level) bool      { return true }
func (h handlerFunc) Handle(_ context.Context, r slog.Record) error { h(r); return nil }
func (h handlerFunc) WithAttrs([]slog.Attr) slog.Handler            { return h }
func (h handlerFunc) WithGroup(string) slog.Handler                 { return h }

// TestReadToolPolicy: a deny rule for conduit/read_result hides the tool
// (the notice then says to ask for less) and a call of it is an unknown
// tool; a rule that denies it with taint refuses it once the
// conversation is tainted. Nothing is sent to a server either way.
func TestReadToolPolicy(t *testing.T) {
	p := adapters.Anthropic
	big := map[string]any{"lines": 3000}
	read := func(ref string) scripted {
		return scripted{id: "read", name: adapters.ReadToolName, args: map[string]any{"result": ref}}
	}

	hub, received := reportHub(t, conduit.NewPolicy(conduit.Deny("conduit/read_result"), conduit.Allow("*")), conduit.Server{ID: "r"})
	o := &adapters.ConversationOptions{Read: adapters.ReadOptions{On: true}}
	o.Answers.MaxResultTokens = 1000
	conv := newConv(t, hub, p, o)
	l := conv.Listing()
	if _, ok := l.ToolSet.Lookup(adapters.ReadToolName); ok || strings.Contains(fmt.Sprint(conv.Tools()), adapters.ReadToolName) {
		t.Fatal("read_result is offered against the policy")
	}
	if w := fmt.Sprint(l.Warnings); !strings.Contains(w, "not offered: the policy denies conduit/read_result") {
		t.Fatalf("warnings %s", w)
	}
	exec := turn(t, conv, p, scripted{id: "big", name: "r__report", args: big})
	if b := exec.Budgets[0]; !b.Cut || b.Ref != "" || !strings.Contains(resultText(p, exec.Results[0]), "Ask for less") {
		t.Fatalf("cut without the read tool: %+v", b)
	}
	n := received()
	exec = turn(t, conv, p, read("R-ANY"))
	if !errors.Is(exec.Errors[0], conduit.ErrUnknownTool) || received() != n {
		t.Fatalf("a call of the hidden tool: %v", exec.Errors[0])
	}

	// Denied once tainted by r: offered, and refused after r's output.
	hub, received = reportHub(t, conduit.NewPolicy(conduit.Deny("conduit/read_result").When(conduit.Tainted("r")), conduit.Allow("*")), conduit.Server{ID: "r"})
	conv = newConv(t, hub, p, o)
	if _, ok := conv.Listing().ToolSet.Lookup(adapters.ReadToolName); !ok {
		t.Fatal("read_result is not offered before the taint")
	}
	exec = turn(t, conv, p, scripted{id: "big", name: "r__report", args: big})
	ref := exec.Budgets[0].Ref
	if ref == "" {
		t.Fatal("not kept")
	}
	n = received()
	exec = turn(t, conv, p, read(ref))
	if !errors.Is(exec.Errors[0], conduit.ErrDenied) || received() != n {
		t.Fatalf("a read once tainted: %v", exec.Errors[0])
	}
}

// TestReadToolReads: the read tool's ranges, by lines and bytes, its
// patterns, and the arguments it refuses, each answer saying where to go
// on from.
func TestReadToolReads(t *testing.T) {
	hub, _ := reportHub(t, nil, conduit.Server{ID: "r"})
	p := adapters.OpenAIChat
	o := &adapters.ConversationOptions{Read: adapters.ReadOptions{On: true}}
	o.Answers.MaxResultTokens = 1000
	conv := newConv(t, hub, p, o)
	exec := turn(t, conv, p,
		scripted{id: "lines", name: "r__report", args: map[string]any{"lines": 5000}},
		scripted{id: "wide", name: "r__report", args: map[string]any{"width": 60000, "lines": 2}},
	)
	lines, wide := exec.Budgets[0].Ref, exec.Budgets[1].Ref
	if lines == "" || wide == "" || lines == wide {
		t.Fatalf("refs %q %q", lines, wide)
	}
	for _, c := range []struct {
		name string
		args map[string]any
		want []string // in the answer, in order
		not  string
	}{
		{"from a line", map[string]any{"result": lines, "line": 4990}, []string{"[read_result: lines 4990-5000 of 5000, to the end]\n", reportLine(4990), reportLine(5000)}, "Error"},
		{"a page", map[string]any{"result": lines}, []string{"[read_result: lines 1-", "go on with line ", reportLine(1)}, reportLine(1000)},
		{"a count", map[string]any{"result": lines, "line": 10, "lines": 2}, []string{"lines 10-11 of 5000; go on with line 12]", reportLine(11) + "\n"}, reportLine(12)},
		{"past the end", map[string]any{"result": lines, "line": 6000}, []string{"Error: read_result: the result has 5000 lines; line 6000 is past its end."}, ""},
		{"a pattern", map[string]any{"result": lines, "pattern": `(?i)LINE 4999\b`}, []string{`1 lines match "(?i)LINE 4999\\b" from line 1, to the end]`, "4999: " + reportLine(4999)}, "4998"},
		{"a pattern from a line", map[string]any{"result": lines, "pattern": `^line 1`, "line": 4000}, []string{"0 lines match", "No line matches."}, ""},
		{"a pattern over pages", map[string]any{"result": lines, "pattern": `report`}, []string{"lines match", "more may follow: go on with line "}, ""},
		{"a long line cut", map[string]any{"result": wide}, []string{"[read_result: lines 1-1 of 2; line 1 is cut at byte ", ": go on with offset "}, ""},
		{"by bytes", map[string]any{"result": wide, "offset": 59990}, []string{"[read_result: bytes 59990-", "of 60", "abcdefghij" + reportLine(1)}, ""},
		{"a long line matched", map[string]any{"result": wide, "pattern": "jline 1 "}, []string{"1: …", "jline 1 of the report: all is well"}, ""},
		{"no reference", map[string]any{"line": 2}, []string{`Error: "result" is required`}, ""},
		{"a bad pattern", map[string]any{"result": lines, "pattern": `(a`}, []string{`Error: "pattern" is not a regular expression conduit can run`}, ""},
		{"a backreference", map[string]any{"result": lines, "pattern": `(a)\1`}, []string{"Error: "}, ""},
		{"a long pattern", map[string]any{"result": lines, "pattern": strings.Repeat("a", 1001)}, []string{`Error: "pattern" is longer than 1000 bytes`}, ""},
		{"both", map[string]any{"result": lines, "pattern": "a", "offset": 3}, []string{`Error: give "pattern" or "offset", not both`}, ""},
		{"a bad line", map[string]any{"result": lines, "line": 0}, []string{`Error: "line" must be a whole number, at least 1.`}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			exec := turn(t, conv, p, scripted{id: "read", name: adapters.ReadToolName, args: c.args})
			text := resultText(p, exec.Results[0])
			at := 0
			for _, w := range c.want {
				i := strings.Index(text[at:], w)
				if i < 0 {
					t.Fatalf("%q is not in the answer (after %d): %.400q", w, at, text)
				}
				at += i + len(w)
			}
			if c.not != "" && strings.Contains(text, c.not) {
				t.Fatalf("%q is in the answer: %.400q", c.not, text)
			}
			if exec.Budgets[0].Cut {
				t.Fatalf("a read was cut: %+v", exec.Budgets[0])
			}
		})
	}
}

// TestReadKeeper: the memory keeper holds at most its bound, the least
// recently kept or read dropped first; a Conversation restored from its
// state with a shared Keeper reads its results, as one carried into
// another process would with a keeper shared by processes; another
// conversation on that keeper, and one without it, find them gone.
func TestReadKeeper(t *testing.T) {
	ctx := context.Background()
	k := adapters.NewMemoryKeeper(100)
	for _, ref := range []string{"a", "b"} {
		if err := k.Keep(ctx, ref, strings.Repeat(ref, 40)); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := k.Load(ctx, "a"); !ok { // a is now the most recently used
		t.Fatal("a is not kept")
	}
	if err := k.Keep(ctx, "c", strings.Repeat("c", 40)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := k.Load(ctx, "b"); ok {
		t.Fatal("b, the least recently used, is still kept")
	}
	if text, ok, _ := k.Load(ctx, "a"); !ok || text != strings.Repeat("a", 40) {
		t.Fatal("a was dropped")
	}
	if err := k.Keep(ctx, "d", strings.Repeat("d", 101)); !errors.Is(err, adapters.ErrTooLarge) {
		t.Fatalf("a text over the bound: %v", err)
	}

	hub, _ := reportHub(t, nil, conduit.Server{ID: "r"})
	p := adapters.Gemini
	shared := adapters.NewMemoryKeeper(0)
	o := &adapters.ConversationOptions{Read: adapters.ReadOptions{On: true, Keeper: shared}, State: adapters.StateOptions{Keys: [][]byte{testKey}}}
	o.Answers.MaxResultTokens = 1000
	first := newConv(t, hub, p, o)
	exec := turn(t, first, p, scripted{id: "big", name: "r__report", args: map[string]any{"lines": 3000}})
	ref := exec.Budgets[0].Ref
	read := scripted{id: "read", name: adapters.ReadToolName, args: map[string]any{"result": ref, "line": 2999}}
	state, err := first.State()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := adapters.ResumeConversation(ctx, hub, p, state, o)
	if err != nil {
		t.Fatal(err)
	}
	if text := resultText(p, turn(t, restored, p, read).Results[0]); !strings.Contains(text, reportLine(2999)) {
		t.Fatalf("the shared keeper, in the conversation restored: %q", text)
	}
	// Another conversation on the same keeper, naming the reference, is
	// served nothing: the keeper's keys are each conversation's own.
	if text := resultText(p, turn(t, newConv(t, hub, p, o), p, read).Results[0]); !strings.Contains(text, "is not kept") || strings.Contains(text, reportLine(2999)) {
		t.Fatalf("another conversation on the shared keeper: %q", text)
	}
	alone := &adapters.ConversationOptions{Read: adapters.ReadOptions{On: true}}
	if text := resultText(p, turn(t, newConv(t, hub, p, alone), p, read).Results[0]); !strings.Contains(text, "is not kept") || !strings.Contains(text, "asking for less") {
		t.Fatalf("without it: %q", text)
	}

	// A result larger than the conversation's bound is not kept: its
	// notice says to ask for less.
	small := &adapters.ConversationOptions{Read: adapters.ReadOptions{On: true, MaxBytes: 1000}}
	small.Answers.MaxResultTokens = 1000
	exec = turn(t, newConv(t, hub, p, small), p, scripted{id: "big", name: "r__report", args: map[string]any{"lines": 3000}})
	if b := exec.Budgets[0]; !b.Cut || b.Ref != "" || !strings.Contains(resultText(p, exec.Results[0]), "Ask for less") {
		t.Fatalf("over the bound: %+v", b)
	}
}

// TestReadToolWithSearch: the read tool is offered beside tool search,
// conduit's and the providers' own, and reads what was cut.
func TestReadToolWithSearch(t *testing.T) {
	hub, _ := reportHub(t, nil, conduit.Server{ID: "r"})
	for _, p := range adapters.Providers() {
		for _, own := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/conduit=%v", p, !own), func(t *testing.T) {
				o := &adapters.ConversationOptions{Read: adapters.ReadOptions{On: true},
					Search: adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: !own, AlwaysLoaded: []string{"r/report"}}}
				o.Answers.MaxResultTokens = 1000
				conv := newConv(t, hub, p, o)
				l := conv.Listing()
				if _, ok := l.ToolSet.Lookup(adapters.ReadToolName); !ok || slices.Contains(l.Deferred, adapters.ReadToolName) {
					t.Fatalf("read_result is not loaded: search tool %s, deferred %v", l.SearchTool, l.Deferred)
				}
				exec := turn(t, conv, p, scripted{id: "big", name: "r__report", args: map[string]any{"lines": 3000}})
				read := scripted{id: "read", name: adapters.ReadToolName, args: map[string]any{"result": exec.Budgets[0].Ref, "line": 3000}}
				if text := resultText(p, turn(t, conv, p, read).Results[0]); !strings.Contains(text, reportLine(3000)) {
					t.Fatalf("read: %q", text)
				}
			})
		}
	}
}

// TestBudgetPerPrincipal: the budget of a server whose sessions are per
// principal (conduit.IdentityPrincipal) reaches each principal's
// Conversation, whose tools are listed from that principal's own session,
// fresh or cached.
func TestBudgetPerPrincipal(t *testing.T) {
	ids := identitytest.NewHTTP(map[string]string{"tok-alice-0123456789": "alice", "tok-bob-0123456789": "bob"})
	hs := httptest.NewServer(ids)
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{
		ID: "gh", URL: hs.URL, Identity: conduit.IdentityPrincipal, MaxResultTokens: 3,
		Principals: map[string]conduit.Credentials{
			"alice": {Headers: map[string]string{"Authorization": "Bearer tok-alice-0123456789"}},
			"bob":   {Headers: map[string]string{"Authorization": "Bearer tok-bob-0123456789"}},
		},
	}}, &conduit.Options{Policy: conduit.AllowAll(), Reconnect: conduit.Backoff{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	p := adapters.Anthropic
	for _, who := range []string{"alice", "bob", "alice"} { // alice's second listing is her session's cached one
		conv := newConv(t, hub, p, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Principal: who}})
		if tool, ok := conv.Listing().ToolSet.Lookup("gh__note"); !ok || tool.MaxResultTokens != 3 {
			t.Fatalf("%s's listing: %+v", who, tool)
		}
		exec := turn(t, conv, p,
			scripted{id: "whoami", name: "gh__whoami", args: map[string]any{}},
			scripted{id: "note", name: "gh__note", args: map[string]any{"text": "a note"}})
		if b := exec.Budgets[0]; b.Budget != 3 || b.Cut || resultText(p, exec.Results[0]) != who {
			t.Errorf("%s's whoami: %+v %q", who, b, resultText(p, exec.Results[0]))
		}
		if b := exec.Budgets[1]; b.Budget != 3 || !b.Cut || !strings.Contains(resultText(p, exec.Results[1]), "[conduit: the result was cut") {
			t.Errorf("%s's note, over the server's budget: %+v %q", who, b, resultText(p, exec.Results[1]))
		}
	}
}
