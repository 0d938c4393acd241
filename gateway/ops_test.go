package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// getJSON GETs url with token ("" for none) and decodes a JSON answer.
func getJSON(t *testing.T, url, token string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("%s: %q: %v", url, body, err)
		}
	}
	return resp.StatusCode
}

// TestOperations: /healthz and /readyz for a balancer (no token), /status
// for a caller (their token, their own counts only); on the end of
// ListenAndServe's context, readiness turns false first, requests are
// still taken for DrainDelay, the call in flight is finished, and then
// the listener is closed.
func TestOperations(t *testing.T) {
	up := newUpstream(t, "up")
	release := make(chan struct{})
	var started atomic.Int64
	up.tool("slow", "Waits.", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return text("slow done"), nil
	})
	up.tool("echo", "Echo.", echo("echo "))
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{
		Hub: &conduit.Options{Policy: conduit.AllowAll()},
		Limits: []gateway.Limit{
			{Tools: []string{"up/echo"}, PerMinute: 5},
			{Principals: []string{"bob"}, Tools: []string{"up/*"}, AtOnce: 1},
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- g.ListenAndServe(ctx, "127.0.0.1:0", &gateway.HTTPOptions{
			Tokens:     map[string]string{aliceToken: "alice", bobToken: "bob"},
			DrainDelay: 500 * time.Millisecond, ShutdownTimeout: 10 * time.Second,
		}, func(a net.Addr) { addr <- a })
	}()
	base := "http://" + (<-addr).String()

	var ready struct {
		Ready  bool
		Reason string
		Store  string
	}
	if code := getJSON(t, base+gateway.HealthPath, "", nil); code != http.StatusOK {
		t.Errorf("healthz = %d", code)
	}
	if code := getJSON(t, base+gateway.ReadyPath, "", &ready); code != http.StatusOK || !ready.Ready || ready.Store != "ok" {
		t.Errorf("readyz = %d %+v", code, ready)
	}
	if code := getJSON(t, base+gateway.StatusPath, "", nil); code != http.StatusUnauthorized {
		t.Errorf("status without a token = %d", code)
	}
	cs := httpClient(t, base+"/mcp", aliceToken, statelessProtocol)
	for range 2 {
		if res := callTool(t, cs, "up__echo", map[string]any{}); res.IsError {
			t.Fatal(resultText(res))
		}
	}
	var status struct {
		Principal string
		Ready     bool
		Store     string
		Servers   []struct{ ID, State string }
		Limits    []struct {
			Tools                      []string
			PerMinute, Calls, InFlight int
			WindowEndsInMs             int64
		}
	}
	if code := getJSON(t, base+gateway.StatusPath, aliceToken, &status); code != http.StatusOK {
		t.Fatalf("status = %d", code)
	}
	if status.Principal != "alice" || !status.Ready || status.Store != "ok" || len(status.Servers) != 1 || status.Servers[0].State != "up" ||
		len(status.Limits) != 1 || status.Limits[0].Calls != 2 || status.Limits[0].PerMinute != 5 || status.Limits[0].WindowEndsInMs <= 0 {
		// bob's limit is bob's: alice does not see it.
		t.Errorf("status = %+v", status)
	}

	// A call in flight when the shutdown begins is finished.
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{}})
		if err != nil {
			res = text("error: " + err.Error())
		}
		done <- res
	}()
	eventually(t, "the slow call to start", func() bool { return started.Load() == 1 })
	cancel()
	eventually(t, "readiness to turn false", func() bool {
		return getJSON(t, base+gateway.ReadyPath, "", &ready) == http.StatusServiceUnavailable && ready.Reason == gateway.ErrDraining.Error()
	})
	// Within DrainDelay: still served.
	if res := callTool(t, cs, "up__echo", map[string]any{}); res.IsError {
		t.Errorf("a call during the drain delay: %s", resultText(res))
	}
	time.Sleep(700 * time.Millisecond) // past DrainDelay: the listener is closed
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second); err == nil {
		t.Error("the listener still accepts connections after the drain delay")
	}
	select {
	case err := <-served:
		t.Fatalf("ListenAndServe returned %v with a call in flight", err)
	default:
	}
	close(release)
	if res := <-done; res.IsError || resultText(res) != "slow done" {
		t.Errorf("the call in flight = %q", resultText(res))
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ListenAndServe = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ListenAndServe did not return once the call in flight ended")
	}
	if err := g.Ready(context.Background()); !errors.Is(err, gateway.ErrDraining) {
		t.Errorf("Ready = %v", err)
	}
}

// TestReadyNoServerUpAndShutdownTimeout: /readyz answers 503 while no
// server is up (the replica should get no traffic); and a call that
// outlives ShutdownTimeout does not hold the shutdown: ListenAndServe
// returns once the bound has passed.
func TestReadyNoServerUpAndShutdownTimeout(t *testing.T) {
	down := newGateway(t, []conduit.Server{{ID: "down", Command: "/nonexistent/conduit-test-server"}}, &gateway.Options{
		Hub: &conduit.Options{Policy: conduit.AllowAll(), ConnectTimeout: time.Second}})
	dctx, dcancel := context.WithCancel(context.Background())
	defer dcancel()
	daddr := make(chan net.Addr, 1)
	go down.ListenAndServe(dctx, "127.0.0.1:0", &gateway.HTTPOptions{Tokens: map[string]string{aliceToken: "alice"}}, func(a net.Addr) { daddr <- a })
	base := "http://" + (<-daddr).String()
	var ready struct {
		Ready  bool
		Reason string
	}
	if code := getJSON(t, base+gateway.ReadyPath, "", &ready); code != http.StatusServiceUnavailable || ready.Ready || !strings.Contains(ready.Reason, "no server is up") {
		t.Errorf("readyz with no server up = %d %+v", code, ready)
	}

	up := newUpstream(t, "up")
	var started atomic.Int64
	up.tool("stuck", "Never answers.", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- g.ListenAndServe(ctx, "127.0.0.1:0", &gateway.HTTPOptions{
			Tokens: map[string]string{aliceToken: "alice"}, ShutdownTimeout: 300 * time.Millisecond,
		}, func(a net.Addr) { addr <- a })
	}()
	cs := httpClient(t, "http://"+(<-addr).String()+"/mcp", aliceToken, statelessProtocol)
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__stuck", Arguments: map[string]any{}})
	eventually(t, "the call in flight", func() bool { return started.Load() > 0 })
	cancel()
	select {
	case <-served:
	case <-time.After(30 * time.Second):
		t.Fatal("ListenAndServe still runs long after its ShutdownTimeout")
	}
}
