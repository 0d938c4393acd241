// Package agenttest is a loopback fake of the providers' HTTP APIs for tests
// of agent loops: it serves scripted responses in order, records every
// request, and checks the headers each provider requires.
package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/agent"
)

// Key is the API key the fake expects.
const Key = "test-key"

// Request is one request the fake received.
type Request struct {
	Path   string
	Header http.Header
	Body   map[string]any
}

// Fake is a provider's API on a loopback port.
type Fake struct {
	// URL is the base URL to give the loop (agent.Options.BaseURL,
	// --base-url).
	URL      string
	Provider adapters.Provider
	// Model is the model the requests must name.
	Model string

	t testing.TB
	// prefix is the base URL's path, set before the server starts so
	// that the handler never reads URL.
	prefix    string
	mu        sync.Mutex
	responses []string
	requests  []Request
}

// New starts a fake of p that answers with responses, in order, and fails
// t when a request is not what the provider expects. t.Cleanup stops it.
func New(t testing.TB, p adapters.Provider, model string, responses ...string) *Fake {
	f := &Fake{Provider: p, Model: model, t: t, responses: responses}
	switch p {
	case adapters.OpenAIChat, adapters.OpenAIResponses:
		f.prefix = "/v1"
	case adapters.Gemini:
		f.prefix = "/v1beta"
	}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL + f.prefix
	return f
}

// Requests returns the requests received so far.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

func (f *Fake) fail(w http.ResponseWriter, status int, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	f.t.Errorf("fake %s: %s", f.Provider, msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg}})
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	want := agent.Endpoint(f.Provider, f.prefix, f.Model)
	if r.Method != http.MethodPost || r.URL.Path != want {
		f.fail(w, http.StatusNotFound, "%s %s, want POST %s", r.Method, r.URL.Path, want)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		f.fail(w, http.StatusBadRequest, "Content-Type %q", ct)
		return
	}
	switch f.Provider {
	case adapters.Anthropic:
		if r.Header.Get("x-api-key") != Key || r.Header.Get("anthropic-version") != agent.AnthropicVersion {
			f.fail(w, http.StatusUnauthorized, "x-api-key %q, anthropic-version %q", r.Header.Get("x-api-key"), r.Header.Get("anthropic-version"))
			return
		}
	case adapters.Gemini:
		if r.Header.Get("x-goog-api-key") != Key {
			f.fail(w, http.StatusUnauthorized, "x-goog-api-key %q", r.Header.Get("x-goog-api-key"))
			return
		}
	default:
		if r.Header.Get("Authorization") != "Bearer "+Key {
			f.fail(w, http.StatusUnauthorized, "Authorization %q", r.Header.Get("Authorization"))
			return
		}
	}
	data, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		f.fail(w, http.StatusBadRequest, "body is not JSON: %v", err)
		return
	}
	if f.Provider != adapters.Gemini && body["model"] != f.Model {
		f.fail(w, http.StatusBadRequest, "model %v, want %s", body["model"], f.Model)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	n := len(f.requests)
	var resp string
	if n <= len(f.responses) {
		resp = f.responses[n-1]
	}
	f.mu.Unlock()
	if resp == "" {
		f.fail(w, http.StatusInternalServerError, "request %d, but only %d responses are scripted", n, len(f.responses))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, resp)
}

// Call is one tool call for ToolTurn.
type Call struct {
	ID   string
	Name string
	Args map[string]any
}

// ToolTurn is a response of p in which the model calls the tools, in order.
func ToolTurn(p adapters.Provider, calls ...Call) string {
	var v any
	switch p {
	case adapters.Anthropic:
		content := []any{map[string]any{"type": "text", "text": "Let me look."}}
		for _, c := range calls {
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Args})
		}
		v = map[string]any{"id": "msg_01", "type": "message", "role": "assistant", "model": "m", "content": content, "stop_reason": "tool_use"}
	case adapters.OpenAIChat:
		var tcs []any
		for _, c := range calls {
			args, _ := json.Marshal(c.Args)
			tcs = append(tcs, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": string(args)}})
		}
		v = map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "choices": []any{map[string]any{
			"index": 0, "finish_reason": "tool_calls",
			"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs},
		}}}
	case adapters.OpenAIResponses:
		var out []any
		for i, c := range calls {
			args, _ := json.Marshal(c.Args)
			out = append(out, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", i), "call_id": c.ID, "name": c.Name, "arguments": string(args), "status": "completed"})
		}
		v = map[string]any{"id": "resp_1", "object": "response", "status": "completed", "output": out}
	case adapters.Gemini:
		var parts []any
		for _, c := range calls {
			parts = append(parts, map[string]any{"functionCall": map[string]any{"id": c.ID, "name": c.Name, "args": c.Args}})
		}
		v = map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}}}
	}
	data, _ := json.Marshal(v)
	return string(data)
}

