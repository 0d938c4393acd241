package sdkcheck

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

var openaiName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// strictTools are the tools whose schema converts to strict mode; the
// others fall back to "strict": false under StrictAuto.
func strictExpected(name string, o *adapters.ToolsOptions) bool {
	return o.Listing.Strict != driver.StrictOff && name != exposed("loose")
}

// checkOpenAIFunction checks a function definition's fields, as the SDK
// decoded them, against conduit's JSON.
func checkOpenAIFunction(t *testing.T, what string, fn map[string]any, name string, strict, strictSet bool, params map[string]any, o *adapters.ToolsOptions) {
	t.Helper()
	if name == "" || name != fn["name"] || !openaiName.MatchString(name) {
		t.Errorf("%s: the SDK's name is %q, conduit sent %v", what, name, fn["name"])
	}
	if !strictSet {
		t.Errorf("%s: the SDK has no strict (conduit always sends it): %s", what, canon(fn))
	}
	if want := strictExpected(name, o); strict != want {
		t.Errorf("%s: strict = %v, want %v", what, strict, want)
	}
	if params == nil || params["type"] != "object" {
		t.Errorf("%s: parameters = %s, want an object schema", what, canon(params))
	}
	if strict && params["additionalProperties"] != false {
		t.Errorf("%s: a strict schema without additionalProperties: false: %s", what, canon(params))
	}
}

var openaiListings = []*adapters.ToolsOptions{{}, {Listing: adapters.ListingOptions{Strict: driver.StrictOff}}}

func strictName(o *adapters.ToolsOptions) string {
	if o.Listing.Strict == driver.StrictOff {
		return "StrictOff"
	}
	return "StrictAuto"
}

// TestOpenAIChatToolDefinitions decodes every Chat Completions tool into
// the SDK's ChatCompletionToolUnionParam and ChatCompletionFunctionToolParam.
func TestOpenAIChatToolDefinitions(t *testing.T) {
	k := newKit(t)
	for _, o := range openaiListings {
		t.Run(strictName(o), func(t *testing.T) {
			l := k.list(t, adapters.OpenAIChat, o)
			checkFallbacks(t, l, o)
			for i, def := range l.Tools {
				fn, _ := def["function"].(map[string]any)
				what := fmt.Sprintf("tool %d (%v)", i, fn["name"])
				u := decodeInto[openai.ChatCompletionToolUnionParam](t, what, def, false)
				if u.OfFunction == nil {
					t.Errorf("%s: ChatCompletionToolUnionParam did not decode as OfFunction: %s", what, canon(u))
					continue
				}
				p := decodeInto[openai.ChatCompletionFunctionToolParam](t, what, def, false)
				f := p.Function
				checkOpenAIFunction(t, what, fn, f.Name, f.Strict.Value, f.Strict.Valid(), f.Parameters, o)
				if _, has := fn["description"]; has != f.Description.Valid() {
					t.Errorf("%s: description sent %v, SDK Description set %v", what, has, f.Description.Valid())
				}
			}
			decodeInto[[]openai.ChatCompletionToolUnionParam](t, "the tools list", l.Tools, false)
		})
	}
}

// TestOpenAIResponsesToolDefinitions decodes every Responses tool into the
// SDK's responses.ToolUnionParam and responses.FunctionToolParam.
func TestOpenAIResponsesToolDefinitions(t *testing.T) {
	k := newKit(t)
	for _, o := range openaiListings {
		t.Run(strictName(o), func(t *testing.T) {
			l := k.list(t, adapters.OpenAIResponses, o)
			checkFallbacks(t, l, o)
			for i, def := range l.Tools {
				what := fmt.Sprintf("tool %d (%v)", i, def["name"])
				u := decodeInto[responses.ToolUnionParam](t, what, def, false)
				if u.OfFunction == nil {
					t.Errorf("%s: responses.ToolUnionParam did not decode as OfFunction: %s", what, canon(u))
					continue
				}
				p := decodeInto[responses.FunctionToolParam](t, what, def, false)
				checkOpenAIFunction(t, what, def, p.Name, p.Strict.Value, p.Strict.Valid(), p.Parameters, o)
				if _, has := def["description"]; has != p.Description.Valid() {
					t.Errorf("%s: description sent %v, SDK Description set %v", what, has, p.Description.Valid())
				}
			}
			decodeInto[[]responses.ToolUnionParam](t, "the tools list", l.Tools, false)
		})
	}
}

