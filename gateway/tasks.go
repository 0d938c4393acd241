package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/mrtr"
	"github.com/conduitmcp/conduit/internal/seal"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks (SEP-2663) that the gateway makes for its clients of protocol
// 2026-07-28. A tool call it runs as a task is answered at once with a
// CreateTaskResult. The call goes on in the background. The task's state
// lives in the hub's store, as an append-only log of sealed events. The
// log is a Sets key of the principal's. So any replica that shares the
// store answers tasks/get, tasks/update and tasks/cancel for it. The call
// itself runs in the replica that made the task. A cancel made at another
// replica reaches it through the store.

// TasksExtension is the id of the tasks extension (SEP-2663), under
// capabilities.extensions.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Defaults of TaskOptions.
const (
	// DefaultTaskTTL is how long a task is kept after its latest change.
	DefaultTaskTTL = time.Hour
	// DefaultTaskPollInterval is the poll interval a task suggests.
	DefaultTaskPollInterval = time.Second
)

// TaskOptions say which tool calls the gateway runs as tasks. They are
// for its clients of protocol 2026-07-28 that declare the tasks
// extension. A nil *TaskOptions (the default) makes no tasks and does not
// offer the extension. Every call is then answered in its request.
type TaskOptions struct {
	// Tools are patterns of the tools whose every call becomes a task. A
	// pattern is "server/tool" with globs, or the tool's name as offered.
	// A client without the extension gets them answered in its request.
	Tools []string
	// Required are patterns of tools that only run as tasks. A client
	// without the extension is refused their calls (-32021).
	Required []string
	// After makes a task of any other call still running after it. Zero
	// or negative: none.
	After time.Duration
	// TTL is how long a task is kept after its latest change (default
	// DefaultTaskTTL).
	TTL time.Duration
	// PollInterval is the interval clients are told to poll at (default
	// DefaultTaskPollInterval).
	PollInterval time.Duration
}

// taskPurpose is the seal purpose of task events kept in the store.
const taskPurpose = "conduit serve task"

// metaTaskCreated marks, with a sealed envelope, a tool result that
// stands for a task. The views' middleware turns it into a
// CreateTaskResult. It is sealed, so that no server's result can pose as
// one.
const metaTaskCreated = "conduit.dev/taskCreated"

// tasks is the gateway's part that runs tasks.
type tasks struct {
	opts   TaskOptions
	sealer *seal.Sealer

	mu    sync.Mutex
	local map[string]context.CancelFunc // task key -> cancel of its run here
}

func newTasks(o *TaskOptions, keys [][]byte) (*tasks, error) {
	if o == nil {
		return nil, nil
	}
	t := &tasks{opts: *o, local: map[string]context.CancelFunc{}}
	if t.opts.TTL <= 0 {
		t.opts.TTL = DefaultTaskTTL
	}
	if t.opts.PollInterval <= 0 {
		t.opts.PollInterval = DefaultTaskPollInterval
	}
	var err error
	if t.sealer, err = seal.New(taskPurpose, keys...); err != nil {
		return nil, err
	}
	return t, nil
}

// taskPlan is how a tool call of a view becomes a task.
type taskPlan struct {
	now   bool          // at once
	after time.Duration // once running this long, when not now
	caps  *mcp.ClientCapabilities
}

// matches reports whether tool t (offered as exposed) matches one of
// patterns.
func matches(patterns []string, exposed string, t *conduit.Tool) bool {
	for _, p := range patterns {
		if p == exposed {
			return true
		}
		if t != nil && t.Tool != nil {
			if ok, _ := path.Match(p, t.Server+"/"+t.Tool.Name); ok {
				return true
			}
		}
	}
	return false
}

// declaresTasks reports whether a request's client declared the tasks
// extension. It may declare it at initialize, or in the request's own
// _meta.
func declaresTasks(ss *mcp.ServerSession, meta mcp.Meta) bool {
	if _, ok := requestCaps(ss).Extensions[TasksExtension]; ok {
		return true
	}
	return metaDeclaresTasks(meta)
}

func metaDeclaresTasks(meta map[string]any) bool {
	caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	_, ok := ext[TasksExtension]
	return ok
}

