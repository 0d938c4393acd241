package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/agent/agenttest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bigCatalog writes 44 tools over two servers, past
// adapters.DefaultSearchThreshold: 40 of filler ("big") and four of notes.
func bigCatalog(t *testing.T) (config string, calls func(server string) string) {
	t.Helper()
	config, write, calls := defsConfig(t, "big", "notes")
	var filler []*mcp.Tool
	for i := range 40 {
		filler = append(filler, defTool(fmt.Sprintf("gauge_%02d", i), fmt.Sprintf("Reads gauge number %d of the boiler room.", i)))
	}
	write("big", filler...)
	write("notes",
		defTool("add_note", "Adds a note to the notebook."),
		defTool("search_notes", "Searches the notebook's notes by words."),
		defTool("delete_note", "Deletes a note from the notebook."),
		defTool("list_notebooks", "Lists the notebooks."))
	return config, calls
}

type execJSON struct {
	Results  []map[string]any `json:"results"`
	Halted   bool             `json:"halted"`
	Paused   bool             `json:"paused"`
	Taint    []string         `json:"taint"`
	Revealed []string         `json:"revealed"`
}

type toolsJSON struct {
	Tools    []map[string]any   `json:"tools"`
	Warnings []toolcall.Warning `json:"warnings"`
	Search   *searchNote        `json:"search"`
}

func decodeJSON(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
}

// responseFile writes a response of p in which the model makes calls.
func responseFile(t *testing.T, p adapters.Provider, calls ...agenttest.Call) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "response.json")
	if err := os.WriteFile(f, []byte(agenttest.ToolTurn(p, calls...)), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// names are a tools list's names, whatever the provider's shape.
func names(tools []map[string]any) []string {
	return agenttest.ToolNames(map[string]any{"tools": anySlice(tools)})
}

func anySlice(tools []map[string]any) []any {
	out := make([]any, len(tools))
	for i, t := range tools {
		out[i] = t
	}
	return out
}

// conduit tools and conduit exec past the threshold, one process a turn:
// a search's reveals are printed by exec, carried by --revealed into the
// next exec, whose calls of them then resolve and reach their server, and
// into tools, which lists them after the search tool as a Conversation
// does.
func TestExecToolsSearchAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, p := range []adapters.Provider{adapters.OpenAIChat, adapters.Gemini} {
		t.Run(p.String(), func(t *testing.T) {
			config, calls := bigCatalog(t)
			prov := p.String()
			// Turn 1: the search tool only (auto: 44 tools > 40).
			code, out, errb := run(t, "tools", "--provider", prov, "--config", config)
			var listed toolsJSON
			decodeJSON(t, out, &listed)
			if code != ExitOK || !slices.Equal(names(listed.Tools), []string{"search_tools"}) || listed.Search == nil || listed.Search.Deferred != 44 {
				t.Fatalf("tools: exit %d, %v, %+v\n%s", code, names(listed.Tools), listed.Search, errb)
			}
			// The model searches twice in one response; exec answers and
			// names what the searches revealed, in the calls' order.
			search := responseFile(t, p,
				agenttest.Call{ID: "s1", Name: "search_tools", Args: map[string]any{"query": "search the notes", "limit": 1}},
				agenttest.Call{ID: "s2", Name: "search_tools", Args: map[string]any{"query": "add a note", "limit": 1}})
			code, out, errb = run(t, "exec", "--provider", prov, "--response", search, "--config", config)
			var ex execJSON
			decodeJSON(t, out, &ex)
			want := []string{"notes__search_notes", "notes__add_note"}
			if code != ExitOK || !slices.Equal(ex.Revealed, want) || len(ex.Taint) != 0 {
				t.Fatalf("exec search: exit %d, %+v\n%s", code, ex, errb)
			}
			if !strings.Contains(errb, "conduit: search_tools revealed notes__search_notes, notes__add_note\n") {
				t.Errorf("stderr does not name the reveals:\n%s", errb)
			}
			// Turn 2 in a fresh process, without --revealed: the call is
			// an unknown tool and nothing is sent.
			call := responseFile(t, p, agenttest.Call{ID: "c1", Name: "notes__search_notes", Args: map[string]any{"q": "pasta"}})
			code, out, errb = run(t, "exec", "--provider", prov, "--response", call, "--config", config)
			if code != ExitOK || strings.Contains(errb, "notes__search_notes: ok") || calls("notes") != "" {
				t.Fatalf("without --revealed: exit %d, %s\n%s; sent %q", code, out, errb, calls("notes"))
			}
			// With it, the call resolves and runs.
			code, out, errb = run(t, "exec", "--provider", prov, "--response", call, "--config", config, "--revealed", strings.Join(ex.Revealed, ","))
			ex2 := execJSON{}
			decodeJSON(t, out, &ex2)
			if code != ExitOK || !strings.Contains(errb, "call 1 notes__search_notes: ok") || !strings.Contains(calls("notes"), "search_notes\n") {
				t.Fatalf("with --revealed: exit %d, %s\n%s; sent %q", code, out, errb, calls("notes"))
			}
			if !slices.Equal(ex2.Revealed, want) || !slices.Equal(ex2.Taint, []string{"notes"}) {
				t.Errorf("with --revealed: revealed %v, taint %v", ex2.Revealed, ex2.Taint)
			}
			// tools --revealed: the list of the next turn.
			code, out, _ = run(t, "tools", "--provider", prov, "--config", config, "--revealed", strings.Join(ex.Revealed, ","))
			listed = toolsJSON{}
			decodeJSON(t, out, &listed)
			if code != ExitOK || !slices.Equal(names(listed.Tools), append([]string{"search_tools"}, want...)) || !slices.Equal(listed.Search.Revealed, want) {
				t.Errorf("tools --revealed: exit %d, %v, %+v", code, names(listed.Tools), listed.Search)
			}
			// With always-loaded tools, they come first, then the search
			// tool, then the reveals; a name that is no tool is left out
			// with a warning.
			code, out, _ = run(t, "tools", "--provider", prov, "--config", config, "--always-loaded", "notes/list_*",
				"--revealed", "notes__add_note,nope__nothing")
			listed = toolsJSON{}
			decodeJSON(t, out, &listed)
			if code != ExitOK || !slices.Equal(names(listed.Tools), []string{"notes__list_notebooks", "search_tools", "notes__add_note"}) {
				t.Errorf("tools --always-loaded --revealed: exit %d, %v", code, names(listed.Tools))
			}
			if len(listed.Warnings) != 1 || listed.Warnings[0].Tool != "nope__nothing" {
				t.Errorf("warnings %v", listed.Warnings)
			}
			// --search off lists everything; exec resolves every call.
			code, out, _ = run(t, "tools", "--provider", prov, "--config", config, "--search", "off")
			listed = toolsJSON{}
			decodeJSON(t, out, &listed)
			if code != ExitOK || len(listed.Tools) != 44 || listed.Search != nil {
				t.Errorf("--search off: exit %d, %d tools", code, len(listed.Tools))
			}
			gauge := responseFile(t, p, agenttest.Call{ID: "g1", Name: "big__gauge_07", Args: map[string]any{}})
			if code, _, errb = run(t, "exec", "--provider", prov, "--response", gauge, "--config", config, "--search", "off"); code != ExitOK || !strings.Contains(errb, "big__gauge_07: ok") {
				t.Errorf("exec --search off: exit %d\n%s", code, errb)
			}
			if code, _, errb = run(t, "exec", "--provider", prov, "--response", gauge, "--config", config, "--search", "sometimes"); code != ExitUsage || !strings.Contains(errb, "--search") {
				t.Errorf("exec --search sometimes: exit %d\n%s", code, errb)
			}
		})
	}
}