func checkFallbacks(t *testing.T, l *adapters.Listing, o *adapters.ToolsOptions) {
	t.Helper()
	var want []string
	if o.Listing.Strict != driver.StrictOff {
		want = []string{exposed("loose")}
	}
	if !slices.Equal(l.Fallbacks, want) {
		t.Errorf("Fallbacks = %q, want %q", l.Fallbacks, want)
	}
	if o.Listing.Strict != driver.StrictOff {
		for _, tool := range []string{"search", "nested"} {
			if len(l.NullPaths[exposed(tool)]) == 0 {
				t.Errorf("no null paths for %s", exposed(tool))
			}
		}
	}
}

// plainText is the text of a call's expected parts, images as their
// placeholders, joined with newlines.
func plainText(c modelCall) string {
	var texts []string
	for _, p := range c.want.parts {
		if p.image != "" {
			texts = append(texts, p.placeholder)
		} else {
			texts = append(texts, p.text)
		}
	}
	return strings.Join(texts, "\n")
}

// openaiText is the text an OpenAI answer must carry (Chat's content, or
// Responses' string output), for a call that did not fail.
func openaiText(c modelCall) string {
	if c.want.isError {
		return "Error: " + plainText(c)
	}
	return plainText(c)
}

func checkOpenAIText(t *testing.T, what string, c modelCall, got string) {
	t.Helper()
	if c.want.failed {
		if !strings.HasPrefix(got, "Error: ") || !strings.Contains(got, c.want.failText) {
			t.Errorf("%s: %q, want \"Error: \" and %q", what, got, c.want.failText)
		}
		return
	}
	if want := openaiText(c); got != want {
		t.Errorf("%s: %q, want %q", what, got, want)
	}
}

// chatCompletion is a Chat Completions response as the API reference
// documents it, calling every tool of the calls with strict-mode
// arguments (JSON strings).
func chatCompletion(calls []modelCall) []byte {
	var tcs []string
	for _, c := range calls {
		tcs = append(tcs, fmt.Sprintf(`{"id":"call_abc123%s","type":"function","function":{"name":%q,"arguments":%q}}`,
			c.id, c.name, c.argsFor(true)))
	}
	return []byte(`{
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4.1-2025-04-14",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [` + strings.Join(tcs, ",\n          ") + `],
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {
    "prompt_tokens": 82,
    "completion_tokens": 17,
    "total_tokens": 99,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_50cad350e4"
}`)
}

// TestOpenAIChatToolCalls feeds an openai.ChatCompletion to
// ExecuteToolCalls (by value and by pointer), decodes every answer into
// the SDK's tool message params, and builds the next turn's
// ChatCompletionNewParams.
func TestOpenAIChatToolCalls(t *testing.T) {
	calls := modelCalls()
	body := chatCompletion(calls)
	var cc openai.ChatCompletion
	if err := json.Unmarshal(body, &cc); err != nil {
		t.Fatalf("the example response does not decode into openai.ChatCompletion: %v", err)
	}
	if len(cc.Choices) != 1 || len(cc.Choices[0].Message.ToolCalls) != len(calls) {
		t.Fatalf("the SDK decoded %s", canon(cc.Choices))
	}
	tcs := cc.Choices[0].Message.ToolCalls

	listing, exec := runAll(t, adapters.OpenAIChat, nil, calls, body, cc, &cc, cc.Choices[0].Message, cc.Choices[0].Message.ToParam())

	var msgs []openai.ChatCompletionMessageParamUnion
	for i, c := range calls {
		res := exec.Results[i]
		what := fmt.Sprintf("answer %d (%s)", i, c.name)
		m := decodeInto[openai.ChatCompletionToolMessageParam](t, what, res, false)
		if m.ToolCallID != tcs[i].ID {
			t.Errorf("%s: ToolCallID = %q, want %q", what, m.ToolCallID, tcs[i].ID)
		}
		if !m.Content.OfString.Valid() {
			t.Errorf("%s: the content is not a string: %s", what, canon(m.Content))
		}
		checkOpenAIText(t, what, c, m.Content.OfString.Value)

		u := decodeInto[openai.ChatCompletionMessageParamUnion](t, what, res, false)
		if u.OfTool == nil {
			t.Errorf("%s: ChatCompletionMessageParamUnion did not decode as OfTool: %s", what, canon(u))
		}
		msgs = append(msgs, u)
	}

	tools := decodeInto[[]openai.ChatCompletionToolUnionParam](t, "the tools", listing.Tools, false)
	req := openai.ChatCompletionNewParams{
		Model: "gpt-4.1",
		Tools: tools,
		Messages: append([]openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("Run every tool."),
			cc.Choices[0].Message.ToParam(),
		}, msgs...),
	}
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("ChatCompletionNewParams does not marshal: %v", err)
	}
	var sent map[string]any
	if err := json.Unmarshal(data, &sent); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "ChatCompletionNewParams.tools", listing.Tools, sent["tools"])
	for i, res := range exec.Results {
		sameJSON(t, fmt.Sprintf("ChatCompletionNewParams.messages[%d]", i+2), res, lookup(sent, "messages", i+2))
	}
	for i, tc := range tcs {
		if got := lookup(sent, "messages", 1, "tool_calls", i, "id"); got != tc.ID {
			t.Errorf("messages[1].tool_calls[%d].id = %v, want %s", i, got, tc.ID)
		}
	}
}

