// Package outsideprovider_test is the proof that a provider can be added
// from outside package adapters: a made-up chat API ("relay"), its
// driver, its fake, and the conformance suite every built-in runs. It
// imports only public packages, as a module elsewhere would, and nothing
// else in the repository names it.
package outsideprovider_test

import (
	"encoding/base64"
	"fmt"
	"go/parser"
	"go/token"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// relay is the made-up API. A response is
//
//	{"reply": {"text": "...", "calls": [{"call_id", "function", "arguments": {...}}]}, "finish": "calls"}
//
// and a turn's answers are one {"role": "results", "results": [...]}
// message, each {"call_id", "failed", "output": [{"text"} | {"png"}]}.
type relay struct{}

func (relay) Name() string { return "relay" }

func (relay) Shapes() driver.Shapes {
	return driver.Shapes{
		Tools:   `{"function": name, "about": description, "arguments": schema}`,
		Answers: `{"call_id", "failed", "output"} items in one {"role": "results"} message`,
	}
}

func (relay) Tools(ts *conduit.ToolSet, _ *driver.ListOptions) []map[string]any {
	out := make([]map[string]any, 0, ts.Len())
	for t := range ts.All() {
		out = append(out, map[string]any{"function": t.Exposed, "about": toolcall.Description(t.Description), "arguments": toolcall.SchemaMap(t.InputSchema)})
	}
	return out
}

func (relay) Check(*conduit.ToolSet) []toolcall.Warning { return nil }

func (relay) Parse(response any) ([]toolcall.Raw, error) {
	m, err := driver.Decode(response)
	if err != nil {
		return nil, err
	}
	if why := driver.Mismatch("relay", m); why != "" {
		return nil, fmt.Errorf("relay: not a relay response%s", why)
	}
	reply, ok := m["reply"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("relay: the response has no reply")
	}
	var raws []toolcall.Raw
	for _, c := range list(reply["calls"]) {
		call := object(c)
		r := toolcall.Raw{ID: str(call["call_id"]), Name: str(call["function"]), Args: driver.Args(call["arguments"], true)}
		if r.ID == "" {
			r.Err = fmt.Errorf("the call has no call_id")
		}
		raws = append(raws, r)
	}
	return raws, nil
}

var imageLimit = driver.ImageLimit{Provider: "relay", MaxBytes: 5 << 20}

func (relay) Prepare(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) driver.Pending {
	var r driver.Rendered
	if err != nil || res == nil {
		r = driver.ErrorRendering(err)
	} else {
		mode := toolcall.StructuredAuto
		if o != nil && o.Structured != toolcall.StructuredDefault {
			mode = o.Structured
		}
		r = driver.Render(res, &driver.RenderOptions{Mode: mode, Images: true, Limit: driver.LimitOf(o, imageLimit)})
	}
	return driver.Pend(r, driver.ImageTokens, func(r driver.Rendered, _ string) map[string]any {
		var output []any
		for _, p := range r.Parts {
			switch {
			case p.Kind == driver.PartImage:
				output = append(output, map[string]any{"png": base64.StdEncoding.EncodeToString(p.Data), "type": p.MediaType})
			case strings.TrimSpace(p.Text) != "":
				output = append(output, map[string]any{"text": p.Text})
			}
		}
		if r.IsError && len(output) == 0 {
			output = append(output, map[string]any{"text": driver.EmptyError})
		}
		return map[string]any{"call_id": c.ID, "failed": r.IsError, "output": output}
	})
}

func (relay) API() driver.API {
	return driver.API{
		BaseURL:   "https://relay.example",
		KeyEnv:    "RELAY_KEY",
		Endpoint:  func(base, model string) string { return strings.TrimRight(base, "/") + "/v1/" + model + "/chat" },
		Authorize: func(h http.Header, key string) { h.Set("X-Relay-Key", key) },
		Prompt:    func(text string) map[string]any { return map[string]any{"role": "user", "text": text} },
		Request: func(r toolcall.Request) map[string]any {
			tools := make([]any, len(r.Tools))
			for i, t := range r.Tools {
				tools[i] = t
			}
			conv := r.Conversation
			if conv == nil {
				conv = []any{}
			}
			return map[string]any{"model": r.Model, "tools": tools, "messages": conv}
		},
		Turn: func(response map[string]any) (toolcall.Turn, error) {
			reply, ok := response["reply"].(map[string]any)
			if !ok {
				return toolcall.Turn{}, fmt.Errorf("relay: the response has no reply")
			}
			return toolcall.Turn{
				Items:   []any{map[string]any{"role": "assistant", "reply": reply}},
				Text:    str(reply["text"]),
				ToolUse: response["finish"] == "calls",
			}, nil
		},
		Answers: func(results []map[string]any) []any {
			items := make([]any, len(results))
			for i, r := range results {
				items[i] = r
			}
			return []any{map[string]any{"role": "results", "results": items}}
		},
	}
}

// fake writes relay's responses and reads its requests.
type fake struct{}

func (fake) Response(text string, calls ...toolcall.Raw) map[string]any {
	cs := []any{}
	for _, c := range calls {
		cs = append(cs, map[string]any{"call_id": c.ID, "function": c.Name, "arguments": c.Args})
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "calls"
	}
	return map[string]any{"reply": map[string]any{"text": text, "calls": cs}, "finish": finish}
}

func (fake) Conversation(request map[string]any) []any { return list(request["messages"]) }

func (fake) Answered(conversation []any) []adaptertest.Answered {
	if len(conversation) == 0 {
		return nil
	}
	last := object(conversation[len(conversation)-1])
	if last["role"] != "results" {
		return nil
	}
	var out []adaptertest.Answered
	for _, r := range list(last["results"]) {
		res := object(r)
		var texts []string
		for _, o := range list(res["output"]) {
			if t, ok := object(o)["text"].(string); ok {
				texts = append(texts, t)
			}
		}
		failed, _ := res["failed"].(bool)
		out = append(out, adaptertest.Answered{ID: str(res["call_id"]), Error: failed, Text: strings.Join(texts, "\n")})
	}
	return out
}

func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// TestOutsideProviderConforms: the driver, made a provider by NewProvider,
// passes the suite every built-in passes, driven through package
// adapters' portable API.
func TestOutsideProviderConforms(t *testing.T) {
	p := adapters.NewProvider(relay{})
	if slices.Contains(adapters.Providers(), p) {
		t.Fatal("an outside provider is listed among the built-ins")
	}
	adaptertest.RunConformanceTests(t, adaptertest.Harness{Provider: p, Fake: fake{}})
}

// TestOutsideProviderImportsPublicOnly: this package reaches nothing
// internal, as a module elsewhere could not.
func TestOutsideProviderImportsPublicOnly(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "provider_test.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if strings.Contains(path, "/internal") {
			t.Errorf("imports %s", path)
		}
	}
}
