package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/conduitmcp/conduit/bench/internal/auditcorpus"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
)

// SECURITY.md publishes what the audit reports over the real tool lists:
// each of its sections must be what the audit finds now (regenerate them
// with go run ./cmd/auditcounts -write ../SECURITY.md).
func TestSecurityCountsCurrent(t *testing.T) {
	sets, err := auditcorpus.Load(filepath.Join(fixture.Dir(), "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(fixture.Dir(), "..", "SECURITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	if got, want := auditcorpus.Extract(doc, "rules"), auditcorpus.RulesSection(); got != want {
		t.Errorf("SECURITY.md's table of rules is not audit.Rules() (go run ./cmd/auditcounts -write ../SECURITY.md):\n%s\nwant:\n%s", got, want)
	}
	for _, s := range sets {
		got := auditcorpus.Extract(doc, s.Name)
		if got == "" {
			t.Errorf("SECURITY.md has no section %s", auditcorpus.Begin(s.Name))
			continue
		}
		if want := auditcorpus.Section(s); got != want {
			t.Errorf("SECURITY.md's section %s is not what the audit reports now (go run ./cmd/auditcounts -write ../SECURITY.md):\n%s\nwant:\n%s", s.Name, got, want)
		}
	}
	if len(sets) < 2 {
		t.Log("testdata/servers is not in this tree: only the corpus section was checked")
	}
}
