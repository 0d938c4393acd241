package adapters_test

import (
	"slices"
	"testing"

	"github.com/conduitmcp/conduit/internal/exportcount"
)

// TestProviderPackagesExportTheirDriverOnly: each provider package is
// reached through its driver, so programs have one way to a provider (its
// adapters.Provider value and Wire). A second public way would drift.
func TestProviderPackagesExportTheirDriverOnly(t *testing.T) {
	want := map[string][]string{
		"anthropic": {"Driver"},
		"bedrock":   {"Driver"},
		"gemini":    {"Driver"},
		"openai":    {"ChatDriver", "ResponsesDriver"},
	}
	for dir, names := range want {
		c, err := exportcount.Dir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Names, names) {
			t.Errorf("package %s exports %v, want %v", dir, c.Names, names)
		}
	}
}
