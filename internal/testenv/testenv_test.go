package testenv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// clientEnv makes the test binary act as a conformance client (see TestMain).
const clientEnv = "TESTENV_CONFORMANCE_CLIENT"

// listenEnv makes the test binary listen on the address it holds until
// SIGTERM, then exit with status 0 (see TestStartTerminate).
const listenEnv = "TESTENV_LISTEN"

func TestMain(m *testing.M) {
	if mode := os.Getenv(clientEnv); mode != "" && os.Getenv("MCP_CONFORMANCE_SCENARIO") != "" {
		os.Exit(conformanceClient(mode, os.Args[len(os.Args)-1]))
	}
	if addr := os.Getenv(listenEnv); addr != "" {
		os.Exit(listenUntilTerm(addr))
	}
	os.Exit(m.Run())
}

// conformanceClient is a minimal client for the initialize and tools_call
// scenarios. In mode "lazy" it connects but calls no tool.
func conformanceClient(mode, url string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "testenv-test", Version: "0.0.1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect:", err)
		return 1
	}
	defer s.Close()
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tools/list:", err)
		return 1
	}
	for _, tool := range tools.Tools {
		if tool.Name == "add_numbers" && mode != "lazy" {
			if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool.Name, Arguments: map[string]any{"a": 5, "b": 3}}); err != nil {
				fmt.Fprintln(os.Stderr, "tools/call:", err)
				return 1
			}
		}
	}
	return 0
}

func TestRepoRoot(t *testing.T) {
	root := testenv.RepoRoot()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "module "+testenv.RootModule+"\n") {
		t.Errorf("%s/go.mod does not declare module %s", root, testenv.RootModule)
	}
	if _, err := os.Stat(filepath.Join(root, "package-lock.json")); err != nil {
		t.Errorf("no package-lock.json at the root: %v", err)
	}
}

// connect starts a session on tr and closes it at cleanup.
func connect(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "testenv-test", Version: "0.0.1"}, nil)
	s, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// commandTransport runs command over stdio. A short TerminateDuration keeps
// Close fast (see the package doc).
func commandTransport(command string, args []string) *mcp.CommandTransport {
	return &mcp.CommandTransport{Command: exec.Command(command, args...), TerminateDuration: 300 * time.Millisecond}
}

// toolNames lists the session's tools.
func toolNames(t *testing.T, s *mcp.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// goldenNames returns the tool names in testdata/<file>.
func goldenNames(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

var everythingTools = []string{
	"echo", "get-structured-content", "get-tiny-image", "get-resource-links",
	"get-annotated-message", "trigger-long-running-operation", "get-resource-reference",
}

func checkEverything(t *testing.T, s *mcp.ClientSession) {
	t.Helper()
	names := toolNames(t, s)
	for _, want := range everythingTools {
		if !slices.Contains(names, want) {
			t.Errorf("server-everything has no tool %q; it has %v", want, names)
		}
	}
	if golden := goldenNames(t, "everything-tools.json"); !slices.Equal(names, golden) {
		t.Errorf("tools/list = %v,\ntestdata/everything-tools.json has %v", names, golden)
	}
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil {
		t.Fatalf("echo: %v", err)
	}
	if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "Echo: hi" {
		t.Errorf("echo answered %+v", res.Content)
	}
}

func TestEverythingStdio(t *testing.T) {
	t.Parallel()
	s := connect(t, commandTransport(testenv.Everything(t)))
	checkEverything(t, s)

	// The offline env file is in force: the default URL is refused at once.
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "gzip-file-as-resource", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "not in the allowed domains") {
		t.Errorf("gzip-file-as-resource with default arguments answered %+v", res.Content)
	}
}

func TestEverythingHTTP(t *testing.T) {
	t.Parallel()
	url := testenv.EverythingHTTP(t)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Errorf("EverythingHTTP() = %q", url)
	}
	s := connect(t, &mcp.StreamableClientTransport{Endpoint: url})
	checkEverything(t, s)

	// Progress over Streamable HTTP; notifications may trail the result.
	progress := make(chan float64, 10)
	c := mcp.NewClient(&mcp.Implementation{Name: "testenv-test", Version: "0.0.1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Progress
		},
	})
	s2, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	p := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.2, "steps": 2}}
	p.SetProgressToken("p1")
	res, err := s2.CallTool(context.Background(), p)
	if err != nil || res.IsError {
		t.Fatalf("trigger-long-running-operation: %v %+v", err, res)
	}
	for want := 1.0; want <= 2; want++ {
		select {
		case got := <-progress:
			if got != want {
				t.Errorf("progress %v, want %v", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no progress notification %v", want)
		}
	}
}

// Two servers at once get two ports and both stop.
func TestEverythingHTTPTwice(t *testing.T) {
	t.Parallel()
	a, b := testenv.EverythingHTTP(t), testenv.EverythingHTTP(t)
	if a == b {
		t.Fatalf("both servers at %s", a)
	}
	connect(t, &mcp.StreamableClientTransport{Endpoint: b})
}

func TestFilesystem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := connect(t, commandTransport(testenv.Filesystem(t, dir)))
	names := toolNames(t, s)
	for _, want := range []string{"read_text_file", "list_directory", "list_allowed_directories", "write_file"} {
		if !slices.Contains(names, want) {
			t.Errorf("server-filesystem has no tool %q; it has %v", want, names)
		}
	}
	if golden := goldenNames(t, "filesystem-tools.json"); !slices.Equal(names, golden) {
		t.Errorf("tools/list = %v,\ntestdata/filesystem-tools.json has %v", names, golden)
	}
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": filepath.Join(dir, "hello.txt")}})
	if err != nil || res.IsError {
		t.Fatalf("read_text_file: %v %+v", err, res)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "hello\n" {
		t.Errorf("read_text_file = %q", got)
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(self, " \t") {
		t.Skipf("test binary path %q has spaces, which the suite cannot run", self)
	}
	for _, tc := range []struct {
		scenario, mode, check string
		pass                  bool
	}{
		{"initialize", "full", "mcp-client-initialization", true},
		{"tools_call", "full", "tool-add-numbers", true},
		{"tools_call", "lazy", "tool-add-numbers", false},
	} {
		t.Run(tc.scenario+"/"+tc.mode, func(t *testing.T) {
			t.Parallel()
			res := testenv.ConformanceClient(t, tc.scenario, "env "+clientEnv+"="+tc.mode+" "+self)
			want := map[bool]string{true: "SUCCESS", false: "FAILURE"}[tc.pass]
			if res.Passed != tc.pass || res.Check(tc.check) == nil || res.Check(tc.check).Status != want {
				t.Errorf("Passed = %v (exit %d), check %s = %+v; want passed %v, %s; output:\n%s",
					res.Passed, res.ExitCode, tc.check, res.Check(tc.check), tc.pass, want, res.Output)
			}
			if tc.pass && !strings.Contains(res.Output, "OVERALL: PASSED") {
				t.Errorf("no OVERALL: PASSED in output:\n%s", res.Output)
			}
		})
	}
}

// listenUntilTerm accepts connections on addr until SIGTERM.
func listenUntilTerm(addr string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	<-ctx.Done()
	l.Close()
	return 0
}