// openaiResponse is a Responses API response as the API reference
// documents it: a reasoning item, then a function_call item per call with
// strict-mode arguments (JSON strings).
func openaiResponse(calls []modelCall) []byte {
	items := []string{`{"type":"reasoning","id":"rs_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b","summary":[]}`}
	for _, c := range calls {
		items = append(items, fmt.Sprintf(`{"type":"function_call","id":"fc_67ca09c6bedc8190a7abfec07b1a13%s","call_id":"call_unLAR8MvFNptuiZK6K6H%s","name":%q,"arguments":%q,"status":"completed"}`,
			c.id, c.id, c.name, c.argsFor(true)))
	}
	return []byte(`{
  "id": "resp_67ca09c5efe0819096d0511c92b8c890096610f474011cc0",
  "object": "response",
  "created_at": 1741294021,
  "status": "completed",
  "error": null,
  "incomplete_details": null,
  "instructions": null,
  "max_output_tokens": null,
  "model": "gpt-4.1-2025-04-14",
  "output": [` + strings.Join(items, ",\n    ") + `],
  "parallel_tool_calls": true,
  "previous_response_id": null,
  "reasoning": {"effort": null, "summary": null},
  "store": true,
  "temperature": 1.0,
  "text": {"format": {"type": "text"}},
  "tool_choice": "auto",
  "tools": [],
  "top_p": 1.0,
  "truncation": "disabled",
  "usage": {
    "input_tokens": 291,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 23,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 314
  },
  "user": null,
  "metadata": {}
}`)
}

// TestOpenAIResponsesToolCalls feeds a responses.Response to
// ExecuteToolCalls (by value and by pointer), decodes every answer into
// the SDK's function_call_output params, and builds the next turn's
// ResponseNewParams.
func TestOpenAIResponsesToolCalls(t *testing.T) {
	calls := modelCalls()
	body := openaiResponse(calls)
	var r responses.Response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("the example response does not decode into responses.Response: %v", err)
	}
	var fcs []responses.ResponseFunctionToolCall
	for _, item := range r.Output {
		if item.Type == "function_call" {
			fcs = append(fcs, item.AsFunctionCall())
		}
	}
	if len(fcs) != len(calls) {
		t.Fatalf("the SDK decoded %d function calls, want %d", len(fcs), len(calls))
	}

	listing, exec := runAll(t, adapters.OpenAIResponses, nil, calls, body, r, &r)

	var outputs []responses.ResponseInputItemUnionParam
	for i, c := range calls {
		res := exec.Results[i]
		what := fmt.Sprintf("answer %d (%s)", i, c.name)
		u := decodeInto[responses.ResponseInputItemUnionParam](t, what, res, false)
		if u.OfFunctionCallOutput == nil {
			t.Errorf("%s: ResponseInputItemUnionParam did not decode as OfFunctionCallOutput: %s", what, canon(u))
			continue
		}
		outputs = append(outputs, u)
		o := decodeInto[responses.ResponseInputItemFunctionCallOutputParam](t, what, res, false)
		if o.CallID.Value != fcs[i].CallID {
			t.Errorf("%s: CallID = %q, want %q", what, o.CallID.Value, fcs[i].CallID)
		}
		checkResponsesOutput(t, what, c, o.Output)
	}

	// The next turn's input: the user's message, the response's output
	// items as the SDK's input params, then conduit's outputs.
	input := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Run every tool.", responses.EasyInputMessageRoleUser),
	}
	for _, item := range r.Output {
		var p responses.ResponseInputItemUnionParam
		if err := json.Unmarshal([]byte(item.RawJSON()), &p); err != nil {
			t.Fatalf("output item %s does not decode as an input item: %v", item.RawJSON(), err)
		}
		input = append(input, p)
	}
	prior := len(input)
	input = append(input, outputs...)
	tools := decodeInto[[]responses.ToolUnionParam](t, "the tools", listing.Tools, false)
	req := responses.ResponseNewParams{
		Model: "gpt-4.1",
		Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
	}
	data, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("ResponseNewParams does not marshal: %v", err)
	}
	var sent map[string]any
	if err := json.Unmarshal(data, &sent); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "ResponseNewParams.tools", listing.Tools, sent["tools"])
	if len(outputs) == len(exec.Results) {
		for i, res := range exec.Results {
			sameJSON(t, fmt.Sprintf("ResponseNewParams.input[%d]", prior+i), res, lookup(sent, "input", prior+i))
		}
	}
}

