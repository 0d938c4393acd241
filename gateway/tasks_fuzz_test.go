package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/store"
)

// fuzzTasks is a gateway part that keeps tasks in a memory store, with
// one task of alice's.
func fuzzTasks(t testing.TB) (*Gateway, string) {
	k, err := newTasks(&TaskOptions{}, [][]byte{[]byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{tasks: k, store: store.NewMemory()}
	if err := k.add(context.Background(), g.store, taskKey("alice", "T1"), taskEvent{Kind: "created", TTLMs: 1000}); err != nil {
		t.Fatal(err)
	}
	return g, "T1"
}

// FuzzTaskRequest: whatever a client sends to a tasks method is answered
// with a JSON-RPC message, never a panic.
func FuzzTaskRequest(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"T1"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/update","params":{"taskId":"T1","inputResponses":{"a":{"action":"accept"}}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tasks/cancel","params":{"taskId":"nope"}}`,
		`{"id":[],"params":{"taskId":7}}`, `not json`, ``,
	} {
		f.Add(s, "tasks/get", "T1")
	}
	g, _ := fuzzTasks(f)
	meta := map[string]any{"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}}
	f.Fuzz(func(t *testing.T, body, method, name string) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader([]byte(body)))
		if name != "" {
			r.Header.Set("Mcp-Name", name)
		}
		w := httptest.NewRecorder()
		g.serveTask(w, r, "alice", peeked{method: method, meta: meta})
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
			t.Fatalf("HTTP %d", w.Code)
		}
		var msg map[string]json.RawMessage
		if err := json.Unmarshal(w.Body.Bytes(), &msg); err != nil {
			t.Fatalf("not JSON: %q", w.Body.String())
		}
	})
}

// FuzzTaskEvents: whatever events the store holds for a task (sealed with
// the gateway's key, so written by a replica), reading it never panics.
func FuzzTaskEvents(f *testing.F) {
	f.Add([]byte(`{"k":"asked","r":1,"q":{"a":{"method":"elicitation/create","params":{}}}}`), []byte(`{"k":"answered","r":1,"a":{"a":{}}}`))
	f.Add([]byte(`{"k":"ended","s":"failed","err":{"code":1}}`), []byte(`{"k":"asked","q":"x"}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		g, id := fuzzTasks(t)
		key := taskKey("alice", id)
		now := time.Now()
		for i, ev := range [][]byte{a, b} {
			at := now.Add(time.Duration(i+1) * time.Millisecond)
			member := string(rune('a'+i)) + " " + g.tasks.sealer.Seal(ev, at.Add(time.Hour))
			if err := g.store.AddMembers(context.Background(), key, time.Hour, "~"+member); err != nil {
				t.Fatal(err)
			}
		}
		ts, err := g.tasks.load(context.Background(), g.store, key, id)
		if err != nil || ts == nil {
			t.Fatalf("load = %v, %v", ts, err)
		}
		if _, err := json.Marshal(ts.detailed()); err != nil {
			t.Fatalf("tasks/get answer cannot be written: %v", err)
		}
	})
}
