package adapters_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// weatherCalls are three calls of weatherHub's tools: two allowed, one
// the approver refuses.
var weatherCalls = []toolcall.Raw{
	{ID: "toolu_01", Name: "weather__get_forecast", Args: `{"city": "Paris", "days": 2}`},
	{ID: "toolu_02", Name: "weather__set_alert", Args: `{"city": "Oslo"}`},
	{ID: "toolu_03", Name: "weather__get_forecast", Args: `{"city": "Lima"}`},
}

// withIDs gives Gemini's calls no ids when the provider sends none.
func streamOf(t testing.TB, p adapters.Provider, text string, calls ...toolcall.Raw) [][]byte {
	t.Helper()
	parts, err := adaptertest.StreamOf(p.String(), text, calls...)
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

func joined(parts [][]byte) []byte { return bytes.Join(parts, nil) }

// TestStreamCareless: a stream read with no options at all still answers
// every call as a whole response's are, through the policy, and refuses
// calls it cannot read.
func TestStreamCareless(t *testing.T) {
	hub := weatherHub()
	defer hub.Close()
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			calls := append(weatherCalls[:3:3], toolcall.Raw{ID: "toolu_04", Name: "no_such_tool", Args: `{}`})
			parts := streamOf(t, p, "Let me check. ", calls...)
			var text strings.Builder
			st, err := adapters.ExecuteStream(context.Background(), hub, p, bytes.NewReader(joined(parts)), nil,
				&adapters.StreamOptions{Text: func(s string) { text.WriteString(s) }})
			if err != nil {
				t.Fatal(err)
			}
			if !st.Ended || len(st.Unfinished) != 0 {
				t.Fatalf("ended %v, unfinished %v", st.Ended, st.Unfinished)
			}
			if text.String() != "Let me check. " {
				t.Errorf("text deltas %q", text.String())
			}
			whole := run(t, hub, p, st.Response, nil)
			if !reflect.DeepEqual(st.Results, whole.Results) {
				t.Errorf("streamed answers differ from the whole response's:\n%v\n%v", st.Results, whole.Results)
			}
			if len(st.Results) != 4 || st.Errors[0] != nil || st.Errors[2] != nil {
				t.Fatalf("errors %v", st.Errors)
			}
			if !errors.Is(st.Errors[1], conduit.ErrDenied) {
				t.Errorf("set_alert: %v, want denied", st.Errors[1])
			}
			if !errors.Is(st.Errors[3], conduit.ErrUnknownTool) {
				t.Errorf("unknown tool: %v", st.Errors[3])
			}
			if got := resultText(p, st.Results[2]); !strings.Contains(got, "Lima") {
				t.Errorf("third answer %q", got)
			}
			raws, err := p.Parse(st.Response)
			if err != nil || len(raws) != 4 {
				t.Fatalf("the response made of the stream: %v %v", raws, err)
			}
			turn, err := p.Wire().Turn(st.Response)
			if err != nil || !turn.ToolUse || turn.Text != "Let me check. " {
				t.Errorf("Wire.Turn of the response: %+v %v", turn, err)
			}
		})
	}
}

// TestStreamInterrupted: a stream cut inside its second call answers the
// first and reports the second, never sent.
func TestStreamInterrupted(t *testing.T) {
	hub := weatherHub()
	defer hub.Close()
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			calls := []toolcall.Raw{weatherCalls[0], weatherCalls[2]}
			parts := streamOf(t, p, "", calls...)
			cut := joined(parts[:2]) // the head, then the first call whole
			if p != adapters.Gemini {
				// The start of the second call, not its end.
				rest := parts[2]
				cut = append(cut, rest[:bytes.Index(rest, []byte("\n\n"))+2]...)
			}
			st, err := adapters.ExecuteStream(context.Background(), hub, p, bytes.NewReader(cut), nil, nil)
			if !errors.Is(err, adapters.ErrStreamInterrupted) {
				t.Fatalf("err %v, want ErrStreamInterrupted", err)
			}
			if st.Ended || len(st.Results) != 1 || st.Errors[0] != nil || !strings.Contains(resultText(p, st.Results[0]), "Paris") {
				t.Fatalf("results %v errors %v", st.Results, st.Errors)
			}
			if p == adapters.Gemini {
				return // Gemini sends a call whole: none is ever begun and unfinished
			}
			if len(st.Unfinished) != 1 || st.Unfinished[0].ID != "toolu_03" {
				t.Errorf("unfinished %+v", st.Unfinished)
			}
		})
	}
}