func checkResponsesOutput(t *testing.T, what string, c modelCall, out responses.ResponseInputItemFunctionCallOutputOutputUnionParam) {
	t.Helper()
	hasImage := slices.ContainsFunc(c.want.parts, func(p part) bool { return p.image != "" })
	if c.want.failed || !hasImage {
		if !out.OfString.Valid() {
			t.Errorf("%s: the output is not a string: %s", what, canon(out))
			return
		}
		checkOpenAIText(t, what, c, out.OfString.Value)
		return
	}
	items := out.OfResponseFunctionCallOutputItemArray
	parts := c.want.parts
	if c.want.isError {
		// "Error: " starts the first text item, or is an item of its own
		// when the result starts with an image.
		if parts[0].image == "" {
			parts = append([]part{textPart("Error: " + parts[0].text)}, parts[1:]...)
		} else {
			parts = append([]part{textPart("Error:")}, parts...)
		}
	}
	if len(items) != len(parts) {
		t.Errorf("%s: %d output items %s, want %d", what, len(items), canon(items), len(parts))
		return
	}
	for j, p := range parts {
		item := items[j]
		switch {
		case p.image != "":
			img := item.OfInputImage
			want := "data:" + p.image + ";base64," + base64.StdEncoding.EncodeToString(p.data)
			if img == nil || img.ImageURL.Value != want {
				t.Errorf("%s: item %d is %s, want an input_image of %s", what, j, short(item), p.image)
			} else if img.Detail != responses.ResponseInputImageContentDetailAuto {
				t.Errorf("%s: item %d detail = %q", what, j, img.Detail)
			}
		default:
			if item.OfInputText == nil || item.OfInputText.Text != p.text {
				t.Errorf("%s: item %d is %s, want input_text %q", what, j, short(item), p.text)
			}
		}
	}
}

