package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/bench/internal/corpus"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
)

// corpusHub serves the corpus, one in-memory Go SDK server per corpus
// server, and returns a governed hub over them with its tool set listed
// (so that it is cached), or the first error.
func corpusHub(ctx context.Context, c *corpus.Corpus) (*conduit.Hub, *conduit.ToolSet, error) {
	var servers []conduit.Server
	for _, s := range c.Servers {
		tools, err := s.MCPTools()
		if err != nil {
			return nil, nil, err
		}
		t, err := fixture.InMemory(ctx, fixture.NewServer(fixture.ServerOptions{Name: s.ID, Tools: tools}))
		if err != nil {
			return nil, nil, err
		}
		servers = append(servers, conduit.Server{ID: s.ID, Transport: t})
	}
	hub, err := conduit.NewHub(ctx, servers, fixture.Options())
	if err != nil {
		return nil, nil, err
	}
	ts, err := hub.ListTools(ctx)
	if err != nil {
		hub.Close()
		return nil, nil, err
	}
	if ts.Len() != c.Len() {
		hub.Close()
		return nil, nil, fmt.Errorf("the hub lists %d of the corpus's %d tools; skipped: %v", ts.Len(), c.Len(), ts.Skipped())
	}
	return hub, ts, nil
}

func loadCorpus(tb testing.TB) *corpus.Corpus {
	tb.Helper()
	c, err := corpus.Load(fixture.Testdata("corpus.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// mcpTools returns every tool of the corpus, by server.
func mcpTools(tb testing.TB, c *corpus.Corpus) []conduit.ServerTools {
	tb.Helper()
	out, err := c.ServerTools()
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
