package adaptertest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunConformanceTests checks that h's provider p does what every provider
// must. It goes through package adapters' portable API, which drives p's
// driver.Provider, and h's fake. It runs against an in-process MCP server
// behind a hub. Each provider's package runs it from its own tests. A
// provider from outside this module runs it as a built-in one does. It
// checks that:
//
//   - p has a name: a built-in's own, parsed back, or none of theirs. It
//     has shapes and a whole Wire. Their parts agree with one another and
//     with the fake.
//   - The calls of a response in the provider's shape parse back as the
//     model wrote them. The response may come as bytes, text, a decoded
//     map or a value that marshals to it.
//   - A malformed response, or one with malformed calls, is refused or
//     answered, never a panic. Every call found has its answer.
//   - Every call is answered in the model's order, keyed by its id, with
//     its result. An isError result and every failure are flagged as one.
//   - The calls that must not be sent never reach the server. Those are
//     unknown names, and arguments that are not an object or null.
//   - A turn without calls has no answers. An error of the API's is
//     refused.
//   - An approver's halt stops the calls not yet sent. They are still
//     answered.
//   - The answers and the calls' arguments share nothing with the
//     response.
//   - The limits on calls per response and on a response's size hold.
//   - An image over the answer's limit becomes a placeholder.
//   - The listing is every tool, in the tool set's order, the same from
//     turn to turn.
//   - Conduit's search_tools is offered, answered and reveals what it
//     finds.
//   - The provider's own search, when it has one, defers every tool. It
//     still resolves their calls.
//   - A turn the provider pauses (a [Pauser] fake) reads as paused. No
//     other does.
//   - A result over its budget reaches the model within the budget, then
//     a notice, as the fake reads it back. Its beginning is kept. A JSON
//     text or structuredContent is cut into valid JSON. Without options
//     the default budget applies.
//   - The results of one response share the turn's budget max-min fairly.
//   - The read tool is offered, and keeps what was cut. It reads the rest
//     by lines and by pattern, without sending anything to the server.
func RunConformanceTests(t *testing.T, h Harness) {
	t.Helper()
	p, f := h.Provider, h.Fake
	if f == nil {
		t.Fatalf("the harness of %v has no fake", p)
	}
	s := &suite{p: p, f: f, w: p.Wire()}
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"Identity", s.identity},
		{"Wire", s.wire},
		{"ParseRoundTrip", s.parseRoundTrip},
		{"MalformedResponses", s.malformed},
		{"Answers", s.answers},
		{"NoCalls", s.noCalls},
		{"Halt", s.halt},
		{"ShareNothing", s.shareNothing},
		{"Limits", s.limits},
		{"ImageLimit", s.imageLimit},
		{"Listing", s.listing},
		{"ConduitSearch", s.conduitSearch},
		{"NativeSearch", s.nativeSearch},
		{"Pause", s.pause},
		{"ResultBudget", s.resultBudget},
		{"TurnBudget", s.turnBudget},
		{"ReadTool", s.readTool},
	} {
		t.Run(tc.name, tc.run)
	}
}

type suite struct {
	p adapters.Provider
	f Fake
	w adapters.Wire
}

// ctx bounds one check.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// decoded is v through JSON, as a model's API gives it.
func decoded(t *testing.T, v any) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(marshal(t, v), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("does not marshal: %v", err)
	}
	return data
}

// script is a response of the provider's in which the model makes calls.
func (s *suite) script(t *testing.T, calls ...toolcall.Raw) map[string]any {
	return decoded(t, s.f.Response("I'll run these.", calls...))
}

// conversation lists the lab for the provider under o (nil for the
// defaults).
func (s *suite) conversation(t *testing.T, l *lab, o *adapters.ConversationOptions) *adapters.Conversation {
	t.Helper()
	conv, err := adapters.NewConversation(ctx(t), l.hub, s.p, o)
	if err != nil {
		t.Fatal(err)
	}
	return conv
}

