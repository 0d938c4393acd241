package conduit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/conduitmcp/conduit/internal/mrtr"
	"github.com/conduitmcp/conduit/internal/taskpoll"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks (SEP-2663) on the client: a server may answer a tools/call with
// a task (resultType "task") instead of its result. The SDK's client knows
// no tasks, so conduit takes the CreateTaskResult off the wire and hands
// the SDK a result that only names the task. Over Streamable HTTP the
// transport's HTTP client does so (taskpoll.Poller, the SDK still frames).
// Over stdio the connection conduit wraps does, as it reads the SDK's
// jsonrpc messages. taskMiddleware then polls tasks/get at the server's
// interval to the task's end, answers what the task asks (tasks/update)
// through the call's handlers, cancels it (tasks/cancel) when the call is
// cancelled, and returns the task's result as the call's.
//
// With CallOptions.DetachTask the call returns the task instead, as a
// deferral, and each take-up polls it once. A durable caller (a Temporal
// workflow) then waits between polls on timers of its own.

// tasksExtension is the id of the tasks extension (SEP-2663), which
// conduit declares to the servers it starts (stdio) and to Streamable
// HTTP servers. Servers name it as gateway.TasksExtension.
const tasksExtension = "io.modelcontextprotocol/tasks"

// MetaTaskID is the _meta key of a tool result that a server gave as a
// task: the task's id.
const MetaTaskID = "conduit.dev/taskId"

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
		ref, ok := r.Meta[taskpoll.MetaRef].(string)
		if !ok {
			return res, err
		}
		delete(r.Meta, taskpoll.MetaRef)
		cn.mu.Lock()
		p := cn.tasks
		cn.mu.Unlock()
		var route *taskpoll.Route
		if p != nil {
			route = p.Take(ref)
		}
		if route == nil {
			return res, err // no task of conduit's poller: the server's own _meta
		}
		if taskDetached(ctx) {
			return nil, taskWorking(route)
		}
		cs, _ := req.GetSession().(*mcp.ClientSession)
		return cn.followTask(ctx, p, route, cs)
	}
}

// working is the deferral of a detached call whose task is not over. It
// names the task, to poll it again later (CallOptions.DetachTask).
func taskWorking(r *taskpoll.Route) *inputDeferral {
	return &inputDeferral{reason: "the task " + r.Env.TaskID + " is " + cmp.Or(r.Env.Status, "working"),
		input: &Input{Task: &InputTask{ID: r.Env.TaskID, Meta: r.Meta, PollInterval: taskpoll.Interval(r.Env.PollIntervalMs)}}}
}

// followTask polls the task of route to its end.
func (cn *conn) followTask(ctx context.Context, p *taskpoll.Poller, route *taskpoll.Route, cs *mcp.ClientSession) (*mcp.CallToolResult, error) {
	failures := 0
	for {
		select {
		case <-ctx.Done():
			cn.cancelTask(ctx, p, route)
			return nil, ctx.Err()
		case <-time.After(taskpoll.Interval(route.Env.PollIntervalMs)):
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
func (cn *conn) cancelTask(ctx context.Context, p *taskpoll.Poller, route *taskpoll.Route) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := p.Post(cctx, route, "tasks/cancel", map[string]any{}, nil); err != nil {
		cn.core.Logger.Warn("conduit: cancelling a task", "server", cn.srv.ID, "task", route.Env.TaskID, "err", err)
	}
}

// pollTask asks once about route's task (tasks/get) and does what its
// status says. done reports the call's end, with res or err. Otherwise
// err, if any, is the network's, and the task is asked about again.
func (cn *conn) pollTask(ctx context.Context, p *taskpoll.Poller, route *taskpoll.Route, cs *mcp.ClientSession) (res *mcp.CallToolResult, done bool, err error) {
	id := route.Env.TaskID
	var t taskpoll.Detailed
	if err := p.Post(ctx, route, "tasks/get", map[string]any{}, &t); err != nil {
		var rpcErr *jsonrpc.Error
		return nil, errors.As(err, &rpcErr) || ctx.Err() != nil, fmt.Errorf("task %s: %w", id, err)
	}
	if t.PollIntervalMs > 0 {
		route.Env.PollIntervalMs = t.PollIntervalMs
	}
	route.Env.Status = t.Status
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
		answers, err := cn.rounds.Answer(ctx, cs, t.InputRequests)
		if md := (*mrtr.Deferred)(nil); errors.As(err, &md) {
			// The question waits, and so does the task: the deferral
			// carries its id, to take it up (Input.Task).
			d := deferralOf(md)
			d.input.Task = &InputTask{ID: id, Meta: route.Meta, PollInterval: taskpoll.Interval(route.Env.PollIntervalMs)}
			return nil, true, d
		}
		if err != nil {
			return nil, true, err
		}
		if err := p.Post(ctx, route, "tasks/update", map[string]any{"inputResponses": answers}, nil); err != nil {
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
	route := &taskpoll.Route{URL: cn.srv.URL, Header: h, Meta: in.Task.Meta,
		Env: taskpoll.Created{TaskID: in.Task.ID, PollIntervalMs: in.Task.PollInterval.Milliseconds()}}
	if in.Task.Cancel {
		if err := p.Post(ctx, route, "tasks/cancel", map[string]any{}, nil); err != nil {
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
		if err := p.Post(ctx, route, "tasks/update", map[string]any{"inputResponses": answers}, nil); err != nil {
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
	return nil, taskWorking(route)
}

// errTaskUnreachable marks a detached call's poll that did not reach its
// server. The task may go on there; asking again later may succeed.
var errTaskUnreachable = errors.New("the task's server could not be asked about it")

// errTaskCancelled ends a call whose task its caller cancelled
// (InputTask.Cancel).
var errTaskCancelled = errors.New("cancelled by its caller")
