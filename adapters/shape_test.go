package adapters_test

import (
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// TestParseNamesAnotherProvidersShape: a response of one provider given to
// another is refused with the shape it has and the provider to give, for
// every pair, whole responses and bare messages alike.
func TestParseNamesAnotherProvidersShape(t *testing.T) {
	call := toolcall.Raw{ID: "call_1", Name: "notes__search_notes", Args: map[string]any{"query": "x"}}
	apis := map[adapters.Provider]string{
		adapters.Anthropic:       "an Anthropic Messages response",
		adapters.OpenAIChat:      "an OpenAI Chat Completions response",
		adapters.OpenAIResponses: "an OpenAI Responses response",
		adapters.Gemini:          "a Gemini response",
		adapters.Bedrock:         "an Amazon Bedrock Converse response",
	}
	for _, from := range adapters.Providers() {
		resp := adaptertest.FakeOf(from).Response("", call)
		for _, to := range adapters.Providers() {
			raws, err := to.Parse(resp)
			if to == from {
				if err != nil || len(raws) != 1 {
					t.Errorf("%s: %v %v", to, raws, err)
				}
				continue
			}
			want := "this looks like " + apis[from] + " (" // the keys follow
			if err == nil || !strings.Contains(err.Error(), want) ||
				!strings.Contains(err.Error(), "but the provider is "+to.String()+": give provider "+from.String()) {
				t.Errorf("%s's response given to %s: %v", from, to, err)
			}
		}
	}
	// An Anthropic or Gemini message read as an OpenAI Chat message would
	// have no calls: it is refused by its shape too.
	for from, msg := range map[string]map[string]any{
		"anthropic": {"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "t", "name": "n", "input": map[string]any{}}}},
		"gemini":    {"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "n", "args": map[string]any{}}}}},
		"bedrock":   {"role": "assistant", "content": []any{map[string]any{"toolUse": map[string]any{"toolUseId": "t", "name": "n", "input": map[string]any{}}}}},
	} {
		if _, err := adapters.OpenAIChat.Parse(msg); err == nil || !strings.Contains(err.Error(), "give provider "+from) {
			t.Errorf("%s message as openai-chat: %v", from, err)
		}
	}
	// A response of no known shape keeps the plain message.
	if _, err := adapters.Anthropic.Parse(map[string]any{"foo": 1}); err == nil || strings.Contains(err.Error(), "looks like") {
		t.Errorf("unknown shape: %v", err)
	}
}