// execute runs a response in conv and checks what holds for every
// execution. The response is not modified. Every call the provider parses
// is answered, in order, keyed by its id. The answers marshal.
func (s *suite) execute(t *testing.T, conv *adapters.Conversation, response map[string]any) *adapters.Execution {
	t.Helper()
	before := string(marshal(t, response))
	exec, err := conv.Execute(ctx(t), response)
	if err != nil {
		t.Fatal(err)
	}
	if after := string(marshal(t, response)); after != before {
		t.Errorf("the response was modified:\n%s\nwas\n%s", after, before)
	}
	raws, err := s.p.Parse(response)
	if err != nil {
		t.Fatal(err)
	}
	if len(exec.Results) != len(raws) || len(exec.Errors) != len(raws) {
		t.Fatalf("%d results and %d errors for %d calls", len(exec.Results), len(exec.Errors), len(raws))
	}
	got := s.answered(exec.Results)
	if len(got) != len(raws) {
		t.Fatalf("%d answers read back for %d calls", len(got), len(raws))
	}
	for i, r := range raws {
		if !keyedBy(got[i], r.ID, r.Name) {
			t.Errorf("answer %d is keyed by %q, want %q", i, got[i].ID, r.ID)
		}
	}
	marshal(t, exec.Results)
	return exec
}

// answered reads the answers back from the conversation they join.
func (s *suite) answered(results []map[string]any) []Answered {
	return s.f.Answered(s.w.Answers(results))
}

// keyedBy reports whether an answer read back is keyed by a call's id. For
// a call without one, it may be keyed by the call's id or its name. Gemini
// keys an answer without an id by its function's name.
func keyedBy(a Answered, id, name string) bool {
	return a.ID == id || (id == "" && a.ID == name)
}

func (s *suite) identity(t *testing.T) {
	name := s.p.String()
	if name == "" || name != strings.ToLower(name) || strings.ContainsAny(name, " \t") {
		t.Errorf("name %q: want a lower-case word", name)
	}
	builtIn := slices.Contains(adapters.Providers(), s.p)
	if back, err := adapters.ParseProvider(name); builtIn && (err != nil || back != s.p) {
		t.Errorf("ParseProvider(%q) = %v, %v", name, back, err)
	} else if !builtIn && err == nil {
		t.Errorf("name %q is a built-in provider's", name)
	}
	if sh := s.p.Shapes(); sh.Tools == "" || sh.Answers == "" {
		t.Errorf("shapes %+v", sh)
	}
	v := reflect.ValueOf(s.w)
	for i := range v.NumField() {
		if v.Type().Field(i).Name == "Stream" && !s.p.Streams() {
			continue // optional: a driver that reads no streams has none
		}
		if v.Field(i).IsZero() {
			t.Errorf("Wire.%s is not set", v.Type().Field(i).Name)
		}
	}
}

