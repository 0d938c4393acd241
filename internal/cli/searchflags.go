package cli

import (
	"fmt"

	"github.com/conduitmcp/conduit/adapters"
)

// searchFlags are the tool search flags of tools, exec and agent: the
// Conversation's SearchOptions. Sharing them, exec resolves calls against
// the list tools printed.
type searchFlags struct {
	mode     string
	conduit  bool
	loaded   string
	revealed string
}

func (s *searchFlags) register(fs *flagSet) {
	fs.StringVar(&s.mode, "search", "auto", fmt.Sprintf("tool search instead of every tool: auto (past %d tools or %d KiB of definitions), on or off",
		adapters.DefaultSearchThreshold, adapters.DefaultSearchBudget>>10))
	fs.BoolVar(&s.conduit, "conduit-search", false, "search with conduit's search_tools even where the provider has its own (anthropic, openai-responses: recent models only)")
	fs.StringVar(&s.loaded, "always-loaded", "", "with search, the `patterns` of tools listed from the start, comma-separated, as the policy writes them (github/get_*)")
	if fs.cmd != "agent" {
		fs.StringVar(&s.revealed, "revealed", "", "with conduit's search, the `tools` earlier searches revealed, comma-separated exposed names in their order (exec's \"revealed\"): listed after the search tool, and callable")
	}
}

func (s *searchFlags) parse(fs *flagSet) (adapters.SearchOptions, error) {
	mode, err := adapters.ParseSearchMode(s.mode)
	if err != nil {
		return adapters.SearchOptions{}, usageError(fs.cmd, "--search: %v", err)
	}
	o := adapters.SearchOptions{Mode: mode, Conduit: s.conduit}
	o.AlwaysLoaded = splitList(s.loaded)
	o.Revealed = splitList(s.revealed)
	return o, nil
}

// searchNote is what tools prints of a search-mode listing.
type searchNote struct {
	// Tool is the search tool offered; Deferred counts the tools it can
	// find that are not listed yet.
	Tool     string `json:"tool"`
	Deferred int    `json:"deferred"`
	// Revealed are the tools listed because --revealed named them.
	Revealed []string `json:"revealed,omitempty"`
}

func searchOf(l *adapters.Listing) *searchNote {
	if l.SearchTool == "" {
		return nil
	}
	return &searchNote{Tool: l.SearchTool, Deferred: len(l.Deferred), Revealed: l.Revealed}
}
