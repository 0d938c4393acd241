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

func chatToolNames(body map[string]any) []string {
	var names []string
	for _, tool := range body["tools"].([]any) {
		names = append(names, tool.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	return names
}

// A whole loop with conduit's search: the first request offers
// search_tools only; the model searches, conduit answers (no server is
// asked) and the next request offers what it found after search_tools;
// the model calls it, and the real tool answers.
func TestRunSearch(t *testing.T) {
	var second []any
	srv := fakeAPI(t, func(n int, body map[string]any) {
		names := chatToolNames(body)
		msgs := body["messages"].([]any)
		switch n {
		case 0:
			if !slices.Equal(names, []string{"search_tools"}) {
				t.Errorf("first request offers %v", names)
			}
		case 1:
			if len(names) < 2 || names[0] != "search_tools" || !slices.Contains(names, "notes__search_notes") {
				t.Errorf("second request offers %v", names)
			}
			second = body["tools"].([]any)
			answer := msgs[len(msgs)-1].(map[string]any)
			if answer["role"] != "tool" || answer["tool_call_id"] != "call_search7Lq2" || !strings.Contains(answer["content"].(string), "notes__search_notes: ") {
				t.Errorf("the search's answer %v", answer)
			}
		case 2:
			if !reflect.DeepEqual(body["tools"], second) {
				t.Errorf("third request offers %v", names)
			}
			answer := msgs[len(msgs)-1].(map[string]any)
			// The revealed tool is strict too: the null the model sent
			// for its optional limit is removed before the call.
			if answer["tool_call_id"] != "call_notes3Xk8" || !strings.Contains(answer["content"].(string), "Pasta night") {
				t.Errorf("the search_notes answer %v", answer)
			}
		}
	}, "search_tools.json", "search_fetch.json", "stop.json")

	text, err := run(context.Background(), srv.URL+"/v1", srv.Client(), "sk-test", "gpt-test", searchHub(t), "u1", "pasta?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, `Your note "Pasta night"`) {
		t.Errorf("text %q", text)
	}
}