// wire: a response written by the fake parses back to its calls. It reads
// as a turn. Its answers read back from the conversation a request
// carries.
func (s *suite) wire(t *testing.T) {
	w := s.w
	if !strings.HasPrefix(w.Endpoint(w.BaseURL, "m"), "https://") {
		t.Errorf("endpoint %s", w.Endpoint(w.BaseURL, "m"))
	}
	h := http.Header{}
	w.Authorize(h, "the-key")
	carried := false
	for _, vs := range h {
		for _, v := range vs {
			carried = carried || strings.Contains(v, "the-key")
		}
	}
	if !carried {
		t.Errorf("the key is in no header: %v", h)
	}
	calls := []toolcall.Raw{
		{ID: "c1", Name: "srv__search", Args: map[string]any{"q": "pasta", "n": 2.0}},
		{ID: "c2", Name: "srv__ping", Args: map[string]any{}},
	}
	resp := decoded(t, s.f.Response("Looking.", calls...))
	resolved := toolcall.Resolve(parse(t, s.p, resp), roundTripTools())
	if len(resolved) != len(calls) {
		t.Fatalf("%d calls parsed, want %d", len(resolved), len(calls))
	}
	turn, err := w.Turn(resp)
	if err != nil || !turn.ToolUse || turn.Paused || turn.Text != "Looking." || len(turn.Items) == 0 {
		t.Fatalf("Turn: %+v, %v", turn, err)
	}
	if text, err := w.Turn(s.f.Response("Done.")); err != nil || text.ToolUse || text.Paused || text.Text != "Done." {
		t.Fatalf("text Turn: %+v, %v", text, err)
	}
	answers := []map[string]any{
		s.p.Answer(resolved[0], &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil, nil),
		s.p.Answer(resolved[1], nil, errors.New("down"), nil),
	}
	conv := append([]any{w.Prompt("hi")}, turn.Items...)
	conv = append(conv, w.Answers(answers)...)
	req := decoded(t, w.Request(toolcall.Request{Model: "m", Tools: []map[string]any{{"name": "x"}}, Conversation: conv}))
	if got := s.f.Conversation(req); !reflect.DeepEqual(got, decoded(t, map[string]any{"c": conv})["c"]) {
		t.Errorf("the request does not carry the conversation")
	}
	got := s.f.Answered(s.f.Conversation(req))
	if len(got) != 2 || got[0].ID != "c1" || got[0].Error || got[0].Text != "found" ||
		got[1].ID != "c2" || !got[1].Error || !strings.Contains(got[1].Text, "down") {
		t.Errorf("Answered %+v, want c1 found, and c2 an error that says down", got)
	}
	if got := s.f.Answered([]any{w.Prompt("hi")}); len(got) != 0 {
		t.Errorf("a prompt has answers: %+v", got)
	}
	if _, err := w.Turn(map[string]any{}); err == nil {
		t.Error("Turn of an empty response")
	}
}

// roundTripTools offers the tools the round trips call.
func roundTripTools() *conduit.ToolSet {
	obj := map[string]any{"type": "object"}
	return conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, conduit.ServerTools{Server: "srv", Tools: []*mcp.Tool{
		{Name: "search", InputSchema: obj}, {Name: "ping", InputSchema: obj}, {Name: "deep", InputSchema: obj}}})
}

func parse(t *testing.T, p adapters.Provider, response any) []toolcall.Raw {
	t.Helper()
	raws, err := p.Parse(response)
	if err != nil {
		t.Fatalf("a response of the fake's does not parse: %v", err)
	}
	return raws
}

// marshaler is a value that marshals to a response, as an official SDK's
// response struct does.
type marshaler struct{ v any }

func (m marshaler) MarshalJSON() ([]byte, error) { return json.Marshal(m.v) }

// parseRoundTrip: the calls parse back to the ids, names and arguments
// the model wrote. That holds for every form a response may take.
func (s *suite) parseRoundTrip(t *testing.T) {
	calls := []toolcall.Raw{
		{ID: "call_1", Name: "srv__search", Args: map[string]any{"q": "héllo ✓ \u2028 \"quoted\" <tag>", "n": 1e300, "k": -3.0}},
		{ID: "call_2", Name: "srv__ping", Args: map[string]any{}},
		{ID: "call_3", Name: "srv__deep", Args: map[string]any{"a": map[string]any{"b": []any{1.0, "x", nil, true, map[string]any{}}}}},
		{ID: "call_4", Name: "srv__ping", Args: map[string]any{"": ""}},
	}
	resp := s.f.Response("", calls...)
	data := marshal(t, resp)
	forms := map[string]any{
		"map": decoded(t, resp), "bytes": data, "raw message": json.RawMessage(data), "string": string(data), "marshaler": marshaler{resp},
	}
	for name, form := range forms {
		got := toolcall.Resolve(parse(t, s.p, form), roundTripTools())
		if len(got) != len(calls) {
			t.Fatalf("%s: %d calls, want %d", name, len(got), len(calls))
		}
		for i, c := range got {
			if c.Err != nil || c.Index != i || c.ID != calls[i].ID || c.Name != calls[i].Name || !reflect.DeepEqual(c.Args, calls[i].Args) {
				t.Errorf("%s: call %d is %+v (%v), want %+v", name, i, c, c.Err, calls[i])
			}
		}
	}
}