// TestStreamMalformed: an event that is not JSON ends the stream with a
// clear error; the call before it is answered.
func TestStreamMalformed(t *testing.T) {
	hub := weatherHub()
	defer hub.Close()
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			parts := streamOf(t, p, "", weatherCalls[0], weatherCalls[2])
			in := append(joined(parts[:2]), "data: {\"type\": oops\n\n"...)
			in = append(in, joined(parts[2:])...)
			st, err := adapters.ExecuteStream(context.Background(), hub, p, bytes.NewReader(in), nil, nil)
			if err == nil || !strings.Contains(err.Error(), "not a JSON object") || !strings.HasPrefix(err.Error(), p.String()[:3]) {
				t.Fatalf("err %v", err)
			}
			if len(st.Results) != 1 || st.Errors[0] != nil {
				t.Fatalf("results %v errors %v", st.Results, st.Errors)
			}
		})
	}
}

// endless is a stream that begins a call and sends its arguments' deltas
// for ever.
type endless struct {
	head  []byte
	delta []byte
	read  int
}

func (e *endless) Read(b []byte) (int, error) {
	if len(e.head) > 0 {
		n := copy(b, e.head)
		e.head = e.head[n:]
		return n, nil
	}
	n := copy(b, e.delta[e.read%len(e.delta):])
	e.read += n
	return n, nil
}

// TestStreamHostile: endless deltas in a block never closed end at the
// response size limit, the default one included (for one provider: the
// parsers share the bound); the calls complete
// before are answered, and nothing of the open block is sent.
func TestStreamHostile(t *testing.T) {
	hub := weatherHub()
	defer hub.Close()
	pad := strings.Repeat("x", 60<<10)
	deltas := map[string]string{
		"anthropic":        `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"` + pad + `"}}`,
		"openai-chat":      `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"` + pad + `"}}]}}]}`,
		"openai-responses": `{"type":"response.function_call_arguments.delta","output_index":2,"delta":"` + pad + `"}`,
		"gemini":           `{"candidates":[{"content":{"role":"model","parts":[{"text":"` + pad + `"}]}}]}`,
		"bedrock":          `{"contentBlockDelta":{"delta":{"toolUse":{"input":"` + pad + `"}},"contentBlockIndex":1}}`,
	}
	for _, limit := range []int{0, 1 << 20} {
		for _, p := range adapters.Providers() {
			if limit == 0 && p != adapters.Anthropic {
				continue // the default limit is 32 MiB: once is enough
			}
			t.Run(fmt.Sprintf("%s/%d", p, limit), func(t *testing.T) {
				parts := streamOf(t, p, "", weatherCalls[0], weatherCalls[2])
				head := joined(parts[:2])
				if p != adapters.Gemini {
					rest := parts[2]
					head = append(head, rest[:bytes.Index(rest, []byte("\n\n"))+2]...)
				}
				src := &endless{head: head, delta: []byte("data: " + deltas[p.String()] + "\n\n")}
				o := &adapters.ExecOptions{TurnOptions: adapters.TurnOptions{Limits: adapters.ResponseLimits{MaxResponseBytes: limit}}}
				st, err := adapters.ExecuteStream(context.Background(), hub, p, src, o, nil)
				if !errors.Is(err, adapters.ErrResponseTooLarge) {
					t.Fatalf("err %v, want ErrResponseTooLarge", err)
				}
				max := limit
				if max == 0 {
					max = adapters.DefaultMaxResponseBytes
				}
				if src.read > max+len(src.delta) {
					t.Errorf("read %d bytes past the limit %d", src.read, max)
				}
				if len(st.Results) != 1 || st.Errors[0] != nil {
					t.Fatalf("results %v errors %v", st.Results, st.Errors)
				}
			})
		}
	}
}

// TestStreamTooManyCalls: the calls past MaxToolCalls are answered with an
// error and never sent, as in a whole response.
func TestStreamTooManyCalls(t *testing.T) {
	var sent atomic.Int32
	hub := weatherHubApproving(conduit.NewPolicy(conduit.Allow("weather/*")), nil)
	defer hub.Close()
	var calls []toolcall.Raw
	for i := range 5 {
		calls = append(calls, toolcall.Raw{ID: fmt.Sprintf("toolu_%d", i), Name: "weather__get_forecast", Args: `{"city": "Rome"}`})
	}
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			o := &adapters.ExecOptions{TurnOptions: adapters.TurnOptions{Limits: adapters.ResponseLimits{MaxToolCalls: 2}}}
			st, err := adapters.ExecuteStream(context.Background(), hub, p, bytes.NewReader(joined(streamOf(t, p, "", calls...))), o,
				&adapters.StreamOptions{Started: func(toolcall.Call) { sent.Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Results) != 5 || len(st.Calls) != 2 {
				t.Fatalf("%d results, %d calls sent", len(st.Results), len(st.Calls))
			}
			for i := 2; i < 5; i++ {
				if !errors.Is(st.Errors[i], toolcall.ErrTooManyCalls) {
					t.Errorf("call %d: %v", i, st.Errors[i])
				}
			}
		})
	}
	if sent.Load() != 2*int32(len(adapters.Providers())) {
		t.Errorf("%d calls started", sent.Load())
	}
}

