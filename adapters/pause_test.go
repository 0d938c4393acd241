package adapters_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// A turn Anthropic paused (pause_turn) is read as paused, not as tool use,
// and the next request carries it back as it came, last, with nothing
// after it: pause_turn.golden.json records the turn and that request.
func TestGoldenPauseTurn(t *testing.T) {
	p := adapters.Anthropic
	w := p.Wire()
	response := readJSON(t, filepath.Join("testdata", p.String(), "doc_pause_turn.json"))
	turn, err := w.Turn(response)
	if err != nil {
		t.Fatal(err)
	}
	if !turn.Paused || turn.ToolUse {
		t.Errorf("paused %v, tool use %v", turn.Paused, turn.ToolUse)
	}
	raws, err := p.Parse(response)
	if err != nil || len(raws) != 0 {
		t.Errorf("a paused turn's calls: %v %v", raws, err)
	}
	conv := append([]any{w.Prompt("What's the weather in San Francisco?")}, turn.Items...)
	next := w.Request(toolcall.Request{Model: "claude-sonnet-4-5", Conversation: conv})
	msgs := adaptertest.FakeOf(p).Conversation(next)
	last := jsonv.Object(msgs[len(msgs)-1])
	if last["role"] != "assistant" || !reflect.DeepEqual(last["content"], response["content"]) {
		t.Errorf("the paused turn does not end the next request as it came: %v", last)
	}
	golden(t, p, "pause_turn.golden.json", map[string]any{
		"response": response,
		"turn":     map[string]any{"tool_use": turn.ToolUse, "paused": turn.Paused, "text": turn.Text},
		"next":     next,
	})
	// Every other documented response ends for tool use, and is not
	// paused.
	for _, name := range []string{"doc_tool_use.json", "doc_tool_search_bm25.json", "doc_server_tool.json"} {
		turn, err := w.Turn(readJSON(t, filepath.Join("testdata", p.String(), name)))
		if err != nil || turn.Paused {
			t.Errorf("%s: paused %v, %v", name, turn.Paused, err)
		}
	}
}
