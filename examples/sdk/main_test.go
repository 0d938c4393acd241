package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/internal/demo"
	"github.com/openai/openai-go/v3/option"
)

func newHub(t *testing.T) *conduit.Hub {
	t.Helper()
	cfg, err := config.Parse(demo.Config)
	if err != nil {
		t.Fatal(err)
	}
	srvs, stop, err := demo.InProcess(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hub, err := conduit.NewHub(context.Background(), srvs, &conduit.Options{Policy: cfg.Policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close(); stop() })
	return hub
}

// normal is v through JSON, for comparing values of different Go types.
func normal(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	json.Unmarshal(data, &out)
	return out
}

// TestRun runs the loop through the SDK against a fake API, and checks that
// what the SDK sent is exactly conduit's JSON: a field the SDK's types do
// not know would have been dropped on the way.
func TestRun(t *testing.T) {
	hub := newHub(t)
	listing, err := adapters.Tools(context.Background(), hub, adapters.OpenAIChat, &adapters.ToolsOptions{Principal: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bodies []map[string]any
	files := []string{"tool_calls.json", "stop.json"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			t.Errorf("%s %s, Authorization %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		json.Unmarshal(data, &body)
		if len(bodies) >= len(files) {
			t.Fatalf("request %d: no response left", len(bodies)+1)
		}
		resp, _ := os.ReadFile("testdata/" + files[len(bodies)])
		bodies = append(bodies, body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
	}))
	defer srv.Close()

	text, err := run(context.Background(), srv.URL+"/v1", srv.Client(), "gpt-test", hub, "u1", "pasta?",
		option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, `Your note "Pasta night"`) {
		t.Errorf("text %q", text)
	}
	if len(bodies) != 2 {
		t.Fatalf("%d requests", len(bodies))
	}
	for i, body := range bodies {
		if !reflect.DeepEqual(body["tools"], normal(t, listing.Tools)) {
			t.Errorf("request %d: the SDK changed the tools:\n got %v\nwant %v", i+1, body["tools"], normal(t, listing.Tools))
		}
	}
	msgs := bodies[1]["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("second messages %v", msgs)
	}
	for i, id := range []string{"call_abc123", "call_def456"} {
		m := msgs[2+i].(map[string]any)
		if m["role"] != "tool" || m["tool_call_id"] != id || m["content"] == "" {
			t.Errorf("tool message %d: %v", i, m)
		}
	}
	// The assistant message went back with its tool calls.
	if calls, _ := msgs[1].(map[string]any)["tool_calls"].([]any); len(calls) != 2 {
		t.Errorf("assistant message %v", msgs[1])
	}
}
