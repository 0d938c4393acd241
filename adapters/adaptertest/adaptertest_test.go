package adaptertest_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// A provider added to adapters' table without a fake here fails now, not
// in the middle of its package's conformance run.
func TestEveryProviderHasAFake(t *testing.T) {
	for _, p := range adapters.Providers() {
		if adaptertest.FakeOf(p) == nil {
			t.Errorf("%v has no fake", p)
		}
	}
	if adaptertest.FakeOf(adapters.Provider{}) != nil {
		t.Error("an invalid provider has a fake")
	}
}

func ExampleFakeOf() {
	// A response of Chat Completions in which the model calls a tool, as
	// the API would send it.
	fake := adaptertest.FakeOf(adapters.OpenAIChat)
	response := fake.Response("", toolcall.Raw{ID: "call_1", Name: "weather__get_forecast", Args: map[string]any{"city": "Oslo"}})
	raws, _ := adapters.OpenAIChat.Parse(response)
	fmt.Println(raws[0].ID, raws[0].Name, string(raws[0].Args.(json.RawMessage)))

	// An answer, read back from the conversation it joins.
	answer := adapters.OpenAIChat.Answer(toolcall.Call{ID: "call_1"}, nil, fmt.Errorf("the city is unknown"), nil)
	fmt.Printf("%+v\n", fake.Answered(adapters.OpenAIChat.Wire().Answers([]map[string]any{answer})))
	// Output:
	// call_1 weather__get_forecast {"city":"Oslo"}
	// [{ID:call_1 Error:true Text:Error: the city is unknown}]
}