// exec says when Anthropic paused the turn (pause_turn): nothing to
// answer, the response goes back as it came.
func TestExecPaused(t *testing.T) {
	t.Parallel()
	config, calls := bigCatalog(t)
	paused := `{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "stop_reason": "pause_turn", "content": [
		{"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": {"query": "notes"}}]}`
	f := filepath.Join(t.TempDir(), "paused.json")
	os.WriteFile(f, []byte(paused), 0o600)
	code, out, errb := run(t, "exec", "--provider", "anthropic", "--response", f, "--config", config)
	var ex execJSON
	decodeJSON(t, out, &ex)
	if code != ExitOK || !ex.Paused || len(ex.Results) != 0 || !strings.Contains(errb, "conduit: paused: ") || calls("notes")+calls("big") != "" {
		t.Errorf("paused: exit %d, %s\n%s", code, out, errb)
	}
	// A turn that ends for tool use is not paused.
	f = responseFile(t, adapters.Anthropic, agenttest.Call{ID: "t1", Name: "notes__add_note", Args: map[string]any{}})
	code, out, _ = run(t, "exec", "--provider", "anthropic", "--response", f, "--config", config)
	ex = execJSON{}
	decodeJSON(t, out, &ex)
	if code != ExitOK || ex.Paused || len(ex.Results) != 1 {
		t.Errorf("tool use: exit %d, %s", code, out)
	}
}

// conduit search prints descriptions cleaned as the listings clean them:
// no invisible character of a server reaches the terminal.
func TestSearchCommandCleansDescriptions(t *testing.T) {
	t.Parallel()
	config, write, _ := defsConfig(t, "mail")
	write("mail", defTool("send_email", "Sends\u200b an email.\u202e \U000E0041\U000E0042 Quietly.\r\nSecond line."))
	code, out, errb := run(t, "search", "send an email", "--config", config)
	var res struct {
		Results []searchMatch `json:"results"`
	}
	decodeJSON(t, out, &res)
	if code != ExitOK || len(res.Results) != 1 {
		t.Fatalf("search: exit %d, %s\n%s", code, out, errb)
	}
	if got := res.Results[0].Description; got != "Sends an email.  Quietly." {
		t.Errorf("description %q", got)
	}
}