// TestOpenAIResponsesSDKOutputItems reads the function_call items as the
// SDK holds them ([]responses.ResponseOutputItemUnion, marshaled by
// encoding/json inside a Response-shaped struct without its other
// fields), so that a fault in reading the items shows apart from one in
// reading the rest of the response: each call's arguments must be the
// object the model wrote.
func TestOpenAIResponsesSDKOutputItems(t *testing.T) {
	calls := modelCalls()
	var r responses.Response
	if err := json.Unmarshal(openaiResponse(calls), &r); err != nil {
		t.Fatal(err)
	}
	items := struct {
		Output []responses.ResponseOutputItemUnion `json:"output"`
	}{r.Output}
	raws, err := adapters.OpenAIResponses.Parse(items)
	if err != nil {
		t.Fatalf("OpenAIResponses.Parse: %v", err)
	}
	if len(raws) != len(calls) {
		t.Fatalf("OpenAIResponses.Parse found %d calls, want %d", len(raws), len(calls))
	}
	var wrong []string
	for i, c := range calls {
		var want any
		if err := json.Unmarshal([]byte(c.argsFor(true)), &want); err != nil {
			t.Fatal(err)
		}
		if raws[i].ID != r.Output[i+1].CallID || raws[i].Name != c.name {
			t.Errorf("call %d: id, name = %q, %q; want %q, %q", i, raws[i].ID, raws[i].Name, r.Output[i+1].CallID, c.name)
		}
		// Arguments come as the JSON text the model wrote.
		got := raws[i].Args
		var jerr error
		if text, ok := got.(json.RawMessage); ok {
			jerr = json.Unmarshal(text, &got)
		}
		if raws[i].Err != nil || jerr != nil || canon(got) != canon(want) {
			wrong = append(wrong, fmt.Sprintf("call %d (%s): arguments %s (err %v, %v), the model wrote %s",
				i, c.name, canon(got), raws[i].Err, jerr, canon(want)))
		}
	}
	if n := len(wrong); n > 0 {
		if n > 3 {
			wrong = append(wrong[:3], fmt.Sprintf("... and %d more", n-3))
		}
		t.Errorf("the arguments of %d of %d calls are wrong:\n\t%s", n, len(calls), strings.Join(wrong, "\n\t"))
	}
}

// TestOpenAIChatCustomToolCall answers a custom tool call (which conduit
// never offers, so it cannot be answered) the same way whether the
// response is the JSON body or the SDK's ChatCompletion, and decodes the
// answer into the SDK's tool message.
func TestOpenAIChatCustomToolCall(t *testing.T) {
	body := []byte(`{
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcU",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-5",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": null,
      "tool_calls": [{"id": "call_custom1", "type": "custom", "custom": {"name": "kit__echo", "input": "hello"}}],
      "refusal": null,
      "annotations": []
    },
    "finish_reason": "tool_calls"
  }]
}`)
	var cc openai.ChatCompletion
	if err := json.Unmarshal(body, &cc); err != nil {
		t.Fatal(err)
	}
	var answers []string
	for _, response := range []any{body, cc} {
		k := newKit(t)
		l := k.list(t, adapters.OpenAIChat, nil)
		exec, err := adapters.ExecuteToolCalls(t.Context(), k.hub, adapters.OpenAIChat, response, execOptions(l))
		if err != nil {
			t.Fatalf("ExecuteToolCalls(%T): %v", response, err)
		}
		if len(exec.Results) != 1 || exec.Errors[0] == nil {
			t.Fatalf("ExecuteToolCalls(%T): %s, errors %v; want one error answer", response, canon(exec.Results), exec.Errors)
		}
		if got := k.receivedBy("echo"); len(got) > 0 {
			t.Errorf("ExecuteToolCalls(%T) sent the custom call to echo: %q", response, got)
		}
		m := decodeInto[openai.ChatCompletionToolMessageParam](t, "the answer", exec.Results[0], false)
		if m.ToolCallID != "call_custom1" {
			t.Errorf("ToolCallID = %q", m.ToolCallID)
		}
		answers = append(answers, canon(exec.Results[0]))
	}
	if answers[0] != answers[1] {
		t.Errorf("the SDK's ChatCompletion is answered differently from its JSON body:\n body: %s\n SDK:  %s", answers[0], answers[1])
	}
}

// TestOpenAIResponsesSDKResponseParses reads a responses.Response value,
// which encoding/json marshals with an "error" object of empty fields
// where the body has "error": null (the SDK's Response.Error is a struct,
// not a pointer): a response that completed must not be taken for an
// API error.
func TestOpenAIResponsesSDKResponseParses(t *testing.T) {
	calls := modelCalls()
	var r responses.Response
	if err := json.Unmarshal(openaiResponse(calls), &r); err != nil {
		t.Fatal(err)
	}
	for _, response := range []any{r, &r} {
		raws, err := adapters.OpenAIResponses.Parse(response)
		if err != nil {
			t.Errorf("OpenAIResponses.Parse(%T): %v (the SDK value marshals \"error\" as %s)", response, err,
				canon(lookup(jsonValue(t, response), "error")))
			continue
		}
		if len(raws) != len(calls) {
			t.Errorf("OpenAIResponses.Parse(%T) found %d calls, want %d", response, len(raws), len(calls))
		}
	}
}