// malformed: a response that cannot be read is refused. One with
// malformed calls is answered. Neither panics, and every call found has
// its answer.
func (s *suite) malformed(t *testing.T) {
	l := newLab(t)
	valid := marshal(t, s.f.Response("x", toolcall.Raw{ID: "a", Name: echoTool, Args: map[string]any{"message": "m"}}))
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	hostile := s.f.Response("x",
		toolcall.Raw{ID: "bad\xffid", Name: strings.Repeat("n", 5000), Args: map[string]any{"message": "\xff"}},
		toolcall.Raw{ID: "", Name: "", Args: nil},
		toolcall.Raw{ID: "s", Name: echoTool, Args: "a string"},
		toolcall.Raw{ID: "d", Name: echoTool, Args: json.RawMessage(strings.Repeat("[", 500) + strings.Repeat("]", 500))},
	)
	inputs := map[string]any{
		"nil": nil, "empty": []byte{}, "not JSON": "not json", "an array": []byte("[1,2,3]"), "null": json.RawMessage("null"),
		"a number": 42, "an empty object": "{}", "truncated": valid[:len(valid)/2], "too deep": deep,
		"every field of the wrong type": map[string]any{"content": 7, "choices": 7, "output": 7, "candidates": 7, "parts": 7, "tool_calls": 7, "error": 7},
		"lists of junk":                 map[string]any{"content": []any{7, nil}, "choices": []any{7}, "output": []any{nil, "x"}, "candidates": []any{7}},
		"hostile calls":                 hostile,
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			raws, perr := s.p.Parse(in)
			exec, err := adapters.ExecuteToolCalls(ctx(t), l.hub, s.p, in, nil)
			switch {
			case perr != nil && err == nil:
				t.Fatalf("Parse refuses it (%v), ExecuteToolCalls does not", perr)
			case perr == nil && err != nil:
				t.Fatalf("ExecuteToolCalls refuses it (%v), Parse does not", err)
			case err != nil:
				return
			}
			if len(exec.Results) != len(raws) {
				t.Fatalf("%d answers for %d calls", len(exec.Results), len(raws))
			}
			marshal(t, exec.Results)
			for i, a := range s.answered(exec.Results) {
				if exec.Errors[i] != nil && !a.Error {
					t.Errorf("call %d failed (%v) but its answer does not say so", i, exec.Errors[i])
				}
			}
		})
	}
	if sent, _ := l.sentSince(0); len(sent) != 0 {
		t.Errorf("malformed calls reached the server: %v", sent)
	}
}

