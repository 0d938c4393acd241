// Tests of tasks (SEP-2663) over stdio: a child process that answers
// tools/call with tasks, followed, detached, polled once and cancelled.
package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runTasksChild is a stdio server whose tool slow is run as a task: a
// tools/call of it is answered with a CreateTaskResult, and the task is
// asked about with tasks/get and ended with tasks/cancel. The SDK frames
// every message; the tasks methods, which the SDK's server knows not,
// are answered by the connection in front of it. The marker records
// "call" for each tools/call of slow, "get ID" and "cancel ID".
func runTasksChild(mark func(string)) int {
	s := mcp.NewServer(&mcp.Implementation{Name: "tasks-child", Version: "1"}, nil)
	addTool(s, "slow", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult("not as a task"), nil
	})
	if err := s.Run(context.Background(), taskServerTransport{mark: mark}); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
	}
	return 0
}

type taskServerTransport struct{ mark func(string) }

func (t taskServerTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := (&mcp.StdioTransport{}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &taskServerConn{Connection: c, mark: t.mark, tasks: map[string]*childTask{}}, nil
}

type childTask struct {
	status string
	text   string
	stop   chan struct{}
}

type taskServerConn struct {
	mcp.Connection
	mark  func(string)
	mu    sync.Mutex
	n     int
	tasks map[string]*childTask
}

func (c *taskServerConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		r, ok := msg.(*jsonrpc.Request)
		if !ok || !r.IsCall() {
			return msg, nil
		}
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
			TaskID    string         `json:"taskId"`
		}
		_ = json.Unmarshal(r.Params, &p)
		var res any
		switch {
		case r.Method == "tools/call" && p.Name == "slow":
			res = c.start(p.Arguments)
		case r.Method == "tasks/get":
			res = c.get(p.TaskID)
		case r.Method == "tasks/cancel":
			res = c.cancel(p.TaskID)
		default:
			return msg, nil
		}
		b, _ := json.Marshal(res)
		if err := c.Connection.Write(ctx, &jsonrpc.Response{ID: r.ID, Result: b}); err != nil {
			return nil, err
		}
	}
}

// start makes the task of a call of slow, which ends after ms.
func (c *taskServerConn) start(args map[string]any) any {
	ms, _ := args["ms"].(float64)
	c.mark("call")
	c.mu.Lock()
	c.n++
	id := fmt.Sprintf("task-%d", c.n)
	t := &childTask{status: "working", stop: make(chan struct{})}
	c.tasks[id] = t
	c.mu.Unlock()
	go func() {
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			c.mu.Lock()
			if t.status == "working" {
				t.status, t.text = "completed", fmt.Sprintf("slept %vms", ms)
			}
			c.mu.Unlock()
		case <-t.stop:
		}
	}()
	return map[string]any{"resultType": "task", "taskId": id, "status": "working", "pollIntervalMs": 100}
}

func (c *taskServerConn) get(id string) any {
	c.mark("get " + id)
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tasks[id]
	if t == nil {
		return map[string]any{"taskId": id, "status": "failed", "error": map[string]any{"code": -32602, "message": "no such task"}}
	}
	out := map[string]any{"taskId": id, "status": t.status, "pollIntervalMs": 100}
	if t.status == "completed" {
		out["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": t.text}}}
	}
	return out
}

