package bench

import (
	"os"
	"testing"

	"github.com/conduitmcp/conduit/bench/internal/fixture"
)

// TestMain lets the test binary double as the stdio MCP server of the
// stdio benchmarks: started with fixture.StdioEnv=1, it serves instead of
// testing.
func TestMain(m *testing.M) {
	fixture.MaybeServeStdio()
	os.Exit(m.Run())
}
