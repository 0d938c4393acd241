package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/agent/agenttest"
)

// searchPolicy is the demo's policy, with conduit's search allowed.
var searchPolicy = append([]any{map[string]any{"allow": []string{"conduit/search_tools"}}}, demoPolicy...)

type searchToolsOut struct {
	toolsOut
	Search *struct {
		Tool     string `json:"tool"`
		Deferred int    `json:"deferred"`
	} `json:"search"`
}

func TestToolsSearch(t *testing.T) {
	dir := writeConfig(t, searchPolicy, "notes", demoServer("notes"), "web", demoServer("web"))
	own := map[string]string{"anthropic": "tool_search_tool_bm25", "openai-responses": "tool_search"}
	for _, p := range []string{"anthropic", "openai-chat", "openai-responses", "gemini"} {
		t.Run(p, func(t *testing.T) {
			// Five tools: auto lists them all.
			r := conduit(t, runOpts{dir: dir}, "tools", "--provider", p)
			expect(t, r, 0)
			var out searchToolsOut
			decode(t, r, &out)
			if out.Search != nil || len(out.Tools) != 5 {
				t.Fatalf("auto: %s", r.stdout)
			}
			// On: the first turn of a search.
			r = conduit(t, runOpts{dir: dir}, "tools", "--provider", p, "--search", "on", "--always-loaded", "web/fetch")
			expect(t, r, 0)
			out = searchToolsOut{}
			decode(t, r, &out)
			want := own[p]
			if want == "" {
				want = "search_tools"
				if got := names(out.Tools); !slices.Equal(got, []string{"web__fetch", "search_tools"}) {
					t.Errorf("on: tools %v", got)
				}
			}
			if out.Search == nil || out.Search.Tool != want || out.Search.Deferred != 4 {
				t.Errorf("on: search %+v", out.Search)
			}
			// conduit's own, for every provider.
			r = conduit(t, runOpts{dir: dir}, "tools", "--provider", p, "--search", "on", "--conduit-search")
			expect(t, r, 0)
			out = searchToolsOut{}
			decode(t, r, &out)
			if got := names(out.Tools); !slices.Equal(got, []string{"search_tools"}) || out.Search.Deferred != 5 {
				t.Errorf("conduit's: tools %v, search %+v", got, out.Search)
			}
		})
	}
	// The demo's own policy does not allow conduit's search: on says so.
	r := conduit(t, runOpts{dir: demoDir(t)}, "tools", "--provider", "gemini", "--search", "on")
	expect(t, r, 1, "conduit/search_tools")
	r = conduit(t, runOpts{dir: dir}, "tools", "--provider", "gemini", "--search", "sometimes")
	expect(t, r, 2, "--search")
}

// conduit agent searches past the threshold; --search on forces it. The
// model searches, then calls what it found.
func TestAgentSearch(t *testing.T) {
	dir := writeConfig(t, searchPolicy, "notes", demoServer("notes"), "web", demoServer("web"))
	p := adapters.OpenAIChat
	f := agenttest.New(t, p, model,
		agenttest.ToolTurn(p, agenttest.Call{ID: "c1", Name: "search_tools", Args: map[string]any{"query": "search my notes"}}),
		agenttest.ToolTurn(p, agenttest.Call{ID: "c2", Name: "notes__search_notes", Args: map[string]any{"query": "pasta"}}),
		agenttest.TextTurn(p, "Pasta night is on Friday."))
	r := agentRun(t, f, dir, "--search", "on", "when", "is", "pasta", "night?")
	expect(t, r, 0, "call 1 search_tools: ok", "call 1 notes__search_notes: ok")
	reqs := f.Requests()
	if got := agenttest.ToolNames(reqs[0].Body); !slices.Equal(got, []string{"search_tools"}) {
		t.Errorf("request 1 offered %v", got)
	}
	if got := agenttest.ToolNames(reqs[1].Body); len(got) < 2 || got[0] != "search_tools" || !slices.Contains(got, "notes__search_notes") {
		t.Errorf("request 2 offered %v", got)
	}
	if !strings.Contains(mustJSON(reqs[1].Body), "notes__search_notes: ") {
		t.Error("the search's answer does not name notes__search_notes")
	}
}
