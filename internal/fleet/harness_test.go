package fleet_test

// The fleet the tests run: downstream servers in this process that count
// their calls, a redis-server, N replicas of conduit serve and HAProxy
// with docs/fleet/haproxy.cfg, and the clients that call through them.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit/internal/testenv"
)

// callArgs are the arguments of every downstream tool: id names the call
// (unique in a run), ms is how long "slow" takes.
type callArgs struct {
	ID string `json:"id" jsonschema:"the call's unique id"`
	Ms int    `json:"ms,omitempty" jsonschema:"milliseconds to take"`
}

// downstream is the MCP servers behind the fleet, fs and web, stateless
// Streamable HTTP servers of the Go SDK in this process: every replica
// calls the same ones, which count the calls they receive by id, as
// seen from outside conduit.
type downstream struct {
	fsURL, webURL string

	mu    sync.Mutex
	calls map[string]int
}

func newDownstream(t testing.TB) *downstream {
	d := &downstream{calls: map[string]int{}}
	tool := func(s *mcp.Server, name, answer string) {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: name + " (counted)."},
			func(ctx context.Context, _ *mcp.CallToolRequest, a callArgs) (*mcp.CallToolResult, any, error) {
				d.mu.Lock()
				d.calls[a.ID]++
				d.mu.Unlock()
				if a.Ms > 0 {
					select {
					case <-time.After(time.Duration(a.Ms) * time.Millisecond):
					case <-ctx.Done():
						return nil, nil, ctx.Err()
					}
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer + " " + a.ID}}}, nil, nil
			})
	}
	fs := mcp.NewServer(&mcp.Implementation{Name: "fs", Version: "1"}, nil)
	tool(fs, "write", "wrote")
	tool(fs, "slow", "wrote")
	tool(fs, "approve", "approved")
	web := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	tool(web, "fetch", "page")
	serve := func(s *mcp.Server) string {
		srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	d.fsURL, d.webURL = serve(fs), serve(web)
	return d
}

// count is how many times the call id reached a downstream server.
func (d *downstream) count(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[id]
}

// twice returns the ids that reached a server more than once.
func (d *downstream) twice() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for id, n := range d.calls {
		if n > 1 {
			out = append(out, fmt.Sprintf("%s (%d times)", id, n))
		}
	}
	return out
}

// principals are the callers the configuration has tokens for.
var principals = []string{"alice", "bob", "carol", "dave", "erin", "frank", "gina", "load"}

func token(principal string) string { return "fleet-token-" + principal + "-0123456789abcdef" }

func tokenEnv(principal string) string { return "CONDUIT_TOKEN_" + strings.ToUpper(principal) }

const (
	stateKey      = "fleet-state-key-0123456789abcdef0123456789"
	redisPassword = "fleet-redis-password-0123"
	// perMinute is carol's limit on fs/write.
	perMinute = 10
)

// config is the mcp.json every replica reads: fs and web, a policy in
// which web's output taints (fs/write and fs/slow denied after it),
// fs/approve asks, and the "serve" object with the tokens, the shared
// store (its password from the environment) and carol's limit.
func config(d *downstream, redisAddr string) string {
	var tokens []string
	for _, p := range principals {
		tokens = append(tokens, fmt.Sprintf(`{"principal": %q, "env": %q}`, p, tokenEnv(p)))
	}
	return fmt.Sprintf(`{
	"mcpServers": {"fs": {"url": %q}, "web": {"url": %q}},
	"policy": [
		{"deny": ["fs/write", "fs/slow"], "tainted": ["web"]},
		{"ask": ["fs/approve"]},
		{"allow": ["*"]}
	],
	"serve": {
		"tokens": [%s],
		"store": "redis://:${env:FLEET_REDIS_PASSWORD}@%s/0",
		"limits": [{"principal": "carol", "tool": "fs/write", "perMinute": %d}]
	}
}`, d.fsURL+"/", d.webURL+"/", strings.Join(tokens, ", "), redisAddr, perMinute)
}

// fleet is n replicas of conduit serve behind HAProxy, sharing a Redis.
type fleet struct {
	down     *downstream
	redis    *testenv.RedisServer
	replicas []*testenv.Daemon
	// direct are the replicas' own endpoints; url is HAProxy's.
	direct []string
	url    string
	proxy  *testenv.Daemon
}

