package footprint_test

import (
	"path/filepath"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/bench/internal/corpus"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/conduitmcp/conduit/bench/internal/footprint"
)

func realToolSet(t *testing.T) *conduit.ToolSet {
	t.Helper()
	c, _, err := corpus.LoadServers(filepath.Join(fixture.Dir(), corpus.ServersDir))
	if err != nil {
		t.Fatal(err)
	}
	servers, err := c.ServerTools()
	if err != nil {
		t.Fatal(err)
	}
	return conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, servers...)
}

// TestSearchFootprint is the goal of BENCHMARKS.md ("Tool search: what a
// request carries"): over the 738 real tools, search mode costs the model
// at most 10% of the definitions of the full listing, at its first turn
// and after three searches, for every provider; with conduit's search the
// request's "tools" are as small, and they only ever grow.
func TestSearchFootprint(t *testing.T) {
	ts := realToolSet(t)
	rows, err := footprint.Measure(ts, footprint.Queries)
	if err != nil {
		t.Fatal(err)
	}
	full := map[adapters.Provider]footprint.Row{}
	modes := map[adapters.Provider][]string{}
	for _, r := range rows {
		modes[r.Provider] = append(modes[r.Provider], r.Mode)
		if r.Mode == footprint.Full {
			full[r.Provider] = r
			if r.Bytes < 500_000 || r.Read > r.Bytes || r.BytesAfter != r.Bytes {
				t.Errorf("%v, every tool: %+v", r.Provider, r)
			}
			continue
		}
		f := full[r.Provider]
		for _, n := range []int{r.Tokens, r.TokensAfter} {
			if 10*n > f.Tokens {
				t.Errorf("%v, %s: %d tokens read, more than 10%% of the full listing's %d", r.Provider, r.Mode, n, f.Tokens)
			}
		}
		if r.TokensAfter <= r.Tokens || r.Listed < 4 {
			t.Errorf("%v, %s: the searches loaded nothing: %+v", r.Provider, r.Mode, r)
		}
		if r.Mode == footprint.ConduitSearch && (10*r.BytesAfter > f.Bytes || r.BytesAfter <= r.Bytes) {
			t.Errorf("%v, conduit's search: %d bytes sent after the searches, full listing %d", r.Provider, r.BytesAfter, f.Bytes)
		}
	}
	for _, p := range adapters.Providers() {
		if len(modes[p]) < 2 {
			t.Errorf("%v measured %v", p, modes[p])
		}
	}
}
