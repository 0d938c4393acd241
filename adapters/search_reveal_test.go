package adapters_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
)

// Several searches in one response run concurrently, yet what they find
// joins the list in the model's order of the calls, every time: the list
// is the one the same searches make one a turn.
func TestSearchRevealOrder(t *testing.T) {
	hub, _ := catalogHub(t, hubOpts{})
	queries := []string{"kubernetes pods", "slack message", "pull request", "database table", "read a file", "delete", "branch commit", "pods logs"}
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			opts := func(conc int) *adapters.ConversationOptions {
				return &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{MaxConcurrency: conc},
					Search: adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: true, AlwaysLoaded: []string{"db/query"}, Limit: 3}}
			}
			// One search a turn: the order the property is defined by.
			seq := newConv(t, hub, p, opts(1))
			var want []string
			for i, q := range queries {
				exec, err := seq.Execute(context.Background(), script(p, scripted{id: fmt.Sprintf("s%d", i), name: "search_tools", args: map[string]any{"query": q}}))
				if err != nil || exec.Errors[0] != nil {
					t.Fatal(err, exec.Errors)
				}
				want = append(want, exec.Revealed...)
			}
			if len(want) < 12 {
				t.Fatalf("the searches revealed only %v", want)
			}
			var calls []scripted
			for i, q := range queries {
				calls = append(calls, scripted{id: fmt.Sprintf("s%d", i), name: "search_tools", args: map[string]any{"query": q}})
			}
			for run := range 20 {
				conv := newConv(t, hub, p, opts(len(queries)))
				first := conv.Tools()
				exec, err := conv.Execute(context.Background(), script(p, calls...))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(exec.Revealed, want) || !slices.Equal(conv.Listing().Revealed, want) {
					t.Fatalf("run %d revealed %v, want %v", run, exec.Revealed, want)
				}
				if canon(conv.Tools()) != canon(seq.Tools()) {
					t.Fatalf("run %d: the list differs from the one searched a turn at a time:\n%v\n%v", run, toolNames(conv.Tools()), toolNames(seq.Tools()))
				}
				assertPrefix(t, first, conv.Tools())
			}
		})
	}
}

// A tool that a Tainted rule denies is not found once that taint is the
// conversation's, though it was listed when the conversation began; the
// same search without the taint finds it.
func TestSearchRespectsTaint(t *testing.T) {
	hub, cat := catalogHub(t, hubOpts{policy: conduit.NewPolicy(
		conduit.Deny("db/*", "github/push_files").When(conduit.Tainted("slack")),
		conduit.Allow("*"),
	)})
	ctx := context.Background()
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			o := &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: true, AlwaysLoaded: []string{"slack/*"}, Limit: 10}}
			clean := newConv(t, hub, p, o)
			tainted := newConv(t, hub, p, o)
			// slack's output reaches the model of one of them.
			exec, err := tainted.Execute(ctx, script(p, scripted{id: "c1", name: "slack__list_channels", args: map[string]any{}}))
			if err != nil || exec.Errors[0] != nil || !slices.Equal(tainted.Taint(), []string{"slack"}) {
				t.Fatalf("slack call: %v %v, taint %v", err, exec.Errors, tainted.Taint())
			}
			search := script(p, scripted{id: "s1", name: "search_tools", args: map[string]any{"query": "database tables query backup"}},
				scripted{id: "s2", name: "search_tools", args: map[string]any{"query": "push files to a repository"}})
			found, err := clean.Execute(ctx, search)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(found.Revealed, "db__list_tables") || !slices.Contains(found.Revealed, "github__push_files") {
				t.Fatalf("without the taint the search found %v", found.Revealed)
			}
			exec, err = tainted.Execute(ctx, search)
			if err != nil || exec.Errors[0] != nil || exec.Errors[1] != nil {
				t.Fatal(err, exec.Errors)
			}
			denied := func(name string) bool { return strings.HasPrefix(name, "db__") || name == "github__push_files" }
			for _, name := range exec.Revealed {
				if denied(name) {
					t.Errorf("with slack's taint the search revealed %s", name)
				}
			}
			for _, res := range exec.Results {
				for _, name := range found.Revealed {
					if denied(name) && strings.Contains(answerText(res), name) {
						t.Errorf("with slack's taint the answer names %s: %s", name, answerText(res))
					}
				}
			}
			for _, name := range toolNames(tainted.Tools()) {
				if denied(name) {
					t.Errorf("%s is listed", name)
				}
			}
			// Still a search result for the rest: the limit is filled with
			// what the policy allows.
			if len(exec.Revealed) == 0 {
				t.Error("the tainted searches found nothing")
			}
			if got := cat.calls(); slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "db/") }) {
				t.Errorf("sent %v", got)
			}
		})
	}
}

// Reveals carried to another Conversation (another process) are offered
// from its first turn, in their order, after the always-loaded tools and
// the search tool: the list is the one the first Conversation offers.
// Names it cannot offer are left out with a warning.
func TestSearchRevealedCarried(t *testing.T) {
	hub, _ := guestHub(t)
	ctx := context.Background()
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			so := adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: true, AlwaysLoaded: []string{"db/query"}, Limit: 2}
			first := newConv(t, hub, p, &adapters.ConversationOptions{Search: so, TurnOptions: adapters.TurnOptions{Principal: "guest"}})
			for i, q := range []string{"kubernetes pods", "slack message"} {
				if _, err := first.Execute(ctx, script(p, scripted{id: fmt.Sprintf("s%d", i), name: "search_tools", args: map[string]any{"query": q}})); err != nil {
					t.Fatal(err)
				}
			}
			revealed := first.Listing().Revealed
			if len(revealed) != 4 {
				t.Fatalf("revealed %v", revealed)
			}
			so.Revealed = append(slices.Clone(revealed), "db__query", revealed[0], "db__drop_database", "nope__nothing")
			next := newConv(t, hub, p, &adapters.ConversationOptions{Search: so, TurnOptions: adapters.TurnOptions{Principal: "guest"}})
			if canon(next.Tools()) != canon(first.Tools()) {
				t.Errorf("carried: %v, want %v", toolNames(next.Tools()), toolNames(first.Tools()))
			}
			l := next.Listing()
			if !slices.Equal(l.Revealed, revealed) {
				t.Errorf("Revealed %v, want %v", l.Revealed, revealed)
			}
			var left []string
			for _, w := range l.Warnings {
				if strings.Contains(w.Message, "revealed by an earlier search") {
					left = append(left, w.Tool)
				}
			}
			if !slices.Equal(left, []string{"db__drop_database", "nope__nothing"}) {
				t.Errorf("warned of %v", left)
			}
			// A call of a carried tool resolves.
			exec, err := next.Execute(ctx, script(p, scripted{id: "c1", name: revealed[0], args: map[string]any{"input": "x"}}))
			if err != nil || exec.Errors[0] != nil {
				t.Errorf("a call of %s: %v %v", revealed[0], err, exec.Errors)
			}
		})
	}
}