// answers: every call is answered in order, keyed by its id, and what
// must not be sent is not.
func (s *suite) answers(t *testing.T) {
	l := newLab(t)
	conv := s.conversation(t, l, nil)
	// Sent, first, in the middle and last.
	sent := []toolcall.Raw{
		{ID: "call_echo", Name: echoTool, Args: map[string]any{"message": "hi"}},
		{ID: "call_fail", Name: failTool, Args: map[string]any{}},
		{ID: "call_image", Name: imageTool, Args: map[string]any{}},
	}
	unknown := []toolcall.Raw{
		{ID: "call_unknown", Name: "lab__nope", Args: map[string]any{}},
		{ID: "call_own_name", Name: "echo", Args: map[string]any{"message": "x"}}, // the tool's own name, not its exposed one
		{ID: "call_no_name", Name: "", Args: map[string]any{}},
		{ID: "call_space", Name: echoTool + " ", Args: map[string]any{"message": "x"}},
	}
	// Arguments as text are OpenAI's string, a JSON string for the
	// others: neither is an object.
	notObject := []toolcall.Raw{
		{ID: "call_array", Name: echoTool, Args: []any{"not", "an", "object"}},
		{ID: "call_text", Name: echoTool, Args: "message=x"},
		{ID: "call_truncated", Name: echoTool, Args: `{"message":`},
		{ID: "call_number", Name: echoTool, Args: 42.0},
		{ID: "call_bool", Name: echoTool, Args: true},
		{ID: "call_null", Name: echoTool, Args: nil},
	}
	script := slices.Concat(sent[:1], unknown, sent[1:2], notObject, sent[2:])
	kinds := map[string]*conduit.Error{}
	for _, c := range unknown {
		kinds[c.ID] = conduit.ErrUnknownTool
	}
	for _, c := range notObject {
		kinds[c.ID] = conduit.ErrInvalidArguments
	}
	response := s.script(t, script...)
	exec := s.execute(t, conv, response)
	var resolved []string
	for _, c := range exec.Calls {
		resolved = append(resolved, c.ID)
	}
	if !slices.Equal(resolved, []string{"call_echo", "call_fail", "call_image"}) {
		t.Errorf("the calls that resolved: %v", resolved)
	}
	for i, a := range s.answered(exec.Results) {
		id := script[i].ID
		want, refused := kinds[id]
		// The isError result is an answer that reports a failure, but the
		// call itself completed.
		if flagged := refused || id == "call_fail"; a.Error != flagged {
			t.Errorf("%s: the answer reports a failure %v, want %v", id, a.Error, flagged)
		}
		var ce *conduit.Error
		if isErr := errors.As(exec.Errors[i], &ce); isErr != refused || isErr && ce.Kind != want {
			t.Errorf("%s: error %v, want kind %v", id, exec.Errors[i], want.String())
		}
	}
	for id, text := range map[int]string{0: "Echo: hi", 5: "disk full"} {
		if a := string(marshal(t, exec.Results[id])); !strings.Contains(a, text) {
			t.Errorf("%q is not in its answer: %s", text, a)
		}
	}
	if sent, _ := l.sentSince(0); !slices.Equal(sent, []string{"echo", "fail", "image"}) || l.received() != 3 {
		t.Errorf("the server received %d requests, for %v", l.received(), sent)
	}
	// The same response as bytes is answered the same.
	again, err := conv.Execute(ctx(t), marshal(t, response))
	if err != nil || string(marshal(t, again.Results)) != string(marshal(t, exec.Results)) {
		t.Errorf("the response as bytes is answered differently (%v)", err)
	}
}

// noCalls: a turn without calls is answered with nothing, and an error of
// the API's is refused.
func (s *suite) noCalls(t *testing.T) {
	l := newLab(t)
	conv := s.conversation(t, l, nil)
	exec := s.execute(t, conv, decoded(t, s.f.Response("Hello!")))
	if len(exec.Results) != 0 || exec.Halted {
		t.Errorf("a turn without calls: %+v", exec)
	}
	apiError := `{"type": "error", "error": {"type": "overloaded_error", "code": 529, "status": "UNAVAILABLE", "message": "Overloaded"}}`
	if _, err := conv.Execute(ctx(t), apiError); err == nil {
		t.Error("an API error is not refused")
	}
	if l.received() != 0 {
		t.Errorf("the server received %d requests", l.received())
	}
}

