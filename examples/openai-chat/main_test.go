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
	"github.com/modelcontextprotocol/go-sdk/mcp"
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
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		if r.Header.Get("Authorization") != "Bearer sk-test" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("headers %v", r.Header)
		}
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			t.Fatal(err)
		}
		if body["model"] != "gpt-test" {
			t.Errorf("model %v", body["model"])
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
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRun(t *testing.T) {
	wantTools := []string{"notes__add_note", "notes__delete_note", "notes__search_notes", "web__fetch", "web__screenshot"}
	srv := fakeAPI(t, func(n int, body map[string]any) {
		var names []string
		for _, tool := range body["tools"].([]any) {
			m := tool.(map[string]any)
			fn := m["function"].(map[string]any)
			if m["type"] != "function" || fn["parameters"] == nil {
				t.Errorf("tool %v", m)
			}
			// strict is always sent; web__fetch's open map of headers
			// cannot be strict, so it falls back.
			if want := fn["name"] != "web__fetch"; fn["strict"] != want {
				t.Errorf("%s strict %v", fn["name"], fn["strict"])
			}
			names = append(names, fn["name"].(string))
		}
		if !reflect.DeepEqual(names, wantTools) {
			t.Errorf("request %d tools %v", n+1, names)
		}
		msgs := body["messages"].([]any)
		if n == 1 {
			// user, assistant with tool_calls, then one tool message per
			// call in the model's order.
			if len(msgs) != 4 || msgs[1].(map[string]any)["tool_calls"] == nil {
				t.Fatalf("second messages %v", msgs)
			}
			for i, want := range []struct{ id, text string }{
				{"call_abc123", "Pasta night"},
				{"call_def456", "Creamy tomato pasta"},
			} {
				m := msgs[2+i].(map[string]any)
				if m["role"] != "tool" || m["tool_call_id"] != want.id || !strings.Contains(m["content"].(string), want.text) {
					t.Errorf("tool message %d: %v", i, m)
				}
			}
		}
	}, "tool_calls.json", "stop.json")

	// The model sent "limit": null, as strict mode makes it; the null must
	// be stripped, or the server would reject it.
	var sent map[string]any
	hub := newHub(t, nil)
	text, err := run(context.Background(), srv.URL+"/v1", srv.Client(), "sk-test", "gpt-test", &recorder{Source: hub, args: &sent}, "u1", "pasta?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, `Your note "Pasta night"`) {
		t.Errorf("text %q", text)
	}
	if sent["query"] != "pasta" {
		t.Errorf("search_notes got %v", sent)
	}
	if _, has := sent["limit"]; has {
		t.Errorf("search_notes got %v: the strict-mode null was not removed", sent)
	}
}

// recorder is a Source that remembers the arguments of search_notes.
type recorder struct {
	conduit.Source
	mu   sync.Mutex
	args *map[string]any
}

func (r *recorder) CallTool(ctx context.Context, name string, args any, o *conduit.CallOptions) (*mcp.CallToolResult, error) {
	if name == "notes__search_notes" {
		r.mu.Lock()
		*r.args, _ = args.(map[string]any)
		r.mu.Unlock()
	}
	return r.Source.CallTool(ctx, name, args, o)
}

func TestRunHalt(t *testing.T) {
	resp := `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"notes__add_note","arguments":"{\"title\":\"t\",\"body\":\"b\",\"tags\":null}"}}]},"finish_reason":"tool_calls"}]}`
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Write([]byte(resp))
	}))
	defer srv.Close()
	hub := newHub(t, func(context.Context, conduit.ApprovalRequest) conduit.Approval { return conduit.RejectAndHalt("stop") })
	_, err := run(context.Background(), srv.URL, srv.Client(), "sk-test", "gpt-test", hub, "u1", "save it")
	if !errors.Is(err, errHalted) || n != 1 {
		t.Fatalf("err %v after %d requests", err, n)
	}
}
