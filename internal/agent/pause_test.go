package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/internal/agent"
	"github.com/conduitmcp/conduit/internal/agent/agenttest"
	"github.com/conduitmcp/conduit/internal/demo"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// Anthropic pauses a turn of its tool search (pause_turn): the loop sends
// the paused turn back as it came, with nothing after it and the same
// tools, and the model continues it: the search's result, then a call of
// the tool found, answered, then its answer.
func TestRunPauseTurn(t *testing.T) {
	p := adapters.Anthropic
	paused, err := os.ReadFile(filepath.Join("..", "..", "adapters", "testdata", "anthropic", "doc_pause_turn.json"))
	if err != nil {
		t.Fatal(err)
	}
	resumed := `{"id": "msg_2", "type": "message", "role": "assistant", "model": "` + model + `", "stop_reason": "tool_use", "content": [
		{"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_01PauseTurnSearch00001", "content": {"type": "tool_search_tool_search_result",
			"tool_references": [{"type": "tool_reference", "tool_name": "web__fetch"}]}},
		{"type": "tool_use", "id": "toolu_1", "name": "web__fetch", "input": {"url": "` + demo.RecipeURL + `"}}]}`
	f := agenttest.New(t, p, model, string(paused), resumed, agenttest.TextTurn(p, "Pasta night is on Friday."))
	var turns []agent.Turn
	o := opts(f)
	o.Search = adapters.SearchOptions{Mode: adapters.SearchOn}
	o.OnTurn = func(tn agent.Turn) { turns = append(turns, tn) }
	res, err := agent.Run(context.Background(), searchHub(t), "pasta?", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != agent.StopDone || res.Turns != 3 || res.Text != "Pasta night is on Friday." || !slices.Equal(res.Taint, []string{"web"}) {
		t.Fatalf("result %+v", res)
	}
	reqs := f.Requests()
	// The second request ends with the paused turn as it came.
	msgs := adaptertest.FakeOf(p).Conversation(reqs[1].Body)
	last := jsonv.Object(msgs[len(msgs)-1])
	var want map[string]any
	if err := json.Unmarshal(paused, &want); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || last["role"] != "assistant" || !reflect.DeepEqual(last["content"], want["content"]) {
		t.Errorf("the second request's messages: %s", mustJSON(t, msgs))
	}
	if ids, _ := agenttest.Answers(p, reqs[1].Body); len(ids) != 0 {
		t.Errorf("the paused turn was answered: %v", ids)
	}
	if canonTools(t, reqs[0].Body) != canonTools(t, reqs[1].Body) || canonTools(t, reqs[1].Body) != canonTools(t, reqs[2].Body) {
		t.Error("the tool list changed")
	}
	// The third answers the call of the continued turn.
	ids, isErr := agenttest.Answers(p, reqs[2].Body)
	if !slices.Equal(ids, []string{"toolu_1"}) || isErr[0] {
		t.Errorf("answers %v %v", ids, isErr)
	}
	if len(turns) != 2 || !turns[0].Paused || len(turns[0].Exec.Results) != 0 || turns[1].Paused {
		t.Errorf("OnTurn saw %+v", turns)
	}

	// A model that keeps pausing ends at MaxTurns.
	f = agenttest.New(t, p, model, string(paused), string(paused))
	o = opts(f)
	o.MaxTurns = 2
	res, err = agent.Run(context.Background(), searchHub(t), "pasta?", o)
	if err != nil || res.Stop != agent.StopMaxTurns || len(f.Requests()) != 2 {
		t.Errorf("paused twice: %+v, %v", res, err)
	}
}
