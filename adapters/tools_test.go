package adapters_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func names(p adapters.Provider, tools []map[string]any) []string {
	var out []string
	for _, t := range tools {
		if fn, ok := t["function"].(map[string]any); ok {
			out = append(out, fn["name"].(string))
		} else if spec, ok := t["toolSpec"].(map[string]any); ok {
			out = append(out, spec["name"].(string))
		} else {
			out = append(out, t["name"].(string))
		}
	}
	return out
}

// Only tools in the tool set are listed, in its order: not those a filter
// hides, nor a down server's, nor those the policy denies outright.
func TestToolsOnlyTheToolSet(t *testing.T) {
	hub, _, gone := labHub(t, hubOpts{
		filter: func(server string, tool *mcp.Tool) bool { return tool.Name != "long" },
		policy: conduit.NewPolicy(conduit.Deny("lab/secret").When(conduit.Principal("guest")), conduit.Allow("*")),
	})
	takeDown(t, hub, gone)
	for _, p := range adapters.Providers() {
		l, err := adapters.Tools(context.Background(), hub, p, &adapters.ToolsOptions{Principal: "guest"})
		if err != nil {
			t.Fatal(err)
		}
		got := names(p, l.Tools)
		var want []string
		for tool := range l.ToolSet.All() {
			want = append(want, tool.Exposed)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v: listed %v, tool set %v", p, got, want)
		}
		if !slices.IsSorted(got) {
			t.Errorf("%v: not in the tool set's order: %v", p, got)
		}
		for _, absent := range []string{"lab__long", "lab__secret", "gone__ping"} {
			if slices.Contains(got, absent) {
				t.Errorf("%v: %s is listed", p, absent)
			}
		}
		if !slices.Contains(got, "lab__echo") {
			t.Errorf("%v: lab__echo is missing", p)
		}
		// A second listing is identical (prompt caching).
		again, _ := adapters.Tools(context.Background(), hub, p, &adapters.ToolsOptions{Principal: "guest"})
		if canon(again.Tools) != canon(l.Tools) {
			t.Errorf("%v: listings differ", p)
		}
	}
	// Another principal sees lab/secret.
	l, _ := adapters.Tools(context.Background(), hub, adapters.Gemini, &adapters.ToolsOptions{Principal: "ada"})
	if !slices.Contains(names(adapters.Gemini, l.Tools), "lab__secret") {
		t.Error("ada does not see lab__secret")
	}
}

func TestStrictFallbackEvent(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	var events []string
	var logs bytes.Buffer
	o := &adapters.ToolsOptions{Trace: &adapters.Trace{StrictFallback: func(f adapters.StrictFallbackInfo) {
		if !errors.Is(f.Err, driver.ErrNotStrict) {
			t.Errorf("fallback error %v", f.Err)
		}
		events = append(events, f.Tool)
	}}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	for _, p := range []adapters.Provider{adapters.OpenAIChat, adapters.OpenAIResponses} {
		events = nil
		l, err := adapters.Tools(context.Background(), hub, p, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(events, []string{"lab__pick"}) || !slices.Equal(l.Fallbacks, events) {
			t.Errorf("%v: events %v, fallbacks %v", p, events, l.Fallbacks)
		}
	}
	if !strings.Contains(logs.String(), "strict mode fallback") || !strings.Contains(logs.String(), "lab__pick") {
		t.Errorf("log: %s", logs.String())
	}
	// No event under StrictOn (the tool is excluded) or StrictOff, nor for
	// other providers.
	events = nil
	for _, s := range []driver.StrictMode{driver.StrictOn, driver.StrictOff} {
		o.Listing.Strict = s
		l, _ := adapters.Tools(context.Background(), hub, adapters.OpenAIChat, o)
		if s == driver.StrictOn && !slices.Equal(l.Excluded, []string{"lab__pick"}) {
			t.Errorf("excluded %v", l.Excluded)
		}
	}
	o.Listing.Strict = driver.StrictAuto
	adapters.Tools(context.Background(), hub, adapters.Anthropic, o)
	if events != nil {
		t.Errorf("events %v", events)
	}
}

func TestWarnings(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	l, _ := adapters.Tools(context.Background(), hub, adapters.Anthropic, nil)
	if len(l.Warnings) != 1 || l.Warnings[0].Tool != "lab__pick" || !strings.Contains(l.Warnings[0].Message, "anyOf") {
		t.Errorf("anthropic warnings %v", l.Warnings)
	}
	// Too many tools for OpenAI.
	var tools []*mcp.Tool
	for i := range 130 {
		tools = append(tools, &mcp.Tool{Name: "t" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26)), InputSchema: map[string]any{"type": "object"}})
	}
	ts := conduit.NewToolSet(nil, conduit.ServerTools{Server: "big", Tools: tools})
	for _, p := range []adapters.Provider{adapters.OpenAIChat, adapters.OpenAIResponses} {
		l, err := adapters.ListToolSet(ts, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Tools) != 130 || len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0].Message, "at most 128") {
			t.Errorf("%v: %d tools, warnings %v", p, len(l.Tools), l.Warnings)
		}
	}
	if l, _ := adapters.ListToolSet(ts, adapters.Gemini, nil); l.Warnings != nil {
		t.Errorf("gemini warnings %v", l.Warnings)
	}
}

func TestProviders(t *testing.T) {
	for _, p := range adapters.Providers() {
		q, err := adapters.ParseProvider(strings.ToUpper(p.String()))
		if err != nil || q != p {
			t.Errorf("%v: %v %v", p, q, err)
		}
	}
	if _, err := adapters.ParseProvider("mistral"); err == nil {
		t.Error("no error")
	}
	if got := (adapters.Provider{}).String(); got != "Provider(none)" {
		t.Error(got)
	}
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	if _, err := adapters.Tools(context.Background(), hub, adapters.Provider{}, nil); err == nil {
		t.Error("Tools with an invalid provider")
	}
	if _, err := adapters.ExecuteToolCalls(context.Background(), hub, adapters.Provider{}, "{}", nil); err == nil {
		t.Error("ExecuteToolCalls with an invalid provider")
	}
}

// A server that went down is a warning of every listing, for every
// provider; and a call of its tool, offered before it went down, is
// answered as unavailable (try again later), whether the calls resolve
// against the tool set offered or, as in another process, against the
// current one.
func TestServerDown(t *testing.T) {
	hub, _, gone := labHub(t, hubOpts{})
	ctx := context.Background()
	conv, err := adapters.NewConversation(ctx, hub, adapters.Anthropic, nil)
	if err != nil {
		t.Fatal(err)
	}
	takeDown(t, hub, gone)
	for _, p := range adapters.Providers() {
		l, err := adapters.Tools(ctx, hub, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Warnings) == 0 || l.Warnings[0].Tool != "" || !strings.HasPrefix(l.Warnings[0].Message, "server gone is down, so its tools are not offered") {
			t.Errorf("%v: warnings %+v", p, l.Warnings)
		}
	}
	response := script(adapters.Anthropic, scripted{id: "a", name: "gone__ping", args: map[string]any{}})
	later, err := conv.Execute(ctx, response)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := run(t, hub, adapters.Anthropic, response, nil)
	for _, exec := range []*adapters.Execution{later, elsewhere} {
		if !errors.Is(exec.Errors[0], conduit.ErrUnavailable) || !strings.Contains(exec.Errors[0].Error(), "try again later") {
			t.Errorf("answer %v", exec.Errors[0])
		}
	}
}