func (c *taskServerConn) cancel(id string) any {
	c.mark("cancel " + id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.tasks[id]; t != nil && t.status == "working" {
		t.status = "cancelled"
		close(t.stop)
	}
	return map[string]any{}
}

// markerLines returns the lines of the marker file that start with prefix.
func markerLines(path, prefix string) []string {
	data, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// A stdio server that answers with a task is followed as a Streamable
// HTTP one is: the task's result is the call's, polled with tasks/get on
// the session's connection, and a cancelled call cancels its task.
func TestStdioFollowsTasks(t *testing.T) {
	srv, marker := childServer(t, "t", "tasks")
	ctx := context.Background()
	hub := newHub(t, []Server{srv}, nil)

	res, err := hub.CallTool(ctx, "t__slow", map[string]any{"ms": 300}, nil)
	if err != nil || resultText(res) != "slept 300ms" {
		t.Fatalf("a task's call = %q, %v; want the task's result", resultText(res), err)
	}
	id, _ := res.Meta[MetaTaskID].(string)
	if id == "" || len(markerLines(marker, "get "+id)) == 0 {
		t.Errorf("the result names task %q; polled %v", id, markerLines(marker, "get "))
	}
	if n := len(markerLines(marker, "call")); n != 1 {
		t.Errorf("tools/call sent %d times, want once", n)
	}

	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := hub.CallTool(cctx, "t__slow", map[string]any{"ms": 60000}, nil); err == nil {
		t.Fatal("a cancelled call of a 60s task returned no error")
	}
	waitMarker(t, marker, "cancel task-2")
}

// A detached call returns its task as a deferral at once; each take-up
// asks about it once, and the last returns its result. No second
// tools/call is sent. A take-up marked Cancel cancels the task.
func TestDetachedTask(t *testing.T) {
	srv, marker := childServer(t, "t", "tasks")
	ctx := context.Background()
	hub := newHub(t, []Server{srv}, nil)

	args := map[string]any{"ms": 400}
	_, err := hub.CallTool(ctx, "t__slow", args, &CallOptions{DetachTask: true})
	var d *Deferral
	if !errors.Is(err, ErrDeferred) || !errors.As(err, &d) || d.Input == nil || d.Input.Task == nil {
		t.Fatalf("a detached call = %v, want a deferral naming its task", err)
	}
	task := d.Input.Task
	if task.ID != "task-1" || task.PollInterval != 100*time.Millisecond {
		t.Errorf("the deferral's task = %+v, want task-1 polled every 100ms", task)
	}
	if n := len(markerLines(marker, "get ")); n != 0 {
		t.Errorf("a detached call polled its task %d times, want none", n)
	}
	polls := 0
	var res *mcp.CallToolResult
	for res == nil {
		if polls++; polls > 50 {
			t.Fatal("the task did not end")
		}
		time.Sleep(task.PollInterval)
		res, err = hub.CallTool(ctx, "t__slow", args, &CallOptions{DetachTask: true, Input: d.Input})
		if err != nil {
			if !errors.As(err, &d) || d.Input.Task == nil || d.Input.Task.ID != task.ID {
				t.Fatalf("a poll = %v, want the same task's deferral", err)
			}
			if got := len(markerLines(marker, "get "+task.ID)); got != polls {
				t.Fatalf("after %d take-ups, tasks/get was sent %d times", polls, got)
			}
		}
	}
	if resultText(res) != "slept 400ms" || res.Meta[MetaTaskID] != task.ID || polls < 2 {
		t.Errorf("the last poll = %q %v after %d polls", resultText(res), res.Meta, polls)
	}
	if n := len(markerLines(marker, "call")); n != 1 {
		t.Errorf("tools/call sent %d times, want once", n)
	}

	_, err = hub.CallTool(ctx, "t__slow", map[string]any{"ms": 60000}, &CallOptions{DetachTask: true})
	if !errors.As(err, &d) || d.Input.Task == nil {
		t.Fatalf("a detached call = %v", err)
	}
	d.Input.Task.Cancel = true
	if _, err := hub.CallTool(ctx, "t__slow", args, &CallOptions{DetachTask: true, Input: d.Input}); err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("a take-up marked Cancel = %v, want the call failed as cancelled", err)
	}
	if got := markerLines(marker, "cancel "); len(got) != 1 || got[0] != "cancel "+d.Input.Task.ID {
		t.Errorf("tasks/cancel sent %v, want once for %s", got, d.Input.Task.ID)
	}
}

// DetachTask on a call its server answers in the request changes
// nothing: the result is the call's, and no deferral is made.
func TestDetachTaskWithoutTask(t *testing.T) {
	srv, _ := childServer(t, "b", "basic")
	ctx := context.Background()
	hub, err := NewHub(ctx, []Server{srv}, &Options{Policy: AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	res, err := hub.CallTool(ctx, "b__echo", map[string]any{"message": "hi"}, &CallOptions{DetachTask: true})
	if err != nil || resultText(res) != "echo: hi" || res.Meta[MetaTaskID] != nil {
		t.Errorf("a detached call answered in its request = %q %v, %v", resultText(res), res.Meta, err)
	}
}
