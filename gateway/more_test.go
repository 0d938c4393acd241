package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// childEnv makes the test binary a stdio MCP server (see runChild).
const childEnv = "CONDUIT_GATEWAY_TEST_CHILD"

// runChild serves tools ping and exit (which ends the process) over stdio.
func runChild() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "child", Version: "1"}, nil)
	u := &upstream{Server: s}
	u.tool("ping", "Ping.", echo("pong "))
	u.tool("exit", "Exit.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(0)
		return nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
	}
	return 0
}

// childGateway serves two servers, reconnected with r: stable (its tool
// hello) and child, the test binary run as runChild.
func childGateway(t *testing.T, r conduit.Backoff) *gateway.Gateway {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stable := newUpstream(t, "stable")
	stable.tool("hello", "Hello.", echo("hello "))
	return newGateway(t, []conduit.Server{
		stable.server("stable"),
		{ID: "child", Command: exe, Env: map[string]string{childEnv: "1", "GORACE": "atexit_sleep_ms=0"}},
	}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll(), Reconnect: r}})
}

// TestServerDownAndBack: a server that goes down leaves every session's
// list, and comes back to it when it is reconnected; each time the
// clients are told.
func TestServerDownAndBack(t *testing.T) {
	g := childGateway(t, conduit.Backoff{Min: 50 * time.Millisecond, Max: 100 * time.Millisecond})
	cs, ev := connect(t, g, "", nil)
	all := []string{"child__exit", "child__ping", "stable__hello"}
	if got := toolNames(t, cs); !slices.Equal(got, all) {
		t.Fatalf("tools = %v", got)
	}
	before := ev.snapshot().changed
	// The call ends the child: its answer is the lost session's.
	cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "child__exit"})
	// Down, then back: the list has the child's tools again once it is
	// up, and the client was told of both changes.
	eventually(t, "two list changes", func() bool { return ev.snapshot().changed >= before+2 })
	eventually(t, "the child's tools back", func() bool { return slices.Equal(toolNames(t, cs), all) })
	if got := resultText(callTool(t, cs, "child__ping", map[string]any{})); got != "pong {}" {
		t.Errorf("ping after the reconnection = %q", got)
	}
}

// TestDownServerCallUnavailable: while a server whose process ended waits
// to be reconnected, its tools leave the session's list, and a call by
// the name the client was offered is answered as unavailable (a tool
// error saying to try later), not as an unknown tool; a name no server
// offers is still unknown.
func TestDownServerCallUnavailable(t *testing.T) {
	g := childGateway(t, conduit.Backoff{Min: time.Hour})
	cs, _ := connect(t, g, "", nil)
	if got := resultText(callTool(t, cs, "child__ping", map[string]any{})); got != "pong {}" {
		t.Fatalf("ping = %q", got)
	}
	cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "child__exit"})
	eventually(t, "the child's tools gone", func() bool { return slices.Equal(toolNames(t, cs), []string{"stable__hello"}) })

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "child__ping", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("child__ping while down: %v", err)
	}
	if !res.IsError || resultText(res) != "The server of child__ping is unavailable; try again later." {
		t.Errorf("child__ping while down: %v %q", res.IsError, resultText(res))
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "other__ping", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), `unknown tool "other__ping"`) {
		t.Errorf("other__ping: %v", err)
	}
	if got := resultText(callTool(t, cs, "stable__hello", map[string]any{})); got != "hello {}" {
		t.Errorf("hello = %q", got)
	}
}

