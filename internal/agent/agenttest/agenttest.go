// Package agenttest is a loopback fake of the providers' HTTP APIs for tests
// of agent loops. It serves scripted responses in order, records every
// request, and checks the headers each provider requires. It is written
// against adapters.Wire and adaptertest's fakes. So it knows no provider of
// its own.
package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/eventstream"
	"github.com/conduitmcp/conduit/internal/jsonv"
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

	t    testing.TB
	wire adapters.Wire
	// prefix is the base URL's path, set before the server starts so
	// that the handler never reads URL.
	prefix    string
	mu        sync.Mutex
	responses []string
	requests  []Request
}

// New starts a fake of p that answers with responses, in order. It fails t
// when a request is not what the provider expects. t.Cleanup stops it.
func New(t testing.TB, p adapters.Provider, model string, responses ...string) *Fake {
	f := &Fake{Provider: p, Model: model, t: t, wire: p.Wire(), responses: responses}
	if u, err := url.Parse(f.wire.BaseURL); err == nil {
		f.prefix = strings.TrimRight(u.Path, "/")
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
	want := f.wire.Endpoint(f.prefix, f.Model)
	streamPath := ""
	if f.wire.Stream != nil {
		if u, err := url.Parse(f.wire.Stream(want, map[string]any{})); err == nil && u.Path != want {
			streamPath = u.Path
		}
	}
	if r.Method != http.MethodPost || (r.URL.Path != want && (streamPath == "" || r.URL.Path != streamPath)) {
		f.fail(w, http.StatusNotFound, "%s %s, want POST %s", r.Method, r.URL.Path, want)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		f.fail(w, http.StatusBadRequest, "Content-Type %q", ct)
		return
	}
	auth := http.Header{}
	f.wire.Authorize(auth, Key)
	for k := range auth {
		if got, want := r.Header.Get(k), auth.Get(k); got != want {
			f.fail(w, http.StatusUnauthorized, "%s %q, want %q", k, got, want)
			return
		}
	}
	data, _ := io.ReadAll(r.Body)
	var body map[string]any
	if err := json.Unmarshal(data, &body); err != nil {
		f.fail(w, http.StatusBadRequest, "body is not JSON: %v", err)
		return
	}
	// The model goes in the body where the API wants it there.
	if _, inBody := f.wire.Request(toolcall.Request{Model: f.Model})["model"]; inBody && body["model"] != f.Model {
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
	if r.URL.Path == streamPath || body["stream"] == true {
		if parts := f.stream(resp); parts != nil && f.Provider.String() == "bedrock" {
			// ConverseStream over HTTP: AWS's binary event stream.
			w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
			for _, part := range parts {
				for _, line := range strings.Split(string(part), "\n") {
					data, ok := strings.CutPrefix(line, "data: ")
					var ev map[string]json.RawMessage
					if !ok || json.Unmarshal([]byte(data), &ev) != nil {
						continue
					}
					for typ, payload := range ev {
						eventstream.Write(w, map[string]string{":event-type": typ, ":content-type": "application/json", ":message-type": "event"},
							payload, ":event-type", ":content-type", ":message-type")
					}
				}
				if fl, ok := w.(http.Flusher); ok {
					fl.Flush()
				}
			}
			return
		} else if parts != nil {
			// One part per flush: each call reaches the loop whole, before
			// the next.
			w.Header().Set("Content-Type", "text/event-stream")
			for _, part := range parts {
				w.Write(part)
				if fl, ok := w.(http.Flusher); ok {
					fl.Flush()
				}
			}
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, resp)
}

// stream is the scripted response as the API streams it. It is nil when the
// stream would not say the same. Only text and calls, as ToolTurn and
// TextTurn write them, are streamed.
func (f *Fake) stream(resp string) [][]byte {
	var m map[string]any
	if json.Unmarshal([]byte(resp), &m) != nil {
		return nil
	}
	turn, err := f.wire.Turn(m)
	raws, perr := f.Provider.Parse(m)
	if err != nil || perr != nil || turn.Paused {
		return nil
	}
	plain, _ := json.Marshal(adaptertest.FakeOf(f.Provider).Response(turn.Text, raws...))
	var pm map[string]any
	if json.Unmarshal(plain, &pm) != nil || !reflect.DeepEqual(pm, m) {
		return nil
	}
	parts, err := adaptertest.StreamOf(f.Provider.String(), turn.Text, raws...)
	if err != nil {
		return nil
	}
	return parts
}

// Call is one tool call for ToolTurn.
type Call struct {
	ID   string
	Name string
	Args map[string]any
}

// ToolTurn is a response of p in which the model calls the tools, in order.
func ToolTurn(p adapters.Provider, calls ...Call) string {
	raws := make([]toolcall.Raw, len(calls))
	for i, c := range calls {
		raws[i] = toolcall.Raw{ID: c.ID, Name: c.Name, Args: c.Args}
	}
	data, _ := json.Marshal(adaptertest.FakeOf(p).Response("Let me look.", raws...))
	return string(data)
}

// TextTurn is a response of p in which the model answers with text only.
func TextTurn(p adapters.Provider, text string) string {
	data, _ := json.Marshal(adaptertest.FakeOf(p).Response(text))
	return string(data)
}

// ToolNames returns the names of the tools a request offered, in order.
func ToolNames(body map[string]any) []string {
	var names []string
	tools := jsonv.List(body["tools"])
	if tc := jsonv.Object(body["toolConfig"]); tc != nil {
		tools = jsonv.List(tc["tools"]) // Bedrock's Converse
	}
	for _, t := range tools {
		m := jsonv.Object(t)
		if spec := jsonv.Object(m["toolSpec"]); spec != nil {
			m = spec
		}
		if decls := jsonv.List(m["functionDeclarations"]); decls != nil {
			for _, d := range decls {
				names = append(names, jsonv.String(jsonv.Object(d)["name"]))
			}
			continue
		}
		if fn := jsonv.Object(m["function"]); fn != nil {
			m = fn
		}
		names = append(names, jsonv.String(m["name"]))
	}
	return names
}

// Answers returns the ids of the tool answers at the end of a request's
// conversation, in order. It also returns whether each is marked as an
// error. For Gemini answers, which carry no ids, the ids are the names.
func Answers(p adapters.Provider, body map[string]any) (ids []string, isErr []bool) {
	f := adaptertest.FakeOf(p)
	for _, a := range f.Answered(f.Conversation(body)) {
		ids = append(ids, a.ID)
		isErr = append(isErr, a.Error)
	}
	return ids, isErr
}
