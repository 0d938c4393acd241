package main

import (
	"context"
	"reflect"
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

// A whole loop with Anthropic's tool search: every tool goes deferred with
// the tool search tool; the API pauses the search (pause_turn) and the
// loop sends the turn back; the search's result references web__fetch,
// which Claude calls in the same turn, and the real tool answers.
func TestRunSearch(t *testing.T) {
	var first any
	srv := fakeAPI(t, func(n int, body map[string]any) {
		tools := body["tools"].([]any)
		if n == 0 {
			first = body["tools"]
			var search, fetch map[string]any
			deferred := 0
			for _, tool := range tools {
				m := tool.(map[string]any)
				if m["type"] == "tool_search_tool_bm25_20251119" {
					search = m
				}
				if m["name"] == "web__fetch" {
					fetch = m
				}
				if m["defer_loading"] == true {
					deferred++
				}
			}
			if search == nil || search["cache_control"] == nil || fetch == nil || fetch["defer_loading"] != true || deferred != 43 || len(tools) != 44 {
				t.Errorf("first request: %d tools, %d deferred, search %v, fetch %v", len(tools), deferred, search, fetch)
			}
		} else if !reflect.DeepEqual(body["tools"], first) {
			t.Errorf("request %d: the tool list changed", n+1)
		}
		msgs := body["messages"].([]any)
		switch n {
		case 1:
			// The paused turn goes back as it came, last.
			last := msgs[len(msgs)-1].(map[string]any)
			blocks, _ := last["content"].([]any)
			if len(msgs) != 2 || last["role"] != "assistant" || len(blocks) != 2 || blocks[1].(map[string]any)["type"] != "server_tool_use" {
				t.Errorf("second request's messages %v", msgs)
			}
		case 2:
			// The continued turn's blocks stay whole; only the tool_use
			// is answered, by the real tool.
			if len(msgs) != 4 {
				t.Fatalf("third request's messages %v", msgs)
			}
			blocks := msgs[2].(map[string]any)["content"].([]any)
			if blocks[0].(map[string]any)["type"] != "tool_search_tool_result" {
				t.Errorf("assistant content %v", blocks)
			}
			results := msgs[3].(map[string]any)["content"].([]any)
			r := results[0].(map[string]any)
			text := r["content"].([]any)[0].(map[string]any)["text"].(string)
			if len(results) != 1 || r["tool_use_id"] != "toolu_01Kp4Wz8Nq2Xr5Lm7Tc3Vb6H" || r["is_error"] == true || !strings.Contains(text, "Creamy tomato pasta") {
				t.Errorf("tool results %v", results)
			}
		}
	}, "search_paused.json", "search_tool_use.json", "end_turn.json")

	text, err := run(context.Background(), srv.URL, srv.Client(), "sk-test", "claude-test", searchHub(t), "u1", "pasta?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, `Your note "Pasta night"`) {
		t.Errorf("text %q", text)
	}
}