// TestMetaCancelLogging: a call's _meta reaches the server (less the
// protocol's keys), the client's cancellation ends the server's handler,
// and the server's log messages reach the client at the level it set.
func TestMetaCancelLogging(t *testing.T) {
	up := newUpstream(t, "up")
	up.tool("meta", "Show _meta.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var keys []string
		for k, v := range req.Params.Meta {
			keys = append(keys, fmt.Sprint(k, "=", v))
		}
		slices.Sort(keys)
		return text(strings.Join(keys, ",")), nil
	})
	canceled := make(chan struct{})
	up.tool("wait", "Wait for cancellation.", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		close(canceled)
		return nil, ctx.Err()
	})
	up.tool("log", "Log.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, l := range []mcp.LoggingLevel{"debug", "info", "warning"} {
			req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Data: string(l)})
		}
		time.Sleep(50 * time.Millisecond)
		return text("logged"), nil
	})
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	cs, ev := connect(t, g, "", nil)
	ctx := context.Background()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__meta", Meta: mcp.Meta{"trace": "t-1", "io.modelcontextprotocol/clientInfo": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	// The hub's own session adds the keys of its hop (protocol
	// 2026-07-28 sends them with every request); the client's are not
	// passed on.
	if got := resultText(res); !strings.Contains(got, "trace=t-1") || !strings.Contains(got, "clientInfo=map[name:conduit") {
		t.Errorf("the server saw _meta %q, want trace=t-1 and the hub's own clientInfo", got)
	}

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "up__wait"})
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler was not canceled")
	}
	<-done

	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if got := resultText(callTool(t, cs, "up__log", nil)); got != "logged" {
		t.Fatalf("log = %q", got)
	}
	eventually(t, "the info and warning lines", func() bool { return slices.Equal(ev.snapshot().logs, []string{"info", "warning"}) })
}

// TestResourceUpdates: a client subscribed to a resource is told of its
// updates; one that is not, is not.
func TestResourceUpdates(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	up.AddResource(&mcp.Resource{Name: "status", URI: "up://status"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "ok"}}}, nil
	})
	u := &upstream{Server: up, t: t}
	g := newGateway(t, []conduit.Server{u.server("up")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	updated := make(chan string, 100)
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go g.Serve(ctx, st, nil)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	}).Connect(ctx, ct, sessionVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "up://status"}); err != nil {
		t.Fatal(err)
	}
	// The server registers the gateway's subscription a moment after it
	// answers (protocol 2026-07-28): updates are sent until one arrives.
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		up.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "up://status"})
		select {
		case uri := <-updated:
			if uri != "up://status" {
				t.Fatalf("updated %q", uri)
			}
			got = true
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("no update reached the client")
		}
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "up://status"}); err != nil {
		t.Fatal(err)
	}
}

// TestSharedURIAndLegacyRequests: a resource URI two servers list is left
// out and reported; a server on protocol 2025-11-25, whose requests during
// a call are JSON-RPC requests of its own, has its roots/list and
// elicitation passed to the session that made the call.
func TestSharedURIAndLegacyRequests(t *testing.T) {
	legacy := func(name string) *upstream {
		s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
		s.AddResource(&mcp.Resource{Name: "shared", URI: "test://shared"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://shared", Text: name}}}, nil
		})
		s.AddResource(&mcp.Resource{Name: "own", URI: "test://" + name}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://" + name, Text: name}}}, nil
		})
		return &upstream{Server: s, t: t}
	}
	a, b := legacy("a"), legacy("b")
	a.tool("roots", "List the client's roots.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, err
		}
		return text(res.Roots[0].URI), nil
	})
	a.tool("ask", "Ask the user.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "sure?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
		if err != nil {
			return nil, err
		}
		return text(res.Action), nil
	})
	var logs testenv.Buffer
	g := newGateway(t, []conduit.Server{a.server("a"), b.server("b")}, &gateway.Options{Hub: &conduit.Options{
		Policy: conduit.AllowAll(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	}})

	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///work"})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go g.Serve(ctx, st, nil)
	cs, err := client.Connect(ctx, ct, sessionVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if slices.Sort(uris); !slices.Equal(uris, []string{"test://a", "test://b"}) {
		t.Errorf("resources = %v, want test://shared left out", uris)
	}
	if !strings.Contains(logs.String(), "left out") || !strings.Contains(logs.String(), "test://shared") {
		t.Errorf("the shared URI was not reported; log:\n%s", logs.String())
	}
	if got := resultText(callTool(t, cs, "a__roots", nil)); got != "file:///work" {
		t.Errorf("roots = %q", got)
	}
	if got := resultText(callTool(t, cs, "a__ask", nil)); got != "decline" {
		t.Errorf("ask = %q", got)
	}
}
