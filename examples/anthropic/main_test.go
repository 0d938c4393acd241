package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/internal/demo"
)

// newHub is a hub over the demo's in-process notes and web servers, with
// the demo's policy.
func newHub(t *testing.T, approver conduit.Approver) *conduit.Hub {
	t.Helper()
	cfg, err := config.Parse(demo.Config)
	if err != nil {
		t.Fatal(err)
	}
	srvs, stop, err := demo.InProcess(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hub, err := conduit.NewHub(context.Background(), srvs, &conduit.Options{Policy: cfg.Policy, Approver: approver})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close(); stop() })
	return hub
}

// fakeAPI serves the testdata responses in order, after check has looked
// at each request's body.
func fakeAPI(t *testing.T, check func(n int, body map[string]any), files ...string) *httptest.Server {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		if r.Header.Get("x-api-key") != "sk-test" || r.Header.Get("anthropic-version") != "2023-06-01" ||
			!strings.HasPrefix(r.Header.Get("content-type"), "application/json") {
			t.Errorf("headers %v", r.Header)
		}
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			t.Fatal(err)
		}
		if body["model"] != "claude-test" || body["max_tokens"] != 4096.0 {
			t.Errorf("model %v, max_tokens %v", body["model"], body["max_tokens"])
		}
		if _, forced := body["tool_choice"]; forced {
			t.Error("tool_choice sent")
		}
		check(n, body)
		if n >= len(files) {
			t.Fatalf("request %d: no response left", n+1)
		}
		resp, err := os.ReadFile("testdata/" + files[n])
		if err != nil {
			t.Fatal(err)
		}
		n++
		w.Header().Set("content-type", "application/json")
		w.Write(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func toolNames(body map[string]any) (names []string, cached []bool) {
	for _, tool := range body["tools"].([]any) {
		m := tool.(map[string]any)
		names = append(names, m["name"].(string))
		cached = append(cached, m["cache_control"] != nil)
	}
	return names, cached
}

func TestRun(t *testing.T) {
	wantTools := []string{"notes__add_note", "notes__delete_note", "notes__search_notes", "web__fetch", "web__screenshot"}
	var first []any
	srv := fakeAPI(t, func(n int, body map[string]any) {
		names, cached := toolNames(body)
		if !reflect.DeepEqual(names, wantTools) {
			t.Errorf("request %d tools %v", n+1, names)
		}
		if !reflect.DeepEqual(cached, []bool{false, false, false, false, true}) {
			t.Errorf("cache_control on %v, want the last tool only", cached)
		}
		msgs := body["messages"].([]any)
		switch n {
		case 0:
			first = body["tools"].([]any)
			if len(msgs) != 1 || msgs[0].(map[string]any)["content"] != "pasta?" {
				t.Errorf("first messages %v", msgs)
			}
		case 1:
			if !reflect.DeepEqual(body["tools"], first) {
				t.Error("the tool list changed between turns")
			}
			if len(msgs) != 3 || msgs[1].(map[string]any)["role"] != "assistant" {
				t.Fatalf("second messages %v", msgs)
			}
			// The assistant turn is sent back as it came.
			if blocks := msgs[1].(map[string]any)["content"].([]any); len(blocks) != 3 || blocks[1].(map[string]any)["type"] != "tool_use" {
				t.Errorf("assistant content %v", blocks)
			}
			user := msgs[2].(map[string]any)
			results := user["content"].([]any)
			if user["role"] != "user" || len(results) != 2 {
				t.Fatalf("tool results %v", user)
			}
			for i, want := range []struct{ id, text string }{
				{"toolu_01A09q90qw90lq917835lq9", "Pasta night"},
				{"toolu_01B7xQ2cK3rZ8mNv5pL4wE6y", "Creamy tomato pasta"},
			} {
				r := results[i].(map[string]any)
				text := r["content"].([]any)[0].(map[string]any)["text"].(string)
				if r["type"] != "tool_result" || r["tool_use_id"] != want.id || r["is_error"] == true || !strings.Contains(text, want.text) {
					t.Errorf("result %d: %v", i, r)
				}
			}
		}
	}, "tool_use.json", "end_turn.json")

	text, err := run(context.Background(), srv.URL, srv.Client(), "sk-test", "claude-test", newHub(t, nil), "u1", "pasta?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, `Your note "Pasta night"`) {
		t.Errorf("text %q", text)
	}
}

func TestRunHalt(t *testing.T) {
	resp := `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"notes__add_note","input":{"title":"t","body":"b"}}],"stop_reason":"tool_use"}`
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Write([]byte(resp))
	}))
	defer srv.Close()
	hub := newHub(t, func(context.Context, conduit.ApprovalRequest) conduit.Approval { return conduit.RejectAndHalt("stop") })
	_, err := run(context.Background(), srv.URL, srv.Client(), "sk-test", "claude-test", hub, "u1", "save it")
	if !errors.Is(err, errHalted) || n != 1 {
		t.Fatalf("err %v after %d requests", err, n)
	}
}
