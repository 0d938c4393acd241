// Package taskpoll takes tasks (SEP-2663) off a server's answers and
// asks about them. A server may answer a tools/call with a task
// (resultType "task") instead of its result. The SDK's client knows no
// tasks, so the Poller hands the SDK a result that only names the task
// (MetaRef) and keeps the task's Route. Post then sends the tasks methods
// (tasks/get, tasks/update, tasks/cancel) about it. What a task's answers
// mean for a call is conduit's to decide, not this package's.
package taskpoll

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaRef names, in the result handed to the SDK, the task a tools/call
// was answered with.
const MetaRef = "conduit.dev/taskRef"

// Poller is the RoundTripper of a server's Streamable HTTP client that
// takes CreateTaskResults of tools/call off the wire, and the poster of
// the tasks methods.
type Poller struct {
	base http.RoundTripper
	// Client is the transport's whole client (auth too). Its owner sets
	// it after setting the client up; nil posts through base alone.
	Client *http.Client
	// Ext, when set, sends the tasks methods instead of HTTP: over stdio
	// they share the session's connection.
	Ext func(ctx context.Context, method string, params map[string]any, out any) error

	mu     sync.Mutex
	routes map[string]*Route // ref -> how to reach its task
}

// Route is how to ask about one task: where, with which session and
// version headers, and the request's _meta (a 2026-07-28 request's
// version and capabilities).
type Route struct {
	URL    string
	Header http.Header
	Meta   json.RawMessage
	Env    Created
	// request is the tools/call request's JSON text, when its _meta is
	// still to be read (callMeta).
	request []byte
}

// callMeta reads r.request: a tools/call's _meta. It reports false when
// the request is not a tools/call with an id, whose answer is no task.
func (r *Route) callMeta() bool {
	if r.request == nil {
		return true
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(r.request, &msg) != nil || msg.Method != "tools/call" || len(msg.ID) == 0 {
		return false
	}
	r.Meta, r.request = msg.Params.Meta, nil
	return true
}

// Created is a CreateTaskResult's fields that conduit reads.
type Created struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	PollIntervalMs int64  `json:"pollIntervalMs"`
}

// New returns a Poller whose requests go through base, or
// http.DefaultTransport when base is nil.
func New(base http.RoundTripper) *Poller {
	if base == nil {
		base = http.DefaultTransport
	}
	return &Poller{base: base, routes: map[string]*Route{}}
}

// RoundTrip sends req through base. A tools/call answered with a task
// gets, in place of the task, a result that names the task (MetaRef).
func (p *Poller) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil || req.Header.Get("Mcp-Method") == "tasks/get" {
		return p.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	r2 := req.Clone(req.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	if !bytes.Contains(body, []byte(`"tools/call"`)) {
		return p.base.RoundTrip(r2) // only a tool call's answer may be a task
	}
	resp, err := p.base.RoundTrip(r2)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	h := http.Header{}
	for _, k := range []string{"Mcp-Session-Id", "Mcp-Protocol-Version"} {
		if v := req.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	// The request is decoded only if its answer is a task (callMeta).
	route := &Route{URL: req.URL.String(), Header: h, request: body}
	switch ct := resp.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "application/json"):
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		data = p.rewrite(data, route)
		resp.Body = io.NopCloser(bytes.NewReader(data))
		resp.ContentLength = int64(len(data))
		resp.Header.Del("Content-Length")
	case strings.HasPrefix(ct, "text/event-stream"):
		resp.Body = &events{src: resp.Body, r: bufio.NewReaderSize(resp.Body, 4<<10), p: p, route: route}
		resp.ContentLength = -1
	}
	return resp, nil
}

// maxEventLine bounds a line of a tools/call's event stream.
const maxEventLine = 64 << 20

// events is a tools/call's event stream with a CreateTaskResult
// rewritten (see rewrite) as the SDK reads it. It runs on the reader's
// goroutine: a pipe and a goroutine per call cost more than the call's
// own framing.
type events struct {
	src   io.ReadCloser
	r     *bufio.Reader
	p     *Poller
	route *Route
	buf   []byte // the rest of the line being read out
	err   error  // the source's error, once its lines are read out
}