// startFleet starts the downstream servers, Redis (with an append-only
// file, as a production store that must not forget a single use), n
// replicas (with --drain-delay drain) and HAProxy.
func startFleet(t testing.TB, n int, drain time.Duration) *fleet {
	t.Helper()
	// The program as shipped, without -race (built once by the go
	// command's cache, linked for each test).
	bin := testenv.BuildGo(t, "github.com/conduitmcp/conduit/cmd/conduit")
	f := &fleet{down: newDownstream(t)}
	f.redis = testenv.Redis(t, &testenv.RedisOptions{Password: redisPassword, AppendOnly: true})
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(config(f.down, f.redis.Addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"CONDUIT_STATE_KEY=" + stateKey, "FLEET_REDIS_PASSWORD=" + redisPassword}
	for _, p := range principals {
		env = append(env, tokenEnv(p)+"="+token(p))
	}
	var ports []int
	for range n {
		port := testenv.FreePort(t)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		d := testenv.Start(t, bin, []string{"serve", "--config", path, "--http", addr,
			"--drain-delay", drain.String(), "--shutdown-timeout", "5s"}, env, addr)
		f.replicas = append(f.replicas, d)
		f.direct = append(f.direct, "http://"+addr+"/mcp")
		ports = append(ports, port)
	}
	front := testenv.FreePort(t)
	f.proxy = testenv.HAProxy(t, haproxyConfig(t, front, ports))
	f.url = fmt.Sprintf("http://127.0.0.1:%d/mcp", front)
	if drain > 0 {
		// At the end, no drain: the test is over.
		t.Cleanup(func() {
			for _, d := range f.replicas {
				d.Kill()
			}
		})
	}
	return f
}

// haproxyConfig is docs/fleet/haproxy.cfg, the file the fleet guide shows,
// with front in place of its port 8080 and ports in place of 8081-8083;
// the servers beyond len(ports) are left out.
func haproxyConfig(t testing.TB, front int, ports []int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "fleet", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(data)
	replace := func(old, new string) {
		if strings.Count(cfg, old) != 1 {
			t.Fatalf("docs/fleet/haproxy.cfg: want %q once (the test puts its own ports there)", old)
		}
		cfg = strings.Replace(cfg, old, new, 1)
	}
	replace("bind 127.0.0.1:8080", fmt.Sprintf("bind 127.0.0.1:%d", front))
	for i := range 3 {
		line := fmt.Sprintf("    server conduit%d 127.0.0.1:%d check\n", i+1, 8081+i)
		if i < len(ports) {
			replace(line, fmt.Sprintf("    server conduit%d 127.0.0.1:%d check\n", i+1, ports[i]))
		} else {
			replace(line, "")
		}
	}
	return cfg
}

// bearer adds a principal's token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connect opens a client of the Go SDK on MCP 2026-07-28 (no session) to
// url for principal. It declares elicitation, so that an "ask" rule asks
// it, but answers no input request itself: the test sees them.
func connect(ctx context.Context, url, principal string, rt http.RoundTripper) (*mcp.ClientSession, error) {
	if rt == nil {
		rt = http.DefaultTransport
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "fleet-" + principal, Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	return c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: bearer{token(principal), rt}},
		MaxRetries: -1, // a lost response is a failure to see, not to hide
	}, nil)
}

// client is connect for a test, closed by t.Cleanup.
func client(t testing.TB, url, principal string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := connect(ctx, url, principal, http.DefaultTransport)
	if err != nil {
		t.Fatalf("connecting to %s as %s: %v", url, principal, err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls tool with id (and ms) and returns the result's text.
func call(ctx context.Context, cs *mcp.ClientSession, tool, id string, ms int) (*mcp.CallToolResult, string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: callArgs{ID: id, Ms: ms}})
	if err != nil {
		return nil, "", err
	}
	return res, resultText(res), nil
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// storeDown is what a call refused for the store's outage says.
const storeDown = "shared store is unavailable"

// outcome is how a call through the fleet ended.
type outcome int

const (
	answered    outcome = iota // the tool's own answer
	refusedDown                // refused: the shared store is unavailable
	refusedElse                // another tool error
	failed                     // no answer: a transport error
	hung                       // no answer within callTimeout
)

func (o outcome) String() string {
	return [...]string{"answered", "refused (store unavailable)", "refused", "failed", "hung"}[o]
}

// callTimeout bounds a call: a call that takes longer hangs.
const callTimeout = 30 * time.Second

// classify calls tool through cs and says how it ended.
func classify(cs *mcp.ClientSession, tool, id string, ms int) (outcome, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, text, err := call(ctx, cs, tool, id, ms)
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return hung, "", err
	case err != nil:
		return failed, "", err
	case res.IsError && strings.Contains(text, storeDown):
		return refusedDown, text, nil
	case res.IsError:
		return refusedElse, text, nil
	}
	return answered, text, nil
}
