package gateway_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestStatePurposes: under one key, the gateway's requestState and a
// Conversation's saved state are sealed for different purposes: neither
// opens as the other, and the client reads nothing of its requestState.
func TestStatePurposes(t *testing.T) {
	var calls atomic.Int64
	up := fsUpstream(t, &calls)
	policy := conduit.NewPolicy(conduit.Ask("fs/*"))
	g := newGateway(t, []conduit.Server{up.server("fs")}, &gateway.Options{
		Hub: &conduit.Options{Policy: policy}, StateKeys: [][]byte{stateKey},
	})
	alice, _ := newClient(t, serveGateway(t, g), aliceToken, "")
	ctx := context.Background()
	const secretPath = "/srv/PLATYPUS-PRIVATE-PATH"
	res, err := callRaw(ctx, alice, "fs__write", map[string]any{"path": secretPath}, nil, "")
	rs := askedApproval(t, res, err, "fs__write")
	if !strings.HasPrefix(rs, "cs2.") || strings.Contains(rs, "alice") || strings.Contains(rs, "fs__write") || strings.Contains(rs, "PLATYPUS") {
		t.Errorf("the requestState is not sealed in version 2, or shows what it holds: %.60q", rs)
	}

	// A requestState is no conversation state, under the same key.
	keys := &adapters.StateOptions{Keys: [][]byte{stateKey}}
	if _, err := adapters.ReadState([]byte(rs), keys); !errors.Is(err, adapters.ErrStateOtherKey) {
		t.Errorf("a requestState read as a conversation's state: %v, want ErrStateOtherKey", err)
	}

	// A conversation's state, under the same key, is no requestState.
	hub, err := conduit.NewHub(ctx, []conduit.Server{up.server("fs")}, &conduit.Options{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	conv, err := adapters.NewConversation(ctx, hub, adapters.Anthropic, &adapters.ConversationOptions{State: *keys})
	if err != nil {
		t.Fatal(err)
	}
	saved, err := conv.State()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adapters.ReadState(saved, keys); err != nil {
		t.Fatalf("the conversation's own state: %v", err)
	}
	_, err = callRaw(ctx, alice, "fs__write", map[string]any{"path": secretPath}, accept, string(saved))
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(rpcErr.Message, "not issued by this gateway") {
		t.Errorf("a conversation's state sent as requestState: %v, want invalid params", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the server was called %d times, want none", n)
	}
}
