package main

import (
	"context"
	"encoding/json"
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

func declarations(body map[string]any) (names []string, decls any) {
	decls = body["tools"].([]any)[0].(map[string]any)["functionDeclarations"]
	for _, d := range decls.([]any) {
		names = append(names, d.(map[string]any)["name"].(string))
	}
	return names, decls
}

// lastResponse is the functionResponse of the last content's first part.
func lastResponse(body map[string]any) map[string]any {
	contents := body["contents"].([]any)
	parts := contents[len(contents)-1].(map[string]any)["parts"].([]any)
	return parts[0].(map[string]any)["functionResponse"].(map[string]any)
}

// A whole loop with conduit's search: the first request declares
// search_tools only; the model searches, conduit answers (no server is
// asked) and the next request declares what it found after search_tools;
// the model calls it, and the real tool answers.
func TestRunSearch(t *testing.T) {
	var second any
	srv := fakeAPI(t, func(n int, body map[string]any) {
		names, decls := declarations(body)
		switch n {
		case 0:
			if !slices.Equal(names, []string{"search_tools"}) {
				t.Errorf("first request declares %v", names)
			}
		case 1:
			if len(names) < 2 || names[0] != "search_tools" || !slices.Contains(names, "web__fetch") {
				t.Errorf("second request declares %v", names)
			}
			second = decls
			fr := lastResponse(body)
			answer, _ := json.Marshal(fr["response"])
			if fr["id"] != "fc_search_4kq9" || !strings.Contains(string(answer), "web__fetch: Fetch a web page") {
				t.Errorf("the search's answer %v", fr)
			}
		case 2:
			if !reflect.DeepEqual(decls, second) {
				t.Errorf("third request declares %v", names)
			}
			fr := lastResponse(body)
			answer, _ := json.Marshal(fr["response"])
			if fr["id"] != "fc_fetch_7mz2" || !strings.Contains(string(answer), "Creamy tomato pasta") {
				t.Errorf("the fetch's answer %v", fr)
			}
		}
	}, "search_tools.json", "search_fetch.json", "text.json")

	text, err := run(context.Background(), srv.URL+"/v1beta", srv.Client(), "g-test", "gemini-test", searchHub(t), "u1", "pasta?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, `Your note "Pasta night"`) {
		t.Errorf("text %q", text)
	}
}