// halt: an approver's halt answers the calls not yet sent without
// sending them.
func (s *suite) halt(t *testing.T) {
	l := newLab(t)
	conv := s.conversation(t, l, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{MaxConcurrency: 1}})
	exec := s.execute(t, conv, s.script(t,
		toolcall.Raw{ID: "call_deploy", Name: deployTool, Args: map[string]any{}},
		toolcall.Raw{ID: "call_echo", Name: echoTool, Args: map[string]any{"message": "after the halt"}},
		toolcall.Raw{ID: "call_unknown", Name: "lab__nope", Args: map[string]any{}},
		toolcall.Raw{ID: "call_image", Name: imageTool, Args: map[string]any{}},
	))
	if !exec.Halted {
		t.Error("not halted")
	}
	kinds := []*conduit.Error{conduit.ErrDenied, conduit.ErrHalted, conduit.ErrUnknownTool, conduit.ErrHalted}
	for i, a := range s.answered(exec.Results) {
		if !a.Error || exec.Errors[i] == nil || !errors.Is(exec.Errors[i], kinds[i]) {
			t.Errorf("answer %d: reports a failure %v, error %v, want kind %v", i, a.Error, exec.Errors[i], kinds[i].String())
		}
	}
	for i, text := range []string{"The user stopped the agent.", "halted"} {
		if a := string(marshal(t, exec.Results[i])); !strings.Contains(a, text) {
			t.Errorf("answer %d does not say %q: %s", i, text, a)
		}
	}
	if l.received() != 0 {
		t.Errorf("the server received %d requests", l.received())
	}
}

// shareNothing: the answers, and the calls' arguments, share no map or
// slice with a decoded response. Changing all of one leaves the other as
// it was.
func (s *suite) shareNothing(t *testing.T) {
	l := newLab(t)
	conv := s.conversation(t, l, nil)
	script := []toolcall.Raw{
		{ID: "call_echo", Name: echoTool, Args: map[string]any{"message": "hi", "extra": map[string]any{"list": []any{1.0, map[string]any{"k": "v"}}}}},
		{ID: "call_fail", Name: failTool, Args: map[string]any{}},
		{ID: "call_image", Name: imageTool, Args: map[string]any{}},
		{ID: "call_unknown", Name: "lab__nope", Args: map[string]any{"a": []any{"b"}}},
		{ID: "call_array", Name: echoTool, Args: []any{"not", map[string]any{"an": "object"}}},
	}
	state := func(exec *adapters.Execution, items []any) string {
		return string(marshal(t, []any{exec.Results, items, exec.Calls}))
	}
	t.Run("changing the answers", func(t *testing.T) {
		response := s.script(t, script...)
		before := string(marshal(t, response))
		exec := s.execute(t, conv, response)
		items := s.w.Answers(exec.Results)
		was := state(exec, items)
		mutate(reflect.ValueOf(exec.Results))
		mutate(reflect.ValueOf(items))
		for i := range exec.Calls {
			mutate(reflect.ValueOf(exec.Calls[i].Args))
		}
		if state(exec, items) == was {
			t.Fatal("mutate changed nothing")
		}
		if after := string(marshal(t, response)); after != before {
			t.Errorf("changing the answers changed the response:\n%s\nwas\n%s", after, before)
		}
	})
	t.Run("changing the response", func(t *testing.T) {
		response := s.script(t, script...)
		exec := s.execute(t, conv, response)
		items := s.w.Answers(exec.Results)
		before := state(exec, items)
		was := string(marshal(t, response))
		mutate(reflect.ValueOf(response))
		if string(marshal(t, response)) == was {
			t.Fatal("mutate changed nothing")
		}
		if after := state(exec, items); after != before {
			t.Errorf("changing the response changed the answers:\n%s\nwas\n%s", after, before)
		}
	})
}

// mutate changes every map and slice reachable from v in place. A key is
// added to each map. Each slice's elements are replaced, after their own
// contents were changed.
func mutate(v reflect.Value) {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			mutate(v.Elem())
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			// Map values are not addressable: change a copy's insides,
			// which a shared map or slice shows.
			mutate(v.MapIndex(k))
		}
		if v.Type().Key().Kind() == reflect.String {
			if val := replacement(v.Type().Elem()); val.IsValid() {
				v.SetMapIndex(reflect.ValueOf("mutated").Convert(v.Type().Key()), val)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			mutate(v.Index(i))
			if val := replacement(v.Type().Elem()); val.IsValid() {
				v.Index(i).Set(val)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				mutate(v.Field(i))
			}
		}
	}
}

