package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/bench/internal/corpus"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/conduitmcp/conduit/bench/internal/samples"
	"github.com/google/jsonschema-go/jsonschema"
)

// The benchmarks are only compiled by the repository's test command; these
// tests check that what they measure is what they say.

func TestCorpus(t *testing.T) {
	c := loadCorpus(t)
	if c.Len() != corpus.Size {
		t.Fatalf("the corpus has %d tools, want %d", c.Len(), corpus.Size)
	}
	if len(c.Servers) < 20 {
		t.Errorf("the corpus has %d servers; it should have many", len(c.Servers))
	}

	// testdata/corpus.json is what cmd/gencorpus makes of the sources.
	src, err := corpus.LoadSources(filepath.Join(fixture.Dir(), "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	gen, err := corpus.Generate(src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := gen.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(fixture.Testdata("corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("testdata/corpus.json is stale: run go run ./cmd/gencorpus")
	}

	// Every tool is exposed, under a distinct name, in a hub's tool set.
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, mcpTools(t, c)...)
	if ts.Len() != corpus.Size || len(ts.Skipped()) > 0 {
		t.Fatalf("a hub's tool set holds %d of %d tools; skipped: %+v", ts.Len(), corpus.Size, ts.Skipped())
	}
	names := map[string]bool{}
	for tool := range ts.All() {
		if names[tool.Exposed] {
			t.Errorf("exposed name %q is used twice", tool.Exposed)
		}
		names[tool.Exposed] = true
	}

	// Every input schema is a valid JSON Schema object with nesting, and
	// OpenAI strict mode converts most but not all of them, so both paths
	// of a listing are measured.
	var strict, fallback, nested int
	for tool := range ts.All() {
		m := toolcall.SchemaMap(tool.InputSchema)
		if m["type"] != "object" {
			t.Errorf("%s: input schema type %v", tool.Exposed, m["type"])
		}
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(data, &s); err != nil {
			t.Errorf("%s: %v", tool.Exposed, err)
			continue
		}
		if _, err := s.Resolve(nil); err != nil {
			t.Errorf("%s: the input schema does not resolve: %v", tool.Exposed, err)
		}
		if bytes.Contains(data, []byte(`"$ref"`)) || bytes.Count(data, []byte(`"properties"`)) > 1 {
			nested++
		}
		if _, _, err := driver.StrictSchema(m); err != nil {
			fallback++
		} else {
			strict++
		}
	}
	t.Logf("%d tools over %d servers: %d convert to strict mode, %d fall back; %d have nested objects or $refs",
		c.Len(), len(c.Servers), strict, fallback, nested)
	if fallback == 0 || strict < corpus.Size*3/4 {
		t.Errorf("strict conversions: %d convert, %d fall back; want most but not all to convert", strict, fallback)
	}
	if nested < corpus.Size/5 {
		t.Errorf("only %d tools have nested schemas", nested)
	}
}

// TestFixtures checks that each environment of the call benchmarks
// answers both ways with the governance running (newEnv makes one raw,
// one governed and one adapters call, and fails if any does not work).
func TestFixtures(t *testing.T) {
	for _, k := range []transportKind{inMemory, loopbackHTTP, stdio} {
		e := newEnv(t, k)
		if e.hub.Status()[0].State != conduit.StateUp {
			t.Errorf("transport %d: server is %v", k, e.hub.Status()[0].State)
		}
	}
	ctx := t.Context()
	if err := sessionPerCall(ctx, selfExe(t)); err != nil {
		t.Errorf("a session per call: %v", err)
	}
	tools, err := fixture.FilesystemTools()
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []bool{false, true} {
		if d, err := firstListing(ctx, tools, 2, raw); err != nil || d < listDelay {
			t.Errorf("firstListing(raw=%v) = %v, %v; want at least %v", raw, d, err, listDelay)
		}
	}
}

func TestQuantile(t *testing.T) {
	var d samples.Durations
	for i := 100; i >= 1; i-- {
		d.Add(time.Duration(i))
	}
	for q, want := range map[float64]time.Duration{0.5: 50, 0.99: 99, 1: 100, 0: 1} {
		if got := d.Quantile(q); got != want {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if d.Mean() != 50 {
		t.Errorf("Mean = %v", d.Mean())
	}
}
