package adapters_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
)

// A conversation's taint grows with the servers whose output reached the
// model, and only with them: a denied, unknown, halted or timed-out call
// adds nothing, and the taint of one turn decides the next.
func TestConversationTaint(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			hub, l, _ := labHub(t, hubOpts{policy: conduit.NewPolicy(
				conduit.Deny("lab/secret").When(conduit.Tainted("gone")),
				conduit.Ask("lab/deploy"),
				conduit.Allow("*"),
			)})
			ctx := context.Background()
			conv, err := adapters.NewConversation(ctx, hub, p, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{CallTimeout: 5 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			turn := func(calls ...scripted) *adapters.Execution {
				t.Helper()
				exec, err := conv.Execute(ctx, script(p, calls...))
				if err != nil {
					t.Fatal(err)
				}
				return exec
			}
			// Denied by the approver, unknown, not an object: no output.
			exec := turn(scripted{id: "t1a", name: "lab__deploy", args: map[string]any{}},
				scripted{id: "t1b", name: "lab__nope", args: map[string]any{}},
				scripted{id: "t1c", name: "lab__echo", args: []any{1}})
			if !errors.Is(exec.Errors[0], conduit.ErrDenied) || len(conv.Taint()) != 0 {
				t.Fatalf("turn 1: %v, taint %v", exec.Errors, conv.Taint())
			}
			// A result: gone's output is in the model's context.
			turn(scripted{id: "t2", name: "gone__ping", args: map[string]any{}})
			if got := conv.Taint(); !slices.Equal(got, []string{"gone"}) {
				t.Fatalf("turn 2: taint %v", got)
			}
			// Now lab/secret is denied, and sends nothing.
			exec = turn(scripted{id: "t3", name: "lab__secret", args: map[string]any{}})
			if !errors.Is(exec.Errors[0], conduit.ErrDenied) || slices.Contains(l.sent(), "secret") {
				t.Fatalf("turn 3: %v, sent %v", exec.Errors, l.sent())
			}
			if got := conv.Taint(); !slices.Equal(got, []string{"gone"}) {
				t.Fatalf("turn 3: taint %v", got)
			}
			// An isError result is output too.
			turn(scripted{id: "t4", name: "lab__fail", args: map[string]any{}})
			if got := conv.Taint(); !slices.Equal(got, []string{"gone", "lab"}) {
				t.Fatalf("turn 4: taint %v", got)
			}
		})
	}
}

func TestConversationTimeoutAddsNoTaint(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	ctx := context.Background()
	p := adapters.Anthropic
	conv, err := adapters.NewConversation(ctx, hub, p, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{CallTimeout: 50 * time.Millisecond, Taint: []string{"web"}}})
	if err != nil {
		t.Fatal(err)
	}
	exec, err := conv.Execute(ctx, script(p, scripted{id: "a", name: "lab__sleep", args: map[string]any{}}))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(exec.Errors[0], conduit.ErrTimeout) {
		t.Fatalf("%v, want a timeout", exec.Errors[0])
	}
	if got := conv.Taint(); !slices.Equal(got, []string{"web"}) {
		t.Fatalf("taint %v: the starting taint only", got)
	}
}

// The listing is made once: Tools is the same list every turn, whatever
// the source does meanwhile, and calls resolve against it.
func TestConversationToolsStable(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	ctx := context.Background()
	for _, p := range adapters.Providers() {
		conv, err := adapters.NewConversation(ctx, hub, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		first := canon(conv.Tools())
		tools := conv.Tools()
		tools[0] = nil // the slice is the caller's
		if canon(conv.Tools()) != first {
			t.Errorf("%v: Tools changed", p)
		}
		if conv.Listing().ToolSet.Len() != len(conv.Tools()) {
			t.Errorf("%v: listing of %d tools, Tools %d", p, conv.Listing().ToolSet.Len(), len(conv.Tools()))
		}
	}
	// A principal's conversation offers what the policy lets them see.
	ts, _ := hub.ListTools(ctx)
	conv, err := adapters.NewConversation(ctx, hub, adapters.Gemini, &adapters.ConversationOptions{
		ToolSet: ts.Filter(conduit.SkipFiltered, func(t *conduit.Tool) bool { return t.Name == "echo" })})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(adapters.Gemini, conv.Tools()); !slices.Equal(got, []string{"lab__echo"}) {
		t.Errorf("a given ToolSet: %v", got)
	}
	exec, err := conv.Execute(ctx, script(adapters.Gemini, scripted{id: "x", name: "lab__text", args: map[string]any{}}))
	if err != nil || !errors.Is(exec.Errors[0], conduit.ErrUnknownTool) {
		t.Errorf("a tool not offered: %v %v", exec, err)
	}
}

// Concurrent turns are safe (run with -race) and each adds its taint.
func TestConversationConcurrent(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{})
	ctx := context.Background()
	p := adapters.OpenAIChat
	conv, err := adapters.NewConversation(ctx, hub, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, name := range []string{"lab__echo", "gone__ping", "lab__text", "gone__ping"} {
		wg.Go(func() {
			exec, err := conv.Execute(ctx, script(p, scripted{id: "c", name: name, args: map[string]any{"message": "m"}}))
			if err != nil || exec.Errors[0] != nil {
				t.Errorf("%d: %v %v", i, err, exec.Errors)
			}
			_ = conv.Tools()
			_ = conv.Taint()
		})
	}
	wg.Wait()
	got := conv.Taint()
	slices.Sort(got)
	if !slices.Equal(got, []string{"gone", "lab"}) {
		t.Errorf("taint %v", got)
	}
}