// errTasksRequired is the error of a request that needs the extension
// from a client that did not declare it.
func errTasksRequired(what string) error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: what + " needs the client capability extensions[\"" + TasksExtension + "\"]", Data: data}
}

// plan is how the call of tool name (t, nil when unknown) by a request
// becomes a task. It is nil when the call does not.
func (k *tasks) plan(name string, t *conduit.Tool, req *mcp.CallToolRequest) (*taskPlan, error) {
	if k == nil {
		return nil, nil
	}
	required := matches(k.opts.Required, name, t)
	if !declaresTasks(req.Session, req.Params.Meta) {
		if required {
			return nil, errTasksRequired("the tool " + name)
		}
		return nil, nil
	}
	caps := requestCaps(req.Session)
	if required || matches(k.opts.Tools, name, t) {
		return &taskPlan{now: true, caps: caps}, nil
	}
	if k.opts.After > 0 {
		return &taskPlan{after: k.opts.After, caps: caps}, nil
	}
	return nil, nil
}

// The statuses of a task.
const (
	statusWorking       = "working"
	statusInputRequired = "input_required"
	statusCompleted     = "completed"
	statusFailed        = "failed"
	statusCancelled     = "cancelled"
)

func terminal(status string) bool {
	return status == statusCompleted || status == statusFailed || status == statusCancelled
}

// taskEvent is one change of a task, as the store keeps it (sealed).
type taskEvent struct {
	Kind      string                     `json:"k"` // created, asked, answered, ended
	At        time.Time                  `json:"at"`
	Round     int                        `json:"r,omitempty"`
	TTLMs     int64                      `json:"ttl,omitempty"`
	PollMs    int64                      `json:"poll,omitempty"`
	Requests  json.RawMessage            `json:"q,omitempty"`
	Responses map[string]json.RawMessage `json:"a,omitempty"`
	Status    string                     `json:"s,omitempty"`
	Result    json.RawMessage            `json:"res,omitempty"`
	Error     *jsonrpc.Error             `json:"err,omitempty"`
}

// taskState is a task as its events make it.
type taskState struct {
	id               string
	status           string
	created, updated time.Time
	ttlMs, pollMs    int64
	round            int
	pending          map[string]json.RawMessage // the round's requests not answered yet
	answers          map[string]json.RawMessage // the round's answers so far
	result           json.RawMessage
	err              *jsonrpc.Error
}

// taskKey is the store key of principal's task id. Another principal has
// another key, so a task id names nothing for anyone else.
func taskKey(principal, id string) string {
	return fmt.Sprintf("gateway/task/%q/%s", principal, id)
}

// add appends e to the task of key.
func (k *tasks) add(ctx context.Context, st store.Store, key string, e taskEvent) error {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	// Sorted by time first: the store returns members sorted.
	member := fmt.Sprintf("%020d.%s %s", e.At.UnixNano(), rand.Text()[:8], k.sealer.Seal(b, e.At.Add(k.opts.TTL+time.Hour)))
	return st.AddMembers(ctx, key, k.opts.TTL, member)
}

// load reads the task of key; nil when there is none.
func (k *tasks) load(ctx context.Context, st store.Store, key, id string) (*taskState, error) {
	members, err := st.Members(ctx, key)
	if err != nil {
		return nil, err
	}
	var ts *taskState
	now := time.Now()
	for _, m := range members {
		_, sealed, ok := strings.Cut(m, " ")
		if !ok {
			continue
		}
		b, err := k.sealer.Open(sealed, now)
		if err != nil {
			continue // another deployment's, or a key no longer kept
		}
		var e taskEvent
		if json.Unmarshal(b, &e) != nil {
			continue
		}
		if e.Kind == "created" {
			ts = &taskState{id: id, status: statusWorking, created: e.At, ttlMs: e.TTLMs, pollMs: e.PollMs}
		}
		if ts == nil || terminal(ts.status) {
			continue
		}
		ts.updated = e.At
		switch e.Kind {
		case "asked":
			var raw map[string]json.RawMessage
			if json.Unmarshal(e.Requests, &raw) != nil {
				continue
			}
			ts.round, ts.pending, ts.answers, ts.status = e.Round, raw, map[string]json.RawMessage{}, statusInputRequired
		case "answered":
			if e.Round != ts.round {
				continue
			}
			for key, a := range e.Responses {
				if _, ok := ts.pending[key]; ok {
					delete(ts.pending, key)
					ts.answers[key] = a
				}
			}
			if len(ts.pending) == 0 {
				ts.status = statusWorking
			}
		case "ended":
			ts.status, ts.result, ts.err = e.Status, e.Result, e.Error
		}
	}
	return ts, nil
}