// TestStreamHalt: an approver's halt on the first call stops the calls the
// stream completes after it, as in a whole response.
func TestStreamHalt(t *testing.T) {
	hub := weatherHubApproving(conduit.NewPolicy(conduit.Ask("weather/set_alert"), conduit.Allow("weather/*")),
		func(context.Context, conduit.ApprovalRequest) conduit.Approval {
			return conduit.Approval{Reason: "stop everything", Halt: true}
		})
	defer hub.Close()
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			calls := []toolcall.Raw{weatherCalls[1], weatherCalls[0], weatherCalls[2]}
			s, err := adapters.NewStream(context.Background(), hub, p, &adapters.ExecOptions{TurnOptions: adapters.TurnOptions{MaxConcurrency: 1}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, part := range streamOf(t, p, "", calls...) {
				if _, err := s.ReadFrom(bytes.NewReader(part)); err != nil {
					t.Fatal(err)
				}
			}
			st, err := s.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !st.Halted {
				t.Fatal("not halted")
			}
			for i := 1; i < 3; i++ {
				if !errors.Is(st.Errors[i], conduit.ErrHalted) {
					t.Errorf("call %d: %v, want halted", i, st.Errors[i])
				}
			}
		})
	}
}

// TestStreamNoEnd: a stream with no events at all is interrupted, with
// nothing to answer.
func TestStreamNoEnd(t *testing.T) {
	hub := weatherHub()
	defer hub.Close()
	st, err := adapters.ExecuteStream(context.Background(), hub, adapters.Anthropic, strings.NewReader(""), nil, nil)
	if !errors.Is(err, adapters.ErrStreamInterrupted) || st == nil || len(st.Results) != 0 {
		t.Fatalf("%v %v", st, err)
	}
	if _, err := json.Marshal(st); err != nil {
		t.Fatal(err)
	}
}

