package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/agent/agenttest"
)

// conduit tools --code-mode lists run_code alone; conduit exec
// --code-mode runs its code, each nested call sent to its server, and
// the answer's taint names the server the code read.
func TestExecCodeMode(t *testing.T) {
	t.Parallel()
	config, write, calls := defsConfig(t, "notes")
	write("notes", defTool("add_note", "Adds a note."), defTool("list_notebooks", "Lists the notebooks."))
	for _, p := range []adapters.Provider{adapters.Anthropic, adapters.Gemini} {
		code, out, errb := run(t, "tools", "--provider", p.String(), "--config", config, "--code-mode")
		var listed toolsJSON
		decodeJSON(t, out, &listed)
		if code != ExitOK || !slices.Equal(names(listed.Tools), []string{"run_code"}) {
			t.Fatalf("tools --code-mode: exit %d, %v\n%s", code, names(listed.Tools), errb)
		}
		code, out, _ = run(t, "tools", "--provider", p.String(), "--config", config, "--code-mode", "--code-mode-direct")
		listed = toolsJSON{}
		decodeJSON(t, out, &listed)
		if code != ExitOK || len(listed.Tools) != 3 {
			t.Fatalf("tools --code-mode-direct: exit %d, %v", code, names(listed.Tools))
		}
	}
	resp := responseFile(t, adapters.OpenAIChat, agenttest.Call{ID: "c1", Name: "run_code", Args: map[string]any{
		"code": "for (const t of ['a', 'b']) await notes.add_note({text: t});\nconsole.log('two');\nreturn 2;"}})
	code, out, errb := run(t, "exec", "--provider", "openai-chat", "--response", resp, "--config", config, "--code-mode")
	var ex execJSON
	decodeJSON(t, out, &ex)
	if code != ExitOK || !slices.Equal(ex.Taint, []string{"notes"}) || len(ex.Results) != 1 {
		t.Fatalf("exec --code-mode: exit %d, %+v\n%s", code, ex, errb)
	}
	if n := strings.Count(calls("notes"), "add_note\n"); n != 2 {
		t.Fatalf("%d add_note calls sent: %q", n, calls("notes"))
	}
	if !strings.Contains(out, `"result":2`) && !strings.Contains(out, `\"result\":2`) {
		t.Fatalf("the answer lacks the result: %s", out)
	}
}