// envelope is the task's metadata on the wire (Task of SEP-2663).
func (ts *taskState) envelope() map[string]any {
	m := map[string]any{
		"taskId":        ts.id,
		"status":        ts.status,
		"createdAt":     ts.created.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt": ts.updated.UTC().Format(time.RFC3339Nano),
		"ttlMs":         ts.ttlMs,
	}
	if ts.pollMs > 0 {
		m["pollIntervalMs"] = ts.pollMs
	}
	return m
}

// detailed is the task as tasks/get answers it.
func (ts *taskState) detailed() map[string]any {
	m := ts.envelope()
	m["resultType"] = "complete"
	switch ts.status {
	case statusInputRequired:
		m["inputRequests"] = ts.pending
	case statusCompleted:
		m["result"] = ts.result
	case statusFailed:
		m["error"] = ts.err
	}
	return m
}

// end records the task's end, unless it has ended already (a cancel came
// first). The first end is claimed in the store.
func (k *tasks) end(ctx context.Context, st store.Store, key string, e taskEvent) (bool, error) {
	c, err := st.Claim(ctx, "gateway/task-end/"+key, k.opts.TTL)
	if err != nil {
		return false, err
	}
	if c.State != store.Claimed {
		return false, nil
	}
	e.Kind = "ended"
	if err := k.add(ctx, st, key, e); err != nil {
		return false, err
	}
	return true, st.Complete(ctx, "gateway/task-end/"+key, c.Token, []byte(e.Status), k.opts.TTL)
}

// createTaskResult is a CreateTaskResult: the task's metadata, flat.
type createTaskResult struct {
	mcp.ResultBase
	env map[string]any
}

func (r *createTaskResult) MarshalJSON() ([]byte, error) {
	m := map[string]any{"resultType": "task"}
	for k, v := range r.env {
		m[k] = v
	}
	if len(r.Meta) > 0 {
		m["_meta"] = r.Meta
	}
	return json.Marshal(m)
}

// taskResults is a view's middleware. A tool result that stands for a
// task (sealed under metaTaskCreated) is answered as its
// CreateTaskResult.
func (g *Gateway) taskResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || r == nil {
			return res, err
		}
		sealed, ok := r.Meta[metaTaskCreated].(string)
		if !ok {
			return res, err
		}
		delete(r.Meta, metaTaskCreated)
		if g.tasks == nil {
			return res, err
		}
		b, oerr := g.tasks.sealer.Open(sealed, time.Now())
		var env map[string]any
		if oerr != nil || json.Unmarshal(b, &env) != nil {
			return res, err
		}
		return &createTaskResult{env: env}, nil
	}
}