// replacement is a value of type t unlike any a response or an answer
// holds, or the invalid Value when there is none.
func replacement(t reflect.Type) reflect.Value {
	switch t.Kind() {
	case reflect.Interface:
		return reflect.ValueOf("mutated")
	case reflect.String:
		return reflect.ValueOf("mutated").Convert(t)
	case reflect.Map:
		return reflect.MakeMap(t)
	case reflect.Slice:
		return reflect.MakeSlice(t, 1, 1)
	}
	return reflect.Value{}
}

// limits: the calls past MaxToolCalls are answered and not sent. A
// response over MaxResponseBytes is refused unread.
func (s *suite) limits(t *testing.T) {
	l := newLab(t)
	conv := s.conversation(t, l, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Limits: adapters.ResponseLimits{MaxToolCalls: 2}}})
	var calls []toolcall.Raw
	for _, id := range []string{"c1", "c2", "c3"} {
		calls = append(calls, toolcall.Raw{ID: id, Name: echoTool, Args: map[string]any{"message": id}})
	}
	exec := s.execute(t, conv, s.script(t, calls...))
	if !errors.Is(exec.Errors[2], toolcall.ErrTooManyCalls) || exec.Errors[0] != nil || exec.Errors[1] != nil {
		t.Errorf("errors %v", exec.Errors)
	}
	if a := s.answered(exec.Results); !a[2].Error || a[0].Error {
		t.Errorf("answers %+v", a)
	}
	sent, n := l.sentSince(0)
	if !slices.Equal(sent, []string{"echo", "echo"}) {
		t.Errorf("the server received %v", sent)
	}

	small := s.conversation(t, l, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Limits: adapters.ResponseLimits{MaxResponseBytes: 64}}})
	if _, err := small.Execute(ctx(t), s.script(t, calls...)); !errors.Is(err, adapters.ErrResponseTooLarge) {
		t.Errorf("a response over the size limit: %v", err)
	}
	if sent, _ := l.sentSince(n); len(sent) != 0 {
		t.Errorf("the server received %v", sent)
	}
}

// imageLimit: an image over the answer's limit is a placeholder, never
// its bytes.
func (s *suite) imageLimit(t *testing.T) {
	l := newLab(t)
	o := &adapters.ConversationOptions{}
	o.Answers.MaxImageBytes = 8
	exec := s.execute(t, s.conversation(t, l, o), s.script(t, toolcall.Raw{ID: "call_image", Name: imageTool, Args: map[string]any{}}))
	a := string(marshal(t, exec.Results[0]))
	if strings.Contains(a, base64.StdEncoding.EncodeToString(pngBytes)) || !strings.Contains(a, "image/png") || exec.Errors[0] != nil {
		t.Errorf("the answer of an image over the limit: %s (%v)", a, exec.Errors[0])
	}
}

