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
		if r.Method != http.MethodPost || r.URL.Path != "/v1beta/models/gemini-test:generateContent" {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		if r.Header.Get("x-goog-api-key") != "g-test" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("headers %v", r.Header)
		}
		if r.URL.Query().Has("key") {
			t.Error("the key is in the URL")
		}
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			t.Fatal(err)
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
		tools := body["tools"].([]any)
		if len(tools) != 1 {
			t.Fatalf("tools %v", tools)
		}
		var names []string
		for _, d := range tools[0].(map[string]any)["functionDeclarations"].([]any) {
			m := d.(map[string]any)
			if m["parametersJsonSchema"] == nil {
				t.Errorf("declaration %v", m)
			}
			names = append(names, m["name"].(string))
		}
		if !reflect.DeepEqual(names, wantTools) {
			t.Errorf("request %d declarations %v", n+1, names)
		}
		contents := body["contents"].([]any)
		if n == 1 {
			if len(contents) != 3 {
				t.Fatalf("second contents %v", contents)
			}
			// The model's content goes back as it came, thought signature
			// included.
			model := contents[1].(map[string]any)
			if model["role"] != "model" || model["parts"].([]any)[0].(map[string]any)["thoughtSignature"] == nil {
				t.Errorf("model content %v", model)
			}
			user := contents[2].(map[string]any)
			parts := user["parts"].([]any)
			if user["role"] != "user" || len(parts) != 2 {
				t.Fatalf("answers %v", user)
			}
			for i, want := range []struct{ name, text string }{
				{"notes__search_notes", "Pasta night"},
				{"web__fetch", "Creamy tomato pasta"},
			} {
				fr := parts[i].(map[string]any)["functionResponse"].(map[string]any)
				out, _ := json.Marshal(fr["response"].(map[string]any)["output"])
				if fr["name"] != want.name || !strings.Contains(string(out), want.text) {
					t.Errorf("answer %d: %v", i, fr)
				}
			}
		}
	}, "function_call.json", "text.json")

	text, err := run(context.Background(), srv.URL+"/v1beta", srv.Client(), "g-test", "gemini-test", newHub(t, nil), "u1", "pasta?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, `Your note "Pasta night"`) {
		t.Errorf("text %q", text)
	}
}

func TestRunHalt(t *testing.T) {
	resp := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"notes__add_note","args":{"title":"t","body":"b"}}}]},"finishReason":"STOP"}]}`
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Write([]byte(resp))
	}))
	defer srv.Close()
	hub := newHub(t, func(context.Context, conduit.ApprovalRequest) conduit.Approval { return conduit.RejectAndHalt("stop") })
	_, err := run(context.Background(), srv.URL, srv.Client(), "g-test", "gemini-test", hub, "u1", "save it")
	if !errors.Is(err, errHalted) || n != 1 {
		t.Fatalf("err %v after %d requests", err, n)
	}
}
