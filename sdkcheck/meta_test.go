package sdkcheck

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"
)

// recorder is a reporter that records failures instead of failing.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// record runs check against a recorder, on its own goroutine so that a
// Fatalf ends only the check.
func record(check func(r reporter)) []string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r.msgs
}

func decodeCheck[T any](strict bool) func(r reporter, v any) {
	return func(r reporter, v any) { decodeInto[T](r, "mutant", v, strict) }
}

// TestRoundTripCatchesMistakes shows that the round trip fails on the
// mistakes it is there to catch, for every SDK type the other tests
// decode into: a misnamed field, a field at the wrong level, a field of a
// provider's other API. (The SDKs' decoders alone accept all of these.)
func TestRoundTripCatchesMistakes(t *testing.T) {
	cases := []struct {
		name  string
		check func(r reporter, v any)
		good  any
		bad   any
	}{
		{"anthropic.ToolParam: inputSchema for input_schema", decodeCheck[anthropic.ToolParam](false),
			map[string]any{"name": "t", "input_schema": map[string]any{"type": "object"}},
			map[string]any{"name": "t", "inputSchema": map[string]any{"type": "object"}}},
		{"anthropic.ToolParam: cache_control ttl misspelled", decodeCheck[anthropic.ToolParam](false),
			map[string]any{"name": "t", "input_schema": map[string]any{"type": "object"}, "cache_control": map[string]any{"type": "ephemeral", "ttl": "1h"}},
			map[string]any{"name": "t", "input_schema": map[string]any{"type": "object"}, "cache_control": map[string]any{"type": "ephemeral", "time_to_live": "1h"}}},
		{"anthropic.ToolResultBlockParam: tool_call_id for tool_use_id", decodeCheck[anthropic.ToolResultBlockParam](false),
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "text", "text": "x"}}},
			map[string]any{"type": "tool_result", "tool_call_id": "toolu_1", "content": []any{map[string]any{"type": "text", "text": "x"}}}},
		{"anthropic.ToolResultBlockParam: image source mediaType", decodeCheck[anthropic.ToolResultBlockParam](false),
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "image",
				"source": map[string]any{"type": "base64", "media_type": "image/png", "data": "AAAA"}}}},
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "image",
				"source": map[string]any{"type": "base64", "mediaType": "image/png", "data": "AAAA"}}}}},
		{"anthropic.ToolResultBlockParam: error for is_error", decodeCheck[anthropic.ToolResultBlockParam](false),
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true},
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "error": true}},
		{"openai.ChatCompletionFunctionToolParam: strict beside function", decodeCheck[openai.ChatCompletionFunctionToolParam](false),
			map[string]any{"type": "function", "function": map[string]any{"name": "t", "parameters": map[string]any{"type": "object"}, "strict": true}},
			map[string]any{"type": "function", "strict": true, "function": map[string]any{"name": "t", "parameters": map[string]any{"type": "object"}}}},
		{"openai.ChatCompletionToolMessageParam: tool_use_id for tool_call_id", decodeCheck[openai.ChatCompletionToolMessageParam](false),
			map[string]any{"role": "tool", "tool_call_id": "call_1", "content": "x"},
			map[string]any{"role": "tool", "tool_use_id": "call_1", "content": "x"}},
		{"responses.FunctionToolParam: the Chat shape", decodeCheck[responses.FunctionToolParam](false),
			map[string]any{"type": "function", "name": "t", "parameters": map[string]any{"type": "object"}, "strict": true},
			map[string]any{"type": "function", "name": "t", "function": map[string]any{"name": "t", "parameters": map[string]any{"type": "object"}, "strict": true}}},
		{"responses.ResponseInputItemUnionParam: input_image url for image_url", decodeCheck[responses.ResponseInputItemUnionParam](false),
			map[string]any{"type": "function_call_output", "call_id": "call_1", "output": []any{map[string]any{"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"}}},
			map[string]any{"type": "function_call_output", "call_id": "call_1", "output": []any{map[string]any{"type": "input_image", "url": "data:image/png;base64,AAAA", "detail": "auto"}}}},
		{"responses.ResponseInputItemUnionParam: tool_call_id for call_id", decodeCheck[responses.ResponseInputItemUnionParam](false),
			map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "x"},
			map[string]any{"type": "function_call_output", "tool_call_id": "call_1", "output": "x"}},
		{"genai.FunctionDeclaration: parameters_json_schema", decodeCheck[genai.FunctionDeclaration](true),
			map[string]any{"name": "t", "parametersJsonSchema": map[string]any{"type": "object"}},
			map[string]any{"name": "t", "parameters_json_schema": map[string]any{"type": "object"}}},
		{"genai.Part: function_response", decodeCheck[genai.Part](true),
			map[string]any{"functionResponse": map[string]any{"name": "t", "response": map[string]any{"output": "x"}}},
			map[string]any{"function_response": map[string]any{"name": "t", "response": map[string]any{"output": "x"}}}},
		{"genai.Part: functionResponse.callId", decodeCheck[genai.Part](true),
			map[string]any{"functionResponse": map[string]any{"name": "t", "id": "c1", "response": map[string]any{"output": "x"}}},
			map[string]any{"functionResponse": map[string]any{"name": "t", "callId": "c1", "response": map[string]any{"output": "x"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if msgs := record(func(r reporter) { c.check(r, c.good) }); len(msgs) > 0 {
				t.Errorf("the correct shape fails:\n%s", strings.Join(msgs, "\n"))
			}
			if msgs := record(func(r reporter) { c.check(r, c.bad) }); len(msgs) == 0 {
				t.Errorf("the mistake passes the round trip")
			}
		})
	}
}