// TestStreamAPIError: an error event ends the stream with the API's words.
func TestStreamAPIError(t *testing.T) {
	hub := weatherHub()
	defer hub.Close()
	events := map[adapters.Provider]string{
		adapters.Anthropic:       "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n",
		adapters.OpenAIChat:      "data: {\"error\": {\"message\": \"Overloaded\", \"type\": \"server_error\"}}\n\n",
		adapters.OpenAIResponses: "event: error\ndata: {\"type\": \"error\", \"code\": \"server_error\", \"message\": \"Overloaded\", \"param\": null}\n\n",
		adapters.Gemini:          "data: {\"error\": {\"code\": 503, \"message\": \"Overloaded\", \"status\": \"UNAVAILABLE\"}}\n\n",
		adapters.Bedrock:         "data: {\"throttlingException\": {\"message\": \"Overloaded\"}}\n\n",
	}
	for p, ev := range events {
		_, err := adapters.ExecuteStream(context.Background(), hub, p, strings.NewReader(ev), nil, nil)
		if err == nil || !strings.Contains(err.Error(), "Overloaded") {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// gotCalls is what a test compares of the calls a stream made.
func gotCalls(st *adapters.Streamed) []string {
	var out []string
	for _, c := range st.Calls {
		b, _ := json.Marshal(c.Args)
		out = append(out, c.ID+" "+c.Name+" "+string(b))
	}
	return out
}

// TestStreamDocs reads each provider's streamed response transcribed from
// its documentation (testdata/*/stream_doc_*), against a server offering
// the documented functions: every call runs, the answers are those of the
// whole response the stream makes, and that response is the golden one.
func TestStreamDocs(t *testing.T) {
	cl, _ := docsServer(t)
	want := map[string][]string{
		"stream_doc_tool_use": {
			`toolu_01T1x1fJ34qAmk2tNTrN7Up6 get_weather {"location":"San Francisco, CA","unit":"fahrenheit"}`,
			`toolu_01WQ8rLrXPcEJ2jAR9qC3Hbw get_time {"timezone":"America/Los_Angeles"}`},
		"stream_doc_tool_calls": {
			`call_DdmO9pD3xa9XTPNJ32zg2hcA get_weather {"location":"Paris, France"}`,
			`call_ABCDEFGHIJ0123456789KLMN send_email {"body":"Hi bob","to":"bob@email.com"}`},
		"stream_doc_function_call": {
			`call_1234xyz get_weather {"location":"Paris, France"}`,
			`call_5678xyz send_email {"body":"Hi bob","to":"bob@email.com"}`},
		"stream_doc_parallel": {
			` power_disco_ball {"power":true}`,
			` start_music {"energetic":true,"loud":true}`,
			` dim_lights {"brightness":0.5}`},
	}
	bedrock := []string{`tooluse_kZJMlvQmRJ6eAyJE5GIl7Q top_song {"sign":"WZPZ"}`, `tooluse_Q1a2b3c4d5e6f7g8h9i0jK top_song {"sign":"WKRP"}`}
	want["stream_doc_tool_use.jsonl"], want["stream_doc_tool_use_sse"] = bedrock, bedrock
	for _, p := range adapters.Providers() {
		files, _ := filepath.Glob(filepath.Join("testdata", p.String(), "stream_doc_*"))
		if len(files) == 0 {
			t.Fatalf("no documented stream for %v", p)
		}
		for _, f := range files {
			if strings.HasSuffix(f, ".golden.json") {
				continue
			}
			name := strings.TrimSuffix(filepath.Base(f), ".sse")
			key := name
			if p == adapters.Bedrock && strings.HasSuffix(name, ".jsonl") {
				key, name = name, strings.TrimSuffix(name, ".jsonl")+"_jsonl"
			}
			if p == adapters.Bedrock && key == "stream_doc_tool_use" {
				key = "stream_doc_tool_use.jsonl"
			}
			t.Run(p.String()+"/"+name, func(t *testing.T) {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				listing, err := adapters.Tools(context.Background(), cl, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				o := &adapters.ExecOptions{ToolSet: listing.ToolSet, NullPaths: listing.NullPaths}
				var text strings.Builder
				st, err := adapters.ExecuteStream(context.Background(), cl, p, bytes.NewReader(data), o,
					&adapters.StreamOptions{Text: func(s string) { text.WriteString(s) }})
				if err != nil {
					t.Fatal(err)
				}
				if got := gotCalls(st); !reflect.DeepEqual(got, want[key]) {
					t.Errorf("calls\n%q\nwant\n%q", got, want[key])
				}
				for i, e := range st.Errors {
					if e != nil {
						t.Errorf("call %d: %v", i, e)
					}
				}
				if text.Len() == 0 && p != adapters.OpenAIChat && p != adapters.OpenAIResponses {
					t.Error("no text delta")
				}
				whole := run(t, cl, p, st.Response, o)
				if !reflect.DeepEqual(st.Results, whole.Results) {
					t.Errorf("streamed answers differ from the whole response's")
				}
				golden(t, p, name+".golden.json", st.Response)
			})
		}
	}
}

// TestConversationStream: a conversation's streamed turn runs against the
// tools it offered, adds to its taint as Execute does, and a call deferred
// in it waits for Resume; until then another turn is refused.
func TestConversationStream(t *testing.T) {
	hub := weatherHubApproving(conduit.NewPolicy(conduit.Allow("weather/get_*"), conduit.Ask("weather/*")),
		func(context.Context, conduit.ApprovalRequest) conduit.Approval {
			return conduit.Defer("on-call decides")
		})
	defer hub.Close()
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			conv, err := adapters.NewConversation(context.Background(), hub, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			parts := streamOf(t, p, "", weatherCalls[0], weatherCalls[1])
			st, err := conv.ExecuteStream(context.Background(), bytes.NewReader(joined(parts)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := conv.Taint(); len(got) != 1 || got[0] != "weather" {
				t.Errorf("taint %v", got)
			}
			if st.Complete() || len(st.Pending) != 1 || st.Pending[0].Name != "weather__set_alert" {
				t.Fatalf("pending %+v", st.Pending)
			}
			if _, err := conv.NewStream(context.Background(), nil); !errors.Is(err, adapters.ErrTurnPending) {
				t.Errorf("another turn: %v", err)
			}
			exec, err := conv.Resume(context.Background(), map[string]adapters.Ruling{st.Pending[0].ID: {Reason: "no"}})
			if err != nil {
				t.Fatal(err)
			}
			if !exec.Complete() || len(exec.Results) != 2 {
				t.Fatalf("resumed %+v", exec)
			}
		})
	}
}
