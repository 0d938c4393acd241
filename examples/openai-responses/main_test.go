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
		if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
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
			if m["type"] != "function" || m["parameters"] == nil {
				t.Errorf("tool %v", m)
			}
			if _, sent := m["strict"]; !sent {
				t.Errorf("%s: strict not sent", m["name"])
			}
			names = append(names, m["name"].(string))
		}
		if !reflect.DeepEqual(names, wantTools) {
			t.Errorf("request %d tools %v", n+1, names)
		}
		input := body["input"].([]any)
		if n == 1 {
			// The prompt, the two function_call items as they came, then
			// one function_call_output per call in the model's order.
			if len(input) != 5 || input[1].(map[string]any)["type"] != "function_call" || input[2].(map[string]any)["id"] != "fc_67ca09c6bedc8190a7abfec07b1a1333" {
				t.Fatalf("second input %v", input)
			}
			search := input[3].(map[string]any)
			if search["type"] != "function_call_output" || search["call_id"] != "call_unLAR8MvFNptuiZK6K6HCy5k" || !strings.Contains(search["output"].(string), "Pasta night") {
				t.Errorf("search output %v", search)
			}
			shot := input[4].(map[string]any)
			items, _ := shot["output"].([]any)
			if shot["call_id"] != "call_9rKmTz2QeL0xV4nB8sYwHd1c" || len(items) != 2 ||
				items[0].(map[string]any)["type"] != "input_text" || items[1].(map[string]any)["type"] != "input_image" ||
				!strings.HasPrefix(items[1].(map[string]any)["image_url"].(string), "data:image/png;base64,") {
				t.Errorf("screenshot output %v", shot)
			}
		}
	}, "function_calls.json", "message.json")

	text, err := run(context.Background(), srv.URL+"/v1", srv.Client(), "sk-test", "gpt-test", newHub(t, nil), "u1", "pasta?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, `Your note "Pasta night"`) {
		t.Errorf("text %q", text)
	}
}

func TestRunHalt(t *testing.T) {
	resp := `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"notes__add_note","arguments":"{\"title\":\"t\",\"body\":\"b\",\"tags\":null}","status":"completed"}]}`
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
