package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A requestState approved, then replayed after conduit serve restarted
// (or on a second replica of the same machine), with no --store: the
// default store, a SQLite file in the state directory, remembers its single
// use, so the call runs once and the replay gets the recorded answer. With
// --store memory the replay after a restart would run it again; serve
// warns at start that the store is not shared across machines.
func TestServeRestartReplay(t *testing.T) {
	var calls atomic.Int64
	up := fsUpstream(t, &calls)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up.Server }, nil))
	t.Cleanup(srv.Close)
	config := fmt.Sprintf(`{"mcpServers": {"fs": {"url": %q}}, "policy": [{"ask": ["fs/write"]}, {"allow": ["*"]}],
		"serve": {"tokens": [{"principal": "alice", "env": "T_ALICE"}]}}`, srv.URL+"/mcp")
	env := []string{"XDG_STATE_HOME=" + t.TempDir(), "CONDUIT_STATE_KEY=" + string(stateKey), "T_ALICE=" + aliceToken}
	ctx := context.Background()
	args := map[string]any{"path": "/pay", "data": "PAY-100"}

	url, stop, stderr := startServe(t, config, env)
	if log := stderr(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "not shared across machines") || !strings.Contains(log, "--store redis://") {
		t.Errorf("serve with CONDUIT_STATE_KEY and a store of one machine did not warn:\n%s", log)
	}
	cs, _ := newClient(t, url, aliceToken, "")
	res, err := callRaw(ctx, cs, "fs__write", args, nil, "")
	st := askedApproval(t, res, err, "fs__write")
	res, err = callRaw(ctx, cs, "fs__write", args, accept, st)
	if err != nil || res.IsError || !strings.HasSuffix(resultText(res), "(1)") {
		t.Fatalf("approved = %q, %v", resultText(res), err)
	}
	first := resultText(res)
	cs.Close()
	stop()

	// The same machine, a new process: a restart, or a second replica.
	url, _, _ = startServe(t, config, env)
	cs, _ = newClient(t, url, aliceToken, "")
	res, err = callRaw(ctx, cs, "fs__write", args, accept, st)
	if err != nil || resultText(res) != first {
		t.Errorf("the approved state replayed after a restart = %q, %v; want the recorded %q", resultText(res), err, first)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the server was called %d times, want 1", n)
	}
}
