package gateway_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/identitytest"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// binDir holds the binaries the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "1":
		os.Exit(runChild())
	case "task-defer", "task-resume", "conv-defer", "conv-resume":
		if err := taskChild(os.Getenv(childEnv)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "identity":
		if err := identitytest.ServeStdio(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(0)
	}
	var err error
	if binDir, err = os.MkdirTemp("", "conduit-gateway-test"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Every conduit serve the tests start keeps its default store (and so
	// its principals' taint) under the run's own directory: a user's state,
	// or an earlier run's taint, must not reach a test.
	os.Setenv("XDG_STATE_HOME", filepath.Join(binDir, "state"))
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// conduitBin builds cmd/conduit once per test binary.
var conduitBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "conduit")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/conduitmcp/conduit/cmd/conduit")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build cmd/conduit: %v\n%s", err, out)
	}
	return bin, nil
})

var listeningRE = regexp.MustCompile(`listening on (http://\S+/mcp)`)

// serveHTTP starts conduit serve --http on a free loopback port with the
// configuration config (and env added to its environment) and returns its
// endpoint. t.Cleanup stops it.
func serveHTTP(t *testing.T, config string, env []string, flags ...string) string {
	t.Helper()
	url, _, _ := startServe(t, config, append([]string{"XDG_STATE_HOME=" + t.TempDir()}, env...), flags...)
	return url
}

// startServe is serveHTTP with the state directory left to env, a stop
// that ends the process (SIGINT) and waits for it, and what it has
// written to stderr so far.
func startServe(t *testing.T, config string, env []string, flags ...string) (url string, stop func(), stderr func() string) {
	t.Helper()
	bin, err := conduitBin()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"serve", "--config", path, "--http", "127.0.0.1:0"}, flags...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = sync.OnceFunc(func() {
		cancel()
		cmd.Wait()
	})
	t.Cleanup(stop)
	found := make(chan string, 1)
	var mu sync.Mutex
	var lines []string
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	stderr = func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
	select {
	case url := <-found:
		return url, stop, stderr
	case <-time.After(testenv.ReadyTimeout):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("conduit serve did not start listening; stderr:\n%s", strings.Join(lines, "\n"))
	}
	return "", stop, stderr
}

// TestConformanceServer runs the conformance suite's server requirement
// sets against the Go SDK's everything-server on its own and through
// conduit serve --http in transparent mode, side by side: the set of
// 2026-07-28 in front of the stateless server, the set of 2025-11-25 in
// front of a stateful and a stateless one. Through conduit, every scored
// scenario that the server passes on its own must pass, no check failing;
// the scenarios the server fails on its own are exactly those named
// (RELIABILITY.md has why).
func TestConformanceServer(t *testing.T) {
	testenv.Conformance(t) // skips, or fails under CI, without node_modules
	for _, tc := range []struct {
		revision, mode string
		failAlone      []string // scored scenarios the server alone fails
	}{
		{"2026-07-28", "stateless", nil},
		// Tasks on, for any call still running after a second: the suite's
		// client declares no tasks extension, so nothing changes for it.
		{"2026-07-28", "stateless+tasks", nil},
		{"2025-11-25", "stateful", nil},
		// The server's tools of these ask by JSON-RPC requests, which a
		// stateless server cannot send: they fail alone, and so through
		// conduit. What the stateless server asks by multi-round-trip
		// results does reach a client of 2025-11-25 through conduit
		// (TestAcrossVersions).
		{"2025-11-25", "stateless", []string{"elicitation-sep1034-defaults", "elicitation-sep1330-enums", "tools-call-elicitation", "tools-call-sampling"}},
	} {
		t.Run(tc.revision+"/"+tc.mode, func(t *testing.T) {
			upstream := testenv.GoEverything(t)
			if strings.HasPrefix(tc.mode, "stateless") {
				upstream = testenv.GoEverythingStateless(t)
			}
			serve := ""
			if strings.HasSuffix(tc.mode, "+tasks") {
				serve = `, "serve": {"tasks": {"after": "1s"}}`
			}
			config := fmt.Sprintf(`{"mcpServers": {"everything": {"url": %q}}, "policy": [{"allow": ["*"]}]%s}`, upstream, serve)
			through := serveHTTP(t, config, nil, "--transparent", "--no-auth")
			compareConformance(t, tc.revision, upstream, through, tc.failAlone)
		})
	}
}

