package conduit

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks (SEP-2663) on the client: a server may answer a tools/call with
// a task (resultType "task") instead of its result. The SDK's client knows
// no tasks, so conduit takes the CreateTaskResult off the wire and hands
// the SDK a result that only names the task. Over Streamable HTTP the
// transport's HTTP client does so (taskPoller, the SDK still frames).
// Over stdio the connection conduit wraps does (notesConn reads the SDK's
// jsonrpc messages). taskMiddleware then polls tasks/get at the server's
// interval to the task's end, answers what the task asks (tasks/update)
// through the call's handlers, cancels it (tasks/cancel) when the call is
// cancelled, and returns the task's result as the call's.
//
// With CallOptions.DetachTask the call returns the task instead, as a
// deferral, and each take-up polls it once. A durable caller (a Temporal
// workflow) then waits between polls on timers of its own.

// TasksExtension is the id of the tasks extension (SEP-2663), which
// conduit declares to the servers it starts (stdio) and to Streamable
// HTTP servers.
const TasksExtension = "io.modelcontextprotocol/tasks"

// MetaTaskID is the _meta key of a tool result that a server gave as a
// task: the task's id.
const MetaTaskID = "conduit.dev/taskId"

// metaTaskRef names, in the result handed to the SDK, the task a
// tools/call was answered with.
const metaTaskRef = "conduit.dev/taskRef"

// taskPoller is the RoundTripper of a server's Streamable HTTP client that
// takes CreateTaskResults of tools/call off the wire, and the poster of
// the tasks methods.
type taskPoller struct {
	base   http.RoundTripper
	client *http.Client // the transport's whole client (auth too), set after Connect's setup
	// ext, when set, sends the tasks methods instead of HTTP: over stdio
	// they share the session's connection.
	ext func(ctx context.Context, method string, params map[string]any, out any) error

	mu     sync.Mutex
	routes map[string]*taskRoute // ref -> how to reach its task
}

// taskRoute is how to ask about one task: where, with which session and
// version headers, and the request's _meta (a 2026-07-28 request's
// version and capabilities).
type taskRoute struct {
	url    string
	header http.Header
	meta   json.RawMessage
	env    createdTask
	// request is the tools/call request's JSON text, when its _meta is
	// still to be read (callMeta).
	request []byte
}

// callMeta reads r.request: a tools/call's _meta. It reports false when
// the request is not a tools/call with an id, whose answer is no task.
func (r *taskRoute) callMeta() bool {
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
	r.meta, r.request = msg.Params.Meta, nil
	return true
}

// createdTask is a CreateTaskResult's fields that conduit reads.
type createdTask struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	PollIntervalMs int64  `json:"pollIntervalMs"`
}

func newTaskPoller(base http.RoundTripper) *taskPoller {
	if base == nil {
		base = http.DefaultTransport
	}
	return &taskPoller{base: base, routes: map[string]*taskRoute{}}
}

func (p *taskPoller) RoundTrip(req *http.Request) (*http.Response, error) {
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
	route := &taskRoute{url: req.URL.String(), header: h, request: body}
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
		resp.Body = &taskEvents{src: resp.Body, r: bufio.NewReaderSize(resp.Body, 4<<10), p: p, route: route}
		resp.ContentLength = -1
	}
	return resp, nil
}

// maxEventLine bounds a line of a tools/call's event stream.
const maxEventLine = 64 << 20

// taskEvents is a tools/call's event stream with a CreateTaskResult
// rewritten (see rewrite) as the SDK reads it. It runs on the reader's
// goroutine: a pipe and a goroutine per call cost more than the call's
// own framing.
type taskEvents struct {
	src   io.ReadCloser
	r     *bufio.Reader
	p     *taskPoller
	route *taskRoute
	buf   []byte // the rest of the line being read out
	err   error  // the source's error, once its lines are read out
}