// TextTurn is a response of p in which the model answers with text only.
func TextTurn(p adapters.Provider, text string) string {
	var v any
	switch p {
	case adapters.Anthropic:
		v = map[string]any{"id": "msg_02", "type": "message", "role": "assistant", "model": "m",
			"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "end_turn"}
	case adapters.OpenAIChat:
		v = map[string]any{"id": "chatcmpl-2", "object": "chat.completion", "choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text},
		}}}
	case adapters.OpenAIResponses:
		v = map[string]any{"id": "resp_2", "object": "response", "status": "completed", "output": []any{map[string]any{
			"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
		}}}
	case adapters.Gemini:
		v = map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
			"parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}}}
	}
	data, _ := json.Marshal(v)
	return string(data)
}

// ToolNames returns the names of the tools a request offered, in order.
func ToolNames(p adapters.Provider, body map[string]any) []string {
	tools, _ := body["tools"].([]any)
	if p == adapters.Gemini && len(tools) == 1 {
		tools, _ = tools[0].(map[string]any)["functionDeclarations"].([]any)
	}
	var names []string
	for _, t := range tools {
		m, _ := t.(map[string]any)
		if fn, ok := m["function"].(map[string]any); ok {
			m = fn
		}
		names = append(names, fmt.Sprint(m["name"]))
	}
	return names
}

// Answers returns the ids of the tool answers at the end of a request's
// conversation, in order, and whether each is marked as an error; ids are
// the names for Gemini answers that carry none.
func Answers(p adapters.Provider, body map[string]any) (ids []string, isErr []bool) {
	key := map[adapters.Provider]string{adapters.Anthropic: "messages", adapters.OpenAIChat: "messages", adapters.OpenAIResponses: "input", adapters.Gemini: "contents"}[p]
	hist, _ := body[key].([]any)
	if len(hist) == 0 {
		return nil, nil
	}
	var items []any
	switch p {
	case adapters.Anthropic:
		last, _ := hist[len(hist)-1].(map[string]any)
		items, _ = last["content"].([]any)
	case adapters.Gemini:
		last, _ := hist[len(hist)-1].(map[string]any)
		items, _ = last["parts"].([]any)
	default:
		// Tool messages or output items: the trailing run of them.
		for i := len(hist) - 1; i >= 0; i-- {
			m, _ := hist[i].(map[string]any)
			if m["role"] != "tool" && m["type"] != "function_call_output" {
				break
			}
			items = append([]any{m}, items...)
		}
	}
	for _, it := range items {
		m, _ := it.(map[string]any)
		switch p {
		case adapters.Anthropic:
			if m["type"] != "tool_result" {
				continue
			}
			ids = append(ids, fmt.Sprint(m["tool_use_id"]))
			isErr = append(isErr, m["is_error"] == true)
		case adapters.OpenAIChat:
			ids = append(ids, fmt.Sprint(m["tool_call_id"]))
			s, _ := m["content"].(string)
			isErr = append(isErr, strings.HasPrefix(s, "Error: "))
		case adapters.OpenAIResponses:
			ids = append(ids, fmt.Sprint(m["call_id"]))
			s, _ := m["output"].(string)
			isErr = append(isErr, strings.HasPrefix(s, "Error: "))
		case adapters.Gemini:
			fr, _ := m["functionResponse"].(map[string]any)
			if fr == nil {
				continue
			}
			id := fmt.Sprint(fr["id"])
			if fr["id"] == nil {
				id = fmt.Sprint(fr["name"])
			}
			ids = append(ids, id)
			resp, _ := fr["response"].(map[string]any)
			isErr = append(isErr, resp["error"] != nil)
		}
	}
	return ids, isErr
}