// escalate makes a task of cr, the call of rq. It answers rq with the
// result that stands for the task. The call goes on in the background.
func (g *Gateway) escalate(ctx context.Context, cr *callRun, rq *roundRequest) (mcp.Result, error) {
	k := g.tasks
	cr.mu.Lock()
	cr.taskCaps = rq.task.caps
	cr.mu.Unlock()
	id := rand.Text()
	key := taskKey(rq.b.principal, id)
	now := time.Now()
	created := taskEvent{Kind: "created", At: now, TTLMs: k.opts.TTL.Milliseconds(), PollMs: k.opts.PollInterval.Milliseconds()}
	// Durable before it is answered: a tasks/get right after it resolves.
	if err := k.add(ctx, g.store, key, created); err != nil {
		cr.cancel()
		return toolMethod.refusal("conduit serve could not keep the task in its store, so the call was stopped: " + err.Error())
	}
	ts := &taskState{id: id, status: statusWorking, created: now, updated: now, ttlMs: created.TTLMs, pollMs: created.PollMs}
	b, err := json.Marshal(ts.envelope())
	if err != nil {
		cr.cancel()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k.mu.Lock()
	k.local[key] = cancel
	k.mu.Unlock()
	if !g.goIfOpen(func() {
		defer func() {
			k.mu.Lock()
			delete(k.local, key)
			k.mu.Unlock()
			cancel()
		}()
		stop := context.AfterFunc(g.ctx, cancel)
		defer stop()
		g.runTask(rctx, key, cr, rq)
	}) {
		cancel()
		cr.cancel()
		return nil, errors.New("conduit serve is closing")
	}
	return &mcp.CallToolResult{Meta: mcp.Meta{metaTaskCreated: k.sealer.Seal(b, now.Add(g.claimLifetime()))}, Content: []mcp.Content{}}, nil
}

// runTask follows the call of task key to its end. It asks its client,
// through the task, for what the call needs.
func (g *Gateway) runTask(ctx context.Context, key string, cr *callRun, rq *roundRequest) {
	k := g.tasks
	round := 0
	tick := time.NewTicker(k.opts.PollInterval)
	defer tick.Stop()
	defer func() { cr.cancel() }()
	fail := func(err error) {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		if _, err := k.end(context.WithoutCancel(ctx), g.store, key, taskEvent{Status: statusFailed, Error: rpcErr}); err != nil {
			g.logger.Warn("gateway: recording a task's end", "err", err)
		}
	}
	// ask puts the task in input_required with asks. It returns the
	// answers once every one has come. It returns nil when the task ended
	// meanwhile.
	ask := func(asks mcp.InputRequestMap) mcp.InputResponseMap {
		round++
		raw, err := json.Marshal(asks)
		if err != nil {
			fail(err)
			return nil
		}
		if err := k.add(ctx, g.store, key, taskEvent{Kind: "asked", Round: round, Requests: raw}); err != nil {
			fail(err)
			return nil
		}
		wait := time.NewTicker(100 * time.Millisecond)
		defer wait.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-wait.C:
			}
			ts, err := k.load(ctx, g.store, key, "")
			if err != nil {
				continue // the store is back soon
			}
			if ts == nil || terminal(ts.status) {
				return nil
			}
			if ts.round == round && len(ts.pending) == 0 {
				b, _ := json.Marshal(ts.answers)
				var out mcp.InputResponseMap
				if err := json.Unmarshal(b, &out); err != nil {
					fail(err)
					return nil
				}
				return out
			}
		}
	}
	for {
		var o outcome
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if ts, err := k.load(ctx, g.store, key, ""); err == nil && (ts == nil || terminal(ts.status)) {
				return // cancelled, at another replica
			}
			continue
		case q := <-cr.asks:
			asked := map[string]mcp.InputRequest{"conduit_input": q.in}
			answers := ask(asked)
			if answers == nil {
				return
			}
			q.answer <- answered{resp: answers["conduit_input"]}
			continue
		case o = <-cr.done:
		}
		cr.mu.Lock()
		asking, approved := cr.asking, cr.approved
		cr.mu.Unlock()
		opts := *cr.opts
		switch asks, server, ok := mrtr.Requests(o.res); {
		case asking != "":
			answers := ask(mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{
				Message:         asking,
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
			}})
			if answers == nil {
				return
			}
			decision := conduit.Reject("the user canceled the approval request")
			if a, ok := answers[approvalInput].(*mcp.ElicitResult); ok {
				switch a.Action {
				case "accept":
					decision = conduit.Approve()
				case "decline":
					decision = conduit.Reject("the user declined it")
				}
			}
			opts.Approval = &decision
			opts.Input = &conduit.Input{Return: true}
		case o.err != nil:
			fail(o.err)
			return
		case ok:
			answers := ask(asks)
			if answers == nil {
				return
			}
			opts.Input = &conduit.Input{Responses: answers, RequestState: server, Return: true}
			if approved {
				a := conduit.Approve()
				opts.Approval = &a
			}
		default:
			res, err := json.Marshal(o.res)
			if err != nil {
				fail(err)
				return
			}
			if _, err := k.end(context.WithoutCancel(ctx), g.store, key, taskEvent{Status: statusCompleted, Result: res}); err != nil {
				g.logger.Warn("gateway: recording a task's end", "err", err)
			}
			return
		}
		next, err := g.startCall(ctx, rq, &opts, cr.call)
		if err != nil {
			fail(err)
			return
		}
		next.mu.Lock()
		next.taskCaps, next.sink = cr.taskCaps, nil
		next.mu.Unlock()
		cr = next
	}
}