func (t *taskEvents) Read(b []byte) (int, error) {
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
func (t *taskEvents) line() ([]byte, error) {
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

func (t *taskEvents) Close() error { return t.src.Close() }

// rewrite returns data, a JSON-RPC message, with a CreateTaskResult
// replaced by a result that names the task (kept in p.routes).
func (p *taskPoller) rewrite(data []byte, route *taskRoute) []byte {
	if !bytes.Contains(data, []byte(`"task"`)) {
		return data
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil || msg["result"] == nil {
		return data
	}
	res, ok := p.taskResult(msg["result"], route)
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

// taskResult returns the result that names the task of result, a
// CreateTaskResult, and keeps the task's route. It reports false for
// any other result.
func (p *taskPoller) taskResult(result json.RawMessage, route *taskRoute) (json.RawMessage, bool) {
	if !bytes.Contains(result, []byte(`"task"`)) {
		return nil, false
	}
	var res struct {
		ResultType string `json:"resultType"`
		createdTask
	}
	if json.Unmarshal(result, &res) != nil || res.ResultType != "task" || res.TaskID == "" {
		return nil, false
	}
	r := *route
	if !r.callMeta() {
		return nil, false
	}
	r.env = res.createdTask
	ref := rand.Text()
	out, err := json.Marshal(map[string]any{"content": []any{}, "_meta": map[string]any{metaTaskRef: ref}})
	if err != nil {
		return nil, false
	}
	p.mu.Lock()
	p.routes[ref] = &r
	p.mu.Unlock()
	return out, true
}

// take returns the route of ref, once.
func (p *taskPoller) take(ref string) *taskRoute {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.routes[ref]
	delete(p.routes, ref)
	return r
}

// detailedTask is a tasks/get answer.
type detailedTask struct {
	createdTask
	InputRequests mcp.InputRequestMap `json:"inputRequests"`
	Result        json.RawMessage     `json:"result"`
	Error         *jsonrpc.Error      `json:"error"`
}

// post sends method with params (and the route's _meta) about the route's
// task, and decodes its result into out.
func (p *taskPoller) post(ctx context.Context, r *taskRoute, method string, params map[string]any, out any) error {
	params["taskId"] = r.env.TaskID
	if p.ext != nil {
		return p.ext(ctx, method, params, out)
	}
	if len(r.meta) > 0 {
		params["_meta"] = r.meta
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "conduit-" + rand.Text()[:10], "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("Mcp-Name", r.env.TaskID)
	c := p.client
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

func pollInterval(ms int64) time.Duration {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case ms <= 0:
		return defaultTaskPoll
	case d < minTaskPoll:
		return minTaskPoll
	case d > maxTaskPoll:
		return maxTaskPoll
	}
	return d
}

// detachKey marks the context of a call made with CallOptions.DetachTask.
type detachKey struct{}

// withDetach returns ctx, whose tools/call returns its task rather than
// follow it when detach is set.
func withDetach(ctx context.Context, detach bool) context.Context {
	if !detach {
		return ctx
	}
	return context.WithValue(ctx, detachKey{}, true)
}

func taskDetached(ctx context.Context) bool {
	d, _ := ctx.Value(detachKey{}).(bool)
	return d
}

// taskMiddleware follows a tools/call answered with a task to the task's
// end, and returns its result as the call's.
func (cn *conn) taskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if in, _ := ctx.Value(inputKey{}).(*Input); in != nil && in.Task != nil && method == "tools/call" {
			return cn.resumeTask(ctx, in, req)
		}
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || r == nil || method != "tools/call" {
			return res, err
		}
		ref, ok := r.Meta[metaTaskRef].(string)
		if !ok {
			return res, err
		}
		delete(r.Meta, metaTaskRef)
		cn.mu.Lock()
		p := cn.tasks
		cn.mu.Unlock()
		var route *taskRoute
		if p != nil {
			route = p.take(ref)
		}
		if route == nil {
			return res, err // no task of conduit's poller: the server's own _meta
		}
		if taskDetached(ctx) {
			return nil, route.working()
		}
		cs, _ := req.GetSession().(*mcp.ClientSession)
		return cn.followTask(ctx, p, route, cs)
	}
}

// working is the deferral of a detached call whose task is not over. It
// names the task, to poll it again later (CallOptions.DetachTask).
func (r *taskRoute) working() *inputDeferral {
	return &inputDeferral{reason: "the task " + r.env.TaskID + " is " + cmp.Or(r.env.Status, "working"),
		input: &Input{Task: &InputTask{ID: r.env.TaskID, Meta: r.meta, PollInterval: pollInterval(r.env.PollIntervalMs)}}}
}

// followTask polls the task of route to its end.
func (cn *conn) followTask(ctx context.Context, p *taskPoller, route *taskRoute, cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
	failures := 0
	for {
		select {
		case <-ctx.Done():
			cn.cancelTask(ctx, p, route)
			return nil, ctx.Err()
		case <-time.After(pollInterval(route.env.PollIntervalMs)):
		}
		res, done, err := cn.pollTask(ctx, p, route, cs)
		if done {
			return res, err
		}
		if err != nil {
			// The network: a few tries before giving up.
			if failures++; failures >= 5 {
				return nil, err
			}
			continue
		}
		failures = 0
	}
}

// cancelTask sends tasks/cancel for route's task, whose call ctx ended, on
// a context of its own.
func (cn *conn) cancelTask(ctx context.Context, p *taskPoller, route *taskRoute) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := p.post(cctx, route, "tasks/cancel", map[string]any{}, nil); err != nil {
		cn.core.Logger.Warn("conduit: cancelling a task", "server", cn.srv.ID, "task", route.env.TaskID, "err", err)
	}
}

// pollTask asks once about route's task (tasks/get) and does what its
// status says. done reports the call's end, with res or err. Otherwise
// err, if any, is the network's, and the task is asked about again.
func (cn *conn) pollTask(ctx context.Context, p *taskPoller, route *taskRoute, cs *mcp.ClientSession) (res *mcp.CallToolResult, done bool, err error) {
	id := route.env.TaskID
	var t detailedTask
	if err := p.post(ctx, route, "tasks/get", map[string]any{}, &t); err != nil {
		var rpcErr *jsonrpc.Error
		return nil, errors.As(err, &rpcErr) || ctx.Err() != nil, fmt.Errorf("task %s: %w", id, err)
	}
	if t.PollIntervalMs > 0 {
		route.env.PollIntervalMs = t.PollIntervalMs
	}
	route.env.Status = t.Status
	switch t.Status {
	case "completed":
		res := new(mcp.CallToolResult)
		if err := json.Unmarshal(t.Result, res); err != nil {
			return nil, true, fmt.Errorf("task %s: its result cannot be read: %w", id, err)
		}
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		res.Meta[MetaTaskID] = id
		return res, true, nil
	case "failed":
		if t.Error == nil {
			return nil, true, fmt.Errorf("task %s failed", id)
		}
		return nil, true, t.Error
	case "cancelled":
		return nil, true, fmt.Errorf("task %s was cancelled by its server", id)
	case "input_required":
		if len(t.InputRequests) == 0 || cs == nil {
			return nil, false, nil
		}
		answers, err := cn.answerInputs(ctx, cs, t.InputRequests)
		if d := (*inputDeferral)(nil); errors.As(err, &d) {
			// The question waits, and so does the task: the deferral
			// carries its id, to take it up (Input.Task).
			d.input.Task = &InputTask{ID: id, Meta: route.meta, PollInterval: pollInterval(route.env.PollIntervalMs)}
			return nil, true, d
		}
		if err != nil {
			return nil, true, err
		}
		if err := p.post(ctx, route, "tasks/update", map[string]any{"inputResponses": answers}, nil); err != nil {
			return nil, true, fmt.Errorf("task %s: %w", id, err)
		}
	}
	return nil, false, nil
}

// resumeTask takes up the task of a deferred call (in.Task): its answers
// go to the task, which is then polled to its end. No tools/call is sent.
// A detached call (CallOptions.DetachTask) polls it once, and a task
// marked Cancel is cancelled instead.
func (cn *conn) resumeTask(ctx context.Context, in *Input, req mcp.Request) (mcp.Result, error) {
	cn.mu.Lock()
	p := cn.tasks
	cn.mu.Unlock()
	cs, _ := req.GetSession().(*mcp.ClientSession)
	if p == nil || cs == nil {
		return nil, fmt.Errorf("task %s: the server %s is reached by a transport that cannot follow its task", in.Task.ID, cn.srv.ID)
	}
	h := http.Header{}
	if ir := cs.InitializeResult(); ir != nil && ir.ProtocolVersion != "" {
		h.Set("Mcp-Protocol-Version", ir.ProtocolVersion)
	}
	if id := cs.ID(); id != "" {
		h.Set("Mcp-Session-Id", id)
	}
	route := &taskRoute{url: cn.srv.URL, header: h, meta: in.Task.Meta,
		env: createdTask{TaskID: in.Task.ID, PollIntervalMs: in.Task.PollInterval.Milliseconds()}}
	if in.Task.Cancel {
		if err := p.post(ctx, route, "tasks/cancel", map[string]any{}, nil); err != nil {
			return nil, fmt.Errorf("task %s: %w", in.Task.ID, err)
		}
		return nil, fmt.Errorf("task %s: %w", in.Task.ID, errTaskCancelled)
	}
	answers := mcp.InputResponseMap{}
	for k, a := range in.Responses {
		if _, asked := in.Requests[k]; asked {
			answers[k] = a
		}
	}
	if len(answers) > 0 {
		if err := p.post(ctx, route, "tasks/update", map[string]any{"inputResponses": answers}, nil); err != nil {
			return nil, fmt.Errorf("task %s: %w", in.Task.ID, err)
		}
	}
	if !taskDetached(ctx) {
		return cn.followTask(ctx, p, route, cs)
	}
	res, done, err := cn.pollTask(ctx, p, route, cs)
	if ctx.Err() != nil {
		// The caller gave up on the call: so does its task.
		cn.cancelTask(ctx, p, route)
		return nil, ctx.Err()
	}
	if done {
		return res, err
	}
	if err != nil {
		// The network: the task may be fine. The caller asks again.
		return nil, fmt.Errorf("%w: %w", errTaskUnreachable, err)
	}
	return nil, route.working()
}

// errTaskUnreachable marks a detached call's poll that did not reach its
// server. The task may go on there; asking again later may succeed.
var errTaskUnreachable = errors.New("the task's server could not be asked about it")

// errTaskCancelled ends a call whose task its caller cancelled
// (InputTask.Cancel).
var errTaskCancelled = errors.New("cancelled by its caller")