// compareConformance runs revision's server requirement set against the
// server alone and through conduit serve: the scored scenarios the server
// alone fails must be failAlone, and every other one must pass through
// conduit.
func compareConformance(t *testing.T, revision, alone, through string, failAlone []string) {
	runs := map[string]*testenv.ConformanceRun{}
	var mu sync.Mutex
	t.Run("side by side", func(t *testing.T) {
		for name, url := range map[string]string{"alone": alone, "through conduit": through} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				run := testenv.ConformanceRequirements(t, "server", revision, url)
				mu.Lock()
				runs[name] = run
				mu.Unlock()
			})
		}
	})
	a, v := runs["alone"], runs["through conduit"]
	if a == nil || v == nil {
		return
	}
	if !slices.Equal(a.Names(), v.Names()) {
		t.Fatalf("scenarios differ:\nalone:   %v\nthrough: %v", a.Names(), v.Names())
	}
	// A check may fail through conduit only where it fails alone.
	failed := func(cs []testenv.ConformanceCheck) []string {
		var out []string
		for _, c := range cs {
			if c.Status == "FAILURE" {
				out = append(out, c.ID+": "+c.ErrorMessage)
			}
		}
		return out
	}
	var aloneFails []string
	passed := 0
	for _, s := range a.Scored() {
		switch {
		case !a.Verdicts[s]:
			aloneFails = append(aloneFails, s)
			t.Logf("%s: the server alone fails it (through conduit: %v)", s, v.Verdicts[s])
		case !v.Verdicts[s] || len(failed(v.Scenarios[s])) > 0:
			t.Errorf("%s: passes alone, fails through conduit serve: %v", s, failed(v.Scenarios[s]))
		default:
			passed++
		}
	}
	if !slices.Equal(aloneFails, failAlone) {
		t.Errorf("the server alone fails %v, want exactly %v", aloneFails, failAlone)
	}
	for s, why := range a.NotScored {
		if a.Verdicts[s] != v.Verdicts[s] {
			t.Logf("%s (not scored: %s): alone %v, through conduit %v", s, why, a.Verdicts[s], v.Verdicts[s])
		}
	}
	t.Logf("%s: %d of %d scored scenarios pass through conduit serve as they do alone (%d fail alone)", revision, passed, len(a.Scored()), len(aloneFails))
}

// TestAcrossVersions: what a server asks during a call reaches a client
// of another protocol version through conduit serve, real processes on
// both sides: a client of 2025-11-25 (requests on its session) in front
// of the stateless everything-server, which asks by multi-round-trip
// results; a client of 2026-07-28 (input-required results, answered by
// the Go SDK client's own loop) in front of the stateful one, which asks
// by requests, and whose "ask" rule the client approves the same way.
func TestAcrossVersions(t *testing.T) {
	for _, tc := range []struct {
		mode, version string
		calls         map[string]string // tool -> the result's text
	}{
		{"stateless", "2025-11-25", map[string]string{
			"test_input_required_result_elicitation": "Hello, alice!",
			"test_input_required_result_sampling":    "Sampling response: Paris",
			"test_input_required_result_list_roots":  "Client exposed 1 root(s): file:///alice",
		}},
		{"stateful", "", map[string]string{
			"test_elicitation": "Elicitation result: action=accept, content=map[name:alice username:alice]",
			"test_sampling":    "LLM response: Paris",
			// Asked by multi-round-trip result, which the stateful server
			// sends its client (conduit, of 2025-11-25) as a request.
			"test_input_required_result_list_roots": "Client exposed 1 root(s): file:///alice",
		}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			upstream := testenv.GoEverything(t)
			if tc.mode == "stateless" {
				upstream = testenv.GoEverythingStateless(t)
			}
			config := fmt.Sprintf(`{"mcpServers": {"everything": {"url": %q}}, "policy": [{"ask": ["everything/test_sampling"]}, {"allow": ["*"]}]}`, upstream)
			url := serveHTTP(t, config, []string{"CONDUIT_STATE_KEY=" + string(stateKey)}, "--transparent", "--no-auth")
			var elicited []string
			var mu sync.Mutex
			c := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					elicited = append(elicited, req.Params.Message)
					mu.Unlock()
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "alice", "username": "alice"}}, nil
				},
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "Paris"}}, nil
				},
			})
			c.AddRoots(&mcp.Root{URI: "file:///alice"})
			ctx := context.Background()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got, want := cs.InitializeResult().ProtocolVersion, cmp.Or(tc.version, "2026-07-28"); got != want {
				t.Fatalf("negotiated %s, want %s", got, want)
			}
			args := map[string]map[string]any{"test_elicitation": {"message": "Your name?"}, "test_sampling": {"prompt": "The capital of France?"}}
			for tool, want := range tc.calls {
				a := args[tool]
				if a == nil {
					a = map[string]any{}
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
				if err != nil {
					t.Errorf("%s: %v", tool, err)
					continue
				}
				if got := resultText(res); res.IsError || got != want {
					t.Errorf("%s = %q (isError %v), want %q", tool, got, res.IsError, want)
				}
			}
			if tc.mode == "stateful" {
				mu.Lock()
				defer mu.Unlock()
				if !slices.ContainsFunc(elicited, func(m string) bool { return strings.Contains(m, "Allow calling the tool test_sampling") }) {
					t.Errorf("the client was asked %q, and not to approve test_sampling", elicited)
				}
			}
		})
	}
}
