package config

// A configuration's servers started as conduit serve starts them: the test
// binary doubles as a stdio MCP server whose one tool tells its
// environment, so that what a child inherits is read, not assumed.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// childModeEnv set makes the test binary the child server.
const childModeEnv = "CONDUIT_CONFIG_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childModeEnv) != "" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

// runChild serves the tool environ (every variable, a line each) over
// stdio until stdin closes.
func runChild() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "child", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "environ", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(os.Environ(), "\n")}}}, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// childEnviron asks the child for its whole environment as principal p
// ("" for none).
func childEnviron(t *testing.T, h *conduit.Hub, tool, p string) map[string]string {
	t.Helper()
	var opts *conduit.CallOptions
	if p != "" {
		opts = &conduit.CallOptions{Principal: p}
	}
	res, err := h.CallTool(context.Background(), tool, nil, opts)
	if err != nil {
		t.Fatalf("%s as %q: %v", tool, p, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return testenv.Environ(strings.Join(text, "\n"))
}

// Under "identity": "principal", started from a configuration file as
// conduit serve starts it: alice's child has her credential, never
// bob's, nor the source variables of either, nor the serve tokens, nor
// the state key; a shared server's child has none of them.
func TestChildEnvironmentPrincipals(t *testing.T) {
	secrets := map[string]string{
		"ALICE_SECRET":      "alice-credential-0123456789",
		"BOB_SECRET":        "bob-credential-0123456789",
		"TOK_ALICE":         "alice-gateway-token-0123456789",
		"TOK_BOB":           "bob-gateway-token-0123456789",
		"CONDUIT_STATE_KEY": "state-key-0123456789abcdef0123456789",
		"OPENAI_API_KEY":    "sk-test-openai-key-0123456789",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := fmt.Sprintf(`"command": %q, "env": {%q: "basic", "GORACE": "atexit_sleep_ms=0"}`, exe, childModeEnv)
	config := `{"mcpServers": {
		"own": {` + child + `, "identity": "principal", "inheritEnv": ["TOK_ALICE_NOT_SET"], "principals": {
			"alice": {"env": {"GH_TOKEN": "${env:ALICE_SECRET}"}},
			"bob":   {"env": {"GH_TOKEN": "${env:BOB_SECRET}", "BOB_ONLY": "${env:BOB_SECRET}"}}}},
		"shared": {` + child + `}},
		"serve": {"tokens": [{"principal": "alice", "env": "TOK_ALICE"}, {"principal": "bob", "env": "TOK_BOB"}]}}`
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := conduit.NewHub(context.Background(), cfg.Servers, &conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("*"))})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	alice := childEnviron(t, h, "own__environ", "alice")
	if alice["GH_TOKEN"] != secrets["ALICE_SECRET"] {
		t.Errorf("alice's GH_TOKEN = %q", alice["GH_TOKEN"])
	}
	others := maps.Clone(secrets)
	delete(others, "ALICE_SECRET")
	testenv.NoneOf(t, "alice", alice, others)
	if _, ok := alice["ALICE_SECRET"]; ok {
		t.Error("alice's child has ALICE_SECRET, the source of her ${env:}")
	}
	if _, ok := alice["BOB_ONLY"]; ok {
		t.Error("alice's child has BOB_ONLY, a variable only bob's env sets")
	}

	bob := childEnviron(t, h, "own__environ", "bob")
	if bob["GH_TOKEN"] != secrets["BOB_SECRET"] || bob["BOB_ONLY"] != secrets["BOB_SECRET"] {
		t.Errorf("bob's GH_TOKEN = %q, BOB_ONLY = %q", bob["GH_TOKEN"], bob["BOB_ONLY"])
	}
	others = maps.Clone(secrets)
	delete(others, "BOB_SECRET")
	testenv.NoneOf(t, "bob", bob, others)

	testenv.NoneOf(t, "the shared server", childEnviron(t, h, "shared__environ", "alice"), secrets)
}