// taskMethods are the methods of the tasks extension the gateway answers
// itself, before the SDK. The SDK knows none of them.
var taskMethods = []string{"tasks/get", "tasks/update", "tasks/cancel"}

// serveTask answers a request of a tasks method for principal, from a
// client of protocol 2026-07-28. p is what was peeked of it.
func (g *Gateway) serveTask(w http.ResponseWriter, r *http.Request, principal string, p peeked) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "the request body cannot be read", http.StatusBadRequest)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			TaskID         string                     `json:"taskId"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || len(msg.ID) == 0 {
		writeRPC(w, http.StatusBadRequest, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "not a JSON-RPC request"})
		return
	}
	reply := func(res any, err error) {
		var rpcErr *jsonrpc.Error
		if err != nil && !errors.As(err, &rpcErr) {
			rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		writeRPC(w, http.StatusOK, msg.ID, res, rpcErr)
	}
	// Routing headers (SEP-2243) must say what the body says.
	if m := strings.TrimSpace(r.Header.Get("Mcp-Method")); m != "" && m != p.method {
		writeRPC(w, http.StatusBadRequest, msg.ID, nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "the Mcp-Method header does not match the request's method"})
		return
	}
	if n := r.Header.Get("Mcp-Name"); n != "" && strings.TrimSpace(n) != msg.Params.TaskID {
		writeRPC(w, http.StatusBadRequest, msg.ID, nil, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: "the Mcp-Name header does not match params.taskId"})
		return
	}
	k := g.tasks
	if k == nil {
		reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%q: conduit serve makes no tasks here", p.method)})
		return
	}
	if !metaDeclaresTasks(p.meta) {
		reply(nil, errTasksRequired(p.method))
		return
	}
	if msg.Params.TaskID == "" {
		reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params.taskId is required"})
		return
	}
	ctx := r.Context()
	key := taskKey(principal, msg.Params.TaskID)
	ts, err := k.load(ctx, g.store, key, msg.Params.TaskID)
	if err != nil {
		reply(nil, fmt.Errorf("conduit serve cannot read its store now: retry shortly: %w", err))
		return
	}
	if ts == nil {
		reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown taskId"})
		return
	}
	ack := map[string]any{"resultType": "complete"}
	switch p.method {
	case "tasks/get":
		reply(ts.detailed(), nil)
	case "tasks/cancel":
		if !terminal(ts.status) {
			if _, err := k.end(ctx, g.store, key, taskEvent{Status: statusCancelled}); err != nil {
				reply(nil, fmt.Errorf("conduit serve cannot record the cancel now: retry shortly: %w", err))
				return
			}
			k.mu.Lock()
			cancel := k.local[key]
			k.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
		reply(ack, nil)
	case "tasks/update":
		if ts.status != statusInputRequired {
			reply(ack, nil) // nothing is asked: nothing to answer
			return
		}
		answers := map[string]json.RawMessage{}
		for key, a := range msg.Params.InputResponses {
			if _, ok := ts.pending[key]; !ok {
				continue // not asked, or answered already
			}
			var one mcp.InputResponseMap
			if err := json.Unmarshal(fmt.Appendf(nil, `{"x":%s}`, a), &one); err != nil {
				reply(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses[%q]: %v", key, err)})
				return
			}
			answers[key] = a
		}
		if len(answers) > 0 {
			if err := k.add(ctx, g.store, key, taskEvent{Kind: "answered", Round: ts.round, Responses: answers}); err != nil {
				reply(nil, fmt.Errorf("conduit serve cannot record the answers now: retry shortly: %w", err))
				return
			}
		}
		reply(ack, nil)
	}
}

// writeRPC writes a JSON-RPC response.
func writeRPC(w http.ResponseWriter, code int, id json.RawMessage, res any, rpcErr *jsonrpc.Error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out := map[string]any{"jsonrpc": "2.0", "id": id}
	if rpcErr != nil {
		out["error"] = rpcErr
	} else {
		out["result"] = res
	}
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(out)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// isTaskMethod reports whether method is one serveTask answers.
func isTaskMethod(method string) bool { return slices.Contains(taskMethods, method) }