// listing: every tool, in the tool set's order, the same every time.
func (s *suite) listing(t *testing.T) {
	l := newLab(t)
	conv := s.conversation(t, l, nil)
	listing := conv.Listing()
	ts := listing.ToolSet
	if ts.Len() != 5 || len(listing.Tools) != ts.Len() {
		t.Fatalf("%d definitions for %d tools", len(listing.Tools), ts.Len())
	}
	i := 0
	for tool := range ts.All() {
		if def := string(marshal(t, listing.Tools[i])); !strings.Contains(def, `"`+tool.Exposed+`"`) {
			t.Errorf("definition %d is not %s's: %s", i, tool.Exposed, def)
		}
		i++
	}
	if listing.SearchTool != "" || len(listing.Deferred) != 0 {
		t.Errorf("a listing of 4 tools searches: %q %v", listing.SearchTool, listing.Deferred)
	}
	first := string(marshal(t, conv.Tools()))
	again, err := adapters.Tools(ctx(t), l.hub, s.p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(marshal(t, conv.Tools())) != first || string(marshal(t, again.Tools)) != first {
		t.Error("listings of the same tools differ")
	}
}

// conduitSearch: search_tools is offered alone, and answered by the
// Conversation. What it finds is offered from the next turn on, after
// what was offered before.
func (s *suite) conduitSearch(t *testing.T) {
	l := newLab(t)
	conv := s.conversation(t, l, &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: true}})
	listing := conv.Listing()
	if listing.SearchTool != adapters.SearchToolName || len(listing.Tools) != 1 || len(listing.Deferred) != 5 {
		t.Fatalf("search tool %q, %d tools, deferred %v", listing.SearchTool, len(listing.Tools), listing.Deferred)
	}
	before := string(marshal(t, conv.Tools()[0]))
	exec := s.execute(t, conv, s.script(t, toolcall.Raw{ID: "call_search", Name: adapters.SearchToolName, Args: map[string]any{"query": "echo the message"}}))
	if exec.Errors[0] != nil || !slices.Contains(exec.Revealed, echoTool) {
		t.Fatalf("search: %v, revealed %v", exec.Errors[0], exec.Revealed)
	}
	tools := conv.Tools()
	if len(tools) < 2 || string(marshal(t, tools[0])) != before {
		t.Fatalf("after the search the list does not start with what it was: %d tools", len(tools))
	}
	exec = s.execute(t, conv, s.script(t, toolcall.Raw{ID: "call_echo", Name: echoTool, Args: map[string]any{"message": "found"}}))
	if exec.Errors[0] != nil {
		t.Errorf("a call of a tool found: %v", exec.Errors[0])
	}
	if sent, _ := l.sentSince(0); !slices.Equal(sent, []string{"echo"}) {
		t.Errorf("the server received %v", sent)
	}
}

// nativeSearch: a provider with a search of its own lists every tool, the
// others deferred. Their calls resolve.
func (s *suite) nativeSearch(t *testing.T) {
	l := newLab(t)
	conv := s.conversation(t, l, &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOn}})
	listing := conv.Listing()
	if listing.SearchTool == adapters.SearchToolName {
		t.Logf("%v has no search of its own: conduit's is offered", s.p)
		return
	}
	if listing.SearchTool == "" || len(listing.Deferred) != 5 || listing.ToolSet.Len() != 5 {
		t.Fatalf("search tool %q, deferred %v", listing.SearchTool, listing.Deferred)
	}
	all := string(marshal(t, listing.Tools))
	for tool := range listing.ToolSet.All() {
		if !strings.Contains(all, tool.Name) {
			t.Errorf("%s is not listed", tool.Exposed)
		}
	}
	exec := s.execute(t, conv, s.script(t, toolcall.Raw{ID: "call_echo", Name: echoTool, Args: map[string]any{"message": "deferred"}}))
	if exec.Errors[0] != nil {
		t.Errorf("a call of a deferred tool: %v", exec.Errors[0])
	}
}

// pause: a paused turn reads as paused, not as tool use, and has no
// calls. No other turn is paused.
func (s *suite) pause(t *testing.T) {
	pz, ok := s.f.(Pauser)
	if !ok {
		for _, resp := range []map[string]any{s.f.Response("hi"), s.f.Response("", toolcall.Raw{ID: "c", Name: "x", Args: map[string]any{}})} {
			if turn, err := s.w.Turn(resp); err != nil || turn.Paused {
				t.Errorf("a turn of a provider that never pauses: %+v, %v", turn, err)
			}
		}
		return
	}
	resp := decoded(t, pz.Paused("Searching."))
	turn, err := s.w.Turn(resp)
	if err != nil || !turn.Paused || turn.ToolUse || turn.Text != "Searching." || len(turn.Items) == 0 {
		t.Fatalf("Turn %+v, %v", turn, err)
	}
	if raws := parse(t, s.p, resp); len(raws) != 0 {
		t.Errorf("a paused turn's calls: %+v", raws)
	}
}