func (t *events) Read(b []byte) (int, error) {
	for len(t.buf) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		line, err := t.line()
		t.err = err
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok && bytes.Contains(d, []byte(`"task"`)) {
			d = bytes.TrimSpace(d)
			if out := t.p.rewrite(d, t.route); !bytes.Equal(out, d) {
				line = append(append([]byte("data: "), out...), '\n')
			}
		}
		t.buf = line
	}
	n := copy(b, t.buf)
	t.buf = t.buf[n:]
	return n, nil
}

// line reads the next line, its newline kept. A line may outgrow the
// reader's buffer, up to maxEventLine. A line within the buffer is not
// copied: Read hands it out before the next read overwrites it.
func (t *events) line() ([]byte, error) {
	frag, err := t.r.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return frag, err
	}
	line := bytes.Clone(frag)
	for err == bufio.ErrBufferFull {
		if len(line) > maxEventLine {
			return nil, fmt.Errorf("an event stream line is over %d bytes", maxEventLine)
		}
		frag, err = t.r.ReadSlice('\n')
		line = append(line, frag...)
	}
	return line, err
}

func (t *events) Close() error { return t.src.Close() }

// rewrite returns data, a JSON-RPC message, with a CreateTaskResult
// replaced by a result that names the task (kept in p.routes).
func (p *Poller) rewrite(data []byte, route *Route) []byte {
	if !bytes.Contains(data, []byte(`"task"`)) {
		return data
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil || msg["result"] == nil {
		return data
	}
	res, ok := p.TaskResult(msg["result"], route)
	if !ok {
		return data
	}
	msg["result"] = res
	out, err := json.Marshal(msg)
	if err != nil {
		return data
	}
	return out
}

// TaskResult returns the result that names the task of result, a
// CreateTaskResult, and keeps the task's route. It reports false for
// any other result.
func (p *Poller) TaskResult(result json.RawMessage, route *Route) (json.RawMessage, bool) {
	if !bytes.Contains(result, []byte(`"task"`)) {
		return nil, false
	}
	var res struct {
		ResultType string `json:"resultType"`
		Created
	}
	if json.Unmarshal(result, &res) != nil || res.ResultType != "task" || res.TaskID == "" {
		return nil, false
	}
	r := *route
	if !r.callMeta() {
		return nil, false
	}
	r.Env = res.Created
	ref := rand.Text()
	out, err := json.Marshal(map[string]any{"content": []any{}, "_meta": map[string]any{MetaRef: ref}})
	if err != nil {
		return nil, false
	}
	p.mu.Lock()
	p.routes[ref] = &r
	p.mu.Unlock()
	return out, true
}

// Take returns the route of ref, once.
func (p *Poller) Take(ref string) *Route {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.routes[ref]
	delete(p.routes, ref)
	return r
}

// Detailed is a tasks/get answer.
type Detailed struct {
	Created
	InputRequests mcp.InputRequestMap `json:"inputRequests"`
	Result        json.RawMessage     `json:"result"`
	Error         *jsonrpc.Error      `json:"error"`
}

// Post sends method with params (and the route's _meta) about the route's
// task, and decodes its result into out.
func (p *Poller) Post(ctx context.Context, r *Route, method string, params map[string]any, out any) error {
	params["taskId"] = r.Env.TaskID
	if p.Ext != nil {
		return p.Ext(ctx, method, params, out)
	}
	if len(r.Meta) > 0 {
		params["_meta"] = r.Meta
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "conduit-" + rand.Text()[:10], "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", r.Env.TaskID)
	c := p.Client
	if c == nil {
		c = &http.Client{Transport: p.base}
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				last = bytes.TrimSpace(d)
			}
		}
		data = last
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		return fmt.Errorf("%s: HTTP %d, not a JSON-RPC answer", method, resp.StatusCode)
	}
	if msg.Error != nil {
		return msg.Error
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(msg.Result, out)
}

// Bounds of a poll interval: a server's is kept within them.
const (
	minTaskPoll     = 50 * time.Millisecond
	maxTaskPoll     = time.Minute
	defaultTaskPoll = time.Second
)

// Interval is a server's poll interval in milliseconds, kept within the
// bounds; 0 or less is the default.
func Interval(ms int64) time.Duration {
	switch {
	case ms <= 0:
		return defaultTaskPoll
	case ms > maxTaskPoll.Milliseconds():
		// Compared before converting: a huge value would overflow.
		return maxTaskPoll
	}
	return max(time.Duration(ms)*time.Millisecond, minTaskPoll)
}
