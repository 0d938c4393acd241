package adapters_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// A streamed Anthropic response, as the API sends it with "stream": true.
const forecastStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":40,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking Paris."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather__get_forecast","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}

event: message_stop
data: {"type":"message_stop"}

`

// ExecuteStream reads a streamed response and sends each call as soon as
// its block is complete; the text goes to the caller as it comes.
func ExampleExecuteStream() {
	hub := weatherHub()
	defer hub.Close()
	st, err := adapters.ExecuteStream(context.Background(), hub, adapters.Anthropic, strings.NewReader(forecastStream), nil,
		&adapters.StreamOptions{
			Text:    func(s string) { fmt.Println("text:", s) },
			Started: func(c toolcall.Call) { fmt.Println("started:", c.Name, c.Args["city"]) },
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ended:", st.Ended)
	printJSON(st.Results)
	// Output:
	// text: Checking Paris.
	// started: weather__get_forecast Paris
	// ended: true
	// [
	//   {
	//     "content": [
	//       {
	//         "text": "Sunny in Paris, 22°C.",
	//         "type": "text"
	//       }
	//     ],
	//     "tool_use_id": "toolu_1",
	//     "type": "tool_result"
	//   }
	// ]
}

// A Stream takes events one at a time, as an SSE client delivers them.
func ExampleStream_Feed() {
	hub := weatherHub()
	defer hub.Close()
	s, err := adapters.NewStream(context.Background(), hub, adapters.Bedrock, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ev := range []string{
		`{"messageStart": {"role": "assistant"}}`,
		`{"contentBlockStart": {"start": {"toolUse": {"toolUseId": "tooluse_1", "name": "weather__get_forecast"}}, "contentBlockIndex": 0}}`,
		`{"contentBlockDelta": {"delta": {"toolUse": {"input": "{\"city\": \"Oslo\"}"}}, "contentBlockIndex": 0}}`,
		`{"contentBlockStop": {"contentBlockIndex": 0}}`,
		`{"messageStop": {"stopReason": "tool_use"}}`,
	} {
		if err := s.Feed(adapters.StreamEvent{Data: []byte(ev)}); err != nil {
			fmt.Println(err)
			return
		}
	}
	st, err := s.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(st.Results), st.Errors[0] == nil, st.Response["stopReason"])
	// Output:
	// 1 true tool_use
}
