package main

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/demo"
)

// searchHub is demo.SearchHub, closed when the test ends.
func searchHub(t *testing.T) *conduit.Hub {
	t.Helper()
	hub, closeAll, err := demo.SearchHub(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	return hub
}

// A whole loop with Responses' tool search: every tool goes deferred, in
// one namespace per server, with tool_search; the API searches and loads
// the web namespace (tool_search_call, tool_search_output), the model
// calls web's fetch by its namespace, and the real tool answers. The
// API's own items go back in the input as they came, unanswered.
func TestRunSearch(t *testing.T) {
	var first any
	srv := fakeAPI(t, func(n int, body map[string]any) {
		tools := body["tools"].([]any)
		if n == 0 {
			first = body["tools"]
			var types, namespaces []string
			for _, tool := range tools {
				m := tool.(map[string]any)
				types = append(types, m["type"].(string))
				if m["type"] == "namespace" {
					namespaces = append(namespaces, m["name"].(string))
					for _, fn := range m["tools"].([]any) {
						if fn.(map[string]any)["defer_loading"] != true {
							t.Errorf("%s's %v is not deferred", m["name"], fn.(map[string]any)["name"])
						}
					}
				}
			}
			if !slices.Equal(types, []string{"tool_search", "namespace", "namespace", "namespace"}) || !slices.Equal(namespaces, []string{"notes", "web", "catalog"}) {
				t.Errorf("first request's tools: %v %v", types, namespaces)
			}
			return
		}
		if !reflect.DeepEqual(body["tools"], first) {
			t.Error("the tool list changed")
		}
		input := body["input"].([]any)
		var types []string
		for _, item := range input[1:] {
			types = append(types, item.(map[string]any)["type"].(string))
		}
		if !slices.Equal(types, []string{"reasoning", "tool_search_call", "tool_search_output", "function_call", "function_call_output"}) {
			t.Errorf("second request's input: %v", types)
		}
		out := input[len(input)-1].(map[string]any)
		if out["call_id"] != "call_7Wq2Lm9Xk4Rt1Zp8Vn3Jc6Hd" || !strings.Contains(out["output"].(string), "Creamy tomato pasta") {
			t.Errorf("the fetch's answer %v", out)
		}
	}, "search_function_call.json", "message.json")

	text, err := run(context.Background(), srv.URL+"/v1", srv.Client(), "sk-test", "gpt-test", searchHub(t), "u1", "pasta?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, `Your note "Pasta night"`) {
		t.Errorf("text %q", text)
	}
}
