package main

import (
	"slices"
	"strings"
	"testing"
)

type toolsOut struct {
	Tools     []map[string]any `json:"tools"`
	Fallbacks []struct{ Tool, Reason string }
	Excluded  []struct{ Tool, Reason string }
	Warnings  []struct{ Tool, Message string }
	Hidden    []struct{ Tool, Reason string }
}

func names(tools []map[string]any) []string {
	var out []string
	for _, t := range tools {
		if fn, ok := t["function"].(map[string]any); ok {
			t = fn
		}
		out = append(out, t["name"].(string))
	}
	return out
}

var allTools = []string{"notes__add_note", "notes__delete_note", "notes__search_notes", "web__fetch", "web__screenshot"}

func TestToolsEveryProvider(t *testing.T) {
	dir := demoDir(t)
	for _, p := range []string{"anthropic", "openai-chat", "openai-responses", "gemini"} {
		t.Run(p, func(t *testing.T) {
			r := conduit(t, runOpts{dir: dir}, "tools", "--provider", p)
			expect(t, r, 0)
			var out toolsOut
			decode(t, r, &out)
			if got := names(out.Tools); !slices.Equal(got, allTools) {
				t.Fatalf("tools %v", got)
			}
			if out.Fallbacks == nil || out.Excluded == nil || out.Warnings == nil {
				t.Errorf("want empty lists, not null: %s", r.stdout)
			}
			first := out.Tools[0]
			switch p {
			case "anthropic":
				if first["input_schema"] == nil {
					t.Errorf("no input_schema: %v", first)
				}
			case "openai-chat":
				if first["type"] != "function" || first["function"].(map[string]any)["strict"] != true {
					t.Errorf("chat tool %v", first)
				}
			case "openai-responses":
				if first["type"] != "function" || first["strict"] != true {
					t.Errorf("responses tool %v", first)
				}
			case "gemini":
				if first["parametersJsonSchema"] == nil {
					t.Errorf("gemini declaration %v", first)
				}
			}
		})
	}
}

func TestToolsCacheLast(t *testing.T) {
	r := conduit(t, runOpts{dir: demoDir(t)}, "tools", "--provider", "anthropic", "--cache-last")
	expect(t, r, 0)
	var out toolsOut
	decode(t, r, &out)
	for i, tool := range out.Tools {
		if _, has := tool["cache_control"]; has != (i == len(out.Tools)-1) {
			t.Errorf("tool %d cache_control: %v", i, tool["cache_control"])
		}
	}
}

func TestToolsPrincipal(t *testing.T) {
	// Tools the policy denies outright for a principal are not offered.
	policy := []any{
		map[string]any{"deny": []string{"notes/*"}, "principal": []string{"guest"}},
		map[string]any{"allow": []string{"*"}},
	}
	dir := writeConfig(t, policy, "notes", demoServer("notes"), "web", demoServer("web"))
	r := conduit(t, runOpts{dir: dir}, "tools", "--provider", "gemini", "--principal", "guest")
	expect(t, r, 0)
	var out toolsOut
	decode(t, r, &out)
	if got := names(out.Tools); !slices.Equal(got, []string{"web__fetch", "web__screenshot"}) {
		t.Errorf("guest's tools %v", got)
	}
	// What 'conduit servers' counts and the listing leaves out is named,
	// with the rule that hides it and for whom.
	const why = `denied by the policy rule "deny notes/* (when ...)" (listing for principal "guest")`
	if len(out.Hidden) != 3 || out.Hidden[0].Tool != "notes__add_note" || out.Hidden[0].Reason != why {
		t.Errorf("hidden %+v", out.Hidden)
	}
	for _, want := range []string{"conduit: notes__add_note hidden: " + why, "conduit: notes__search_notes hidden: "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	r = conduit(t, runOpts{dir: dir}, "tools", "--provider", "gemini", "--principal", "owner")
	out = toolsOut{}
	decode(t, r, &out)
	if got := names(out.Tools); !slices.Equal(got, allTools) || len(out.Hidden) != 0 || strings.Contains(r.stderr, "hidden") {
		t.Errorf("owner's tools %v, hidden %v\n%s", got, out.Hidden, r.stderr)
	}
}

func TestToolsStrict(t *testing.T) {
	dir := demoDir(t)
	// web__fetch takes an open map of headers, which strict mode cannot
	// express.
	r := conduit(t, runOpts{dir: dir}, "tools", "--provider", "openai-chat")
	expect(t, r, 0)
	var out toolsOut
	decode(t, r, &out)
	if len(out.Fallbacks) != 1 || out.Fallbacks[0].Tool != "web__fetch" || !contains(out.Fallbacks[0].Reason, "open map") {
		t.Fatalf("fallbacks %+v", out.Fallbacks)
	}
	for _, tool := range out.Tools {
		fn := tool["function"].(map[string]any)
		if strict := fn["strict"].(bool); strict == (fn["name"] == "web__fetch") {
			t.Errorf("%s strict %v", fn["name"], strict)
		}
	}

	r = conduit(t, runOpts{dir: dir}, "tools", "--provider", "openai-responses", "--strict", "true")
	expect(t, r, 0)
	out = toolsOut{}
	decode(t, r, &out)
	if len(out.Excluded) != 1 || out.Excluded[0].Tool != "web__fetch" || !contains(out.Excluded[0].Reason, "open map") {
		t.Fatalf("excluded %+v", out.Excluded)
	}
	if slices.Contains(names(out.Tools), "web__fetch") || len(out.Tools) != 4 {
		t.Errorf("tools %v", names(out.Tools))
	}

	r = conduit(t, runOpts{dir: dir}, "tools", "--provider", "openai-responses", "--strict", "false")
	expect(t, r, 0)
	out = toolsOut{}
	decode(t, r, &out)
	for _, tool := range out.Tools {
		if tool["strict"] != false {
			t.Errorf("%s strict %v", tool["name"], tool["strict"])
		}
	}
}
