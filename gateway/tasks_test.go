package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/sqlitestore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// backendPkg is the plain MCP server the extension scenarios call.
const backendPkg = "github.com/conduitmcp/conduit/internal/cmd/conformance-backend"

// tasksConfig serves the conformance backend, started by each conduit
// serve over stdio, with the tasks configuration the scenarios need:
// the task-supporting tools named, failing_job required (refused without
// the extension), any other call a task after a second.
func tasksConfig(t *testing.T, serve string) string {
	bin := testenv.BuildGo(t, backendPkg)
	if serve != "" {
		serve = ", " + serve
	}
	return fmt.Sprintf(`{"mcpServers": {"backend": {"command": %q}}, "policy": [{"allow": ["*"]}],
		"serve": {"tasks": {"tools": ["backend/slow_compute", "backend/confirm_delete", "backend/multi_input"],
			"required": ["backend/failing_job", "backend/protocol_error_job"], "after": "1s", "pollInterval": "200ms"}%s}}`, bin, serve)
}

// TestConformanceTasks runs the conformance suite's server requirement
// set of 2026-07-28 against conduit serve in front of the conformance
// backend, which makes no tasks: every tasks scenario must pass, each
// with no check failing, on tasks conduit makes.
func TestConformanceTasks(t *testing.T) {
	testenv.Conformance(t) // skips, or fails under CI, without node_modules
	url := serveHTTP(t, tasksConfig(t, ""), nil, "--transparent", "--no-auth")
	run := testenv.ConformanceRequirements(t, "server", "2026-07-28", url)
	var ran []string
	for _, name := range run.Names() {
		if !strings.HasPrefix(name, "tasks-") {
			continue
		}
		ran = append(ran, name)
		var failed []string
		for _, c := range run.Scenarios[name] {
			if c.Status == "FAILURE" {
				failed = append(failed, c.ID+": "+c.ErrorMessage)
			}
		}
		if !run.Verdicts[name] || len(failed) > 0 {
			t.Errorf("%s fails through conduit serve: %v", name, failed)
		}
	}
	if len(ran) != 10 {
		t.Errorf("ran tasks scenarios %v, want the 10 of the suite", ran)
	}
}

// rpcAnswer is a JSON-RPC response.
type rpcAnswer struct {
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rpc sends method with params to url as a client of 2026-07-28 that
// declares the tasks extension (unless plain), with token.
func rpc(t *testing.T, url, token, method string, params map[string]any, plain bool) rpcAnswer {
	t.Helper()
	caps := map[string]any{"elicitation": map[string]any{}}
	if !plain {
		caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "1"},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	}
	if uri, ok := params["uri"].(string); ok && method == "resources/read" {
		req.Header.Set("Mcp-Name", uri)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	data := buf.Bytes()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The last data line is the response.
		for line := range strings.SplitSeq(string(data), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = []byte(d)
			}
		}
	}
	var a rpcAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatalf("%s: the answer is not JSON-RPC: %v: %s", method, err, data)
	}
	return a
}

// pollTask polls taskID at url until its status is one of want.
func pollTask(t *testing.T, url, token, taskID string, want ...string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(testenv.ReadyTimeout)
	for {
		a := rpc(t, url, token, "tasks/get", map[string]any{"taskId": taskID}, false)
		if a.Error != nil {
			t.Fatalf("tasks/get %s: %+v", taskID, a.Error)
		}
		if slices.Contains(want, a.Result["status"].(string)) {
			return a.Result
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %v, never %v", taskID, a.Result["status"], want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func taskText(res map[string]any) string {
	r, _ := res["result"].(map[string]any)
	c, _ := r["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	first, _ := c[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

// A careless configuration: none. No task is made, the extension is not
// offered, and the tasks methods are not found; a client that declares
// the extension gets its answer in its request, as before.
func TestTasksOffByDefault(t *testing.T) {
	bin := testenv.BuildGo(t, backendPkg)
	url := serveHTTP(t, fmt.Sprintf(`{"mcpServers": {"backend": {"command": %q}}, "policy": [{"allow": ["*"]}]}`, bin), nil, "--transparent", "--no-auth")
	a := rpc(t, url, "", "tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 1, "label": "x"}}, false)
	if a.Error != nil || a.Result["resultType"] != "complete" || a.Result["taskId"] != nil || !strings.Contains(fmt.Sprint(a.Result["content"]), "computed x") {
		t.Errorf("tools/call without a tasks configuration = %+v, want its result", a)
	}
	d := rpc(t, url, "", "server/discover", nil, false)
	caps, _ := d.Result["capabilities"].(map[string]any)
	if ext, _ := caps["extensions"].(map[string]any); ext["io.modelcontextprotocol/tasks"] != nil {
		t.Errorf("server/discover offers extensions %v with no tasks configured", caps["extensions"])
	}
	if a := rpc(t, url, "", "tasks/get", map[string]any{"taskId": "x"}, false); a.Error == nil || a.Error.Code != -32601 {
		t.Errorf("tasks/get with no tasks configured = %+v, want method not found", a)
	}
}

// A task made by one conduit serve process is answered by another that
// shares its store (a SQLite file) and its state key: polled there to its
// end, cancelled there; another principal's tasks/get finds nothing.
func TestTasksAcrossReplicas(t *testing.T) {
	storeURL := "sqlite://" + filepath.Join(t.TempDir(), "shared.db")
	config := tasksConfig(t, `"tokens": [{"principal": "alice", "env": "T_ALICE"}, {"principal": "bob", "env": "T_BOB"}]`)
	env := []string{"XDG_STATE_HOME=" + t.TempDir(), "CONDUIT_STATE_KEY=" + string(stateKey), "T_ALICE=" + aliceToken, "T_BOB=" + bobToken}
	a, _, _ := startServe(t, config, env, "--transparent", "--store", storeURL)
	b, _, _ := startServe(t, config, env, "--transparent", "--store", storeURL)

	created := rpc(t, a, aliceToken, "tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 1, "label": "across"}}, false)
	id, _ := created.Result["taskId"].(string)
	if created.Result["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call = %+v, want a task", created)
	}
	if got := rpc(t, b, bobToken, "tasks/get", map[string]any{"taskId": id}, false); got.Error == nil || got.Error.Code != -32602 {
		t.Errorf("bob's tasks/get of alice's task = %+v, want -32602 (not found)", got)
	}
	done := pollTask(t, b, aliceToken, id, "completed", "failed", "cancelled")
	if done["status"] != "completed" || taskText(done) != "computed across after 1s" {
		t.Errorf("the task polled at the other replica ended %v %q", done["status"], taskText(done))
	}

	long := rpc(t, a, aliceToken, "tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 60, "label": "long"}}, false)
	id, _ = long.Result["taskId"].(string)
	if id == "" {
		t.Fatalf("tools/call = %+v, want a task", long)
	}
	if got := rpc(t, b, aliceToken, "tasks/cancel", map[string]any{"taskId": id}, false); got.Error != nil || got.Result["resultType"] != "complete" {
		t.Errorf("tasks/cancel at the other replica = %+v", got)
	}
	if got := pollTask(t, a, aliceToken, id, "completed", "failed", "cancelled"); got["status"] != "cancelled" {
		t.Errorf("the cancelled task is %v", got["status"])
	}
}

// A task's input, asked by the backend's multi-round-trip result, is
// answered by tasks/update at the other replica, one key at a time; the
// task ends with what was answered.
func TestTasksInputAcrossReplicas(t *testing.T) {
	storeURL := "sqlite://" + filepath.Join(t.TempDir(), "shared.db")
	config := tasksConfig(t, `"tokens": [{"principal": "alice", "env": "T_ALICE"}]`)
	env := []string{"XDG_STATE_HOME=" + t.TempDir(), "CONDUIT_STATE_KEY=" + string(stateKey), "T_ALICE=" + aliceToken}
	a, _, _ := startServe(t, config, env, "--transparent", "--store", storeURL)
	b, _, _ := startServe(t, config, env, "--transparent", "--store", storeURL)

	created := rpc(t, a, aliceToken, "tools/call", map[string]any{"name": "multi_input", "arguments": map[string]any{}}, false)
	id, _ := created.Result["taskId"].(string)
	if id == "" {
		t.Fatalf("tools/call = %+v, want a task", created)
	}
	asked := pollTask(t, b, aliceToken, id, "input_required")
	reqs, _ := asked["inputRequests"].(map[string]any)
	if len(reqs) != 2 || reqs["first"] == nil || reqs["second"] == nil {
		t.Fatalf("inputRequests = %v, want first and second", reqs)
	}
	for _, key := range []string{"first", "second"} {
		u := rpc(t, b, aliceToken, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
			key: map[string]any{"action": "accept", "content": map[string]any{"name": key + "-name"}}}}, false)
		if u.Error != nil || u.Result["resultType"] != "complete" {
			t.Fatalf("tasks/update %s = %+v", key, u)
		}
	}
	done := pollTask(t, a, aliceToken, id, "completed", "failed", "cancelled")
	if got := taskText(done); got != "Got first-name and second-name" {
		t.Errorf("the task ended %v %q", done["status"], got)
	}
}

// A tool that only runs as a task is refused to a client that did not
// declare the extension, with the error that names it; the tasks methods
// are refused alike; a task-supporting tool is answered in its request.
func TestTasksWithoutExtension(t *testing.T) {
	url := serveHTTP(t, tasksConfig(t, ""), nil, "--transparent", "--no-auth")
	if a := rpc(t, url, "", "tools/call", map[string]any{"name": "failing_job", "arguments": map[string]any{}}, true); a.Error == nil || a.Error.Code != -32021 {
		t.Errorf("a required-task tool without the extension = %+v, want -32021", a)
	}
	if a := rpc(t, url, "", "tasks/get", map[string]any{"taskId": "x"}, true); a.Error == nil || a.Error.Code != -32021 {
		t.Errorf("tasks/get without the extension = %+v, want -32021", a)
	}
	a := rpc(t, url, "", "tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0, "label": "sync"}}, true)
	if a.Error != nil || a.Result["taskId"] != nil || !strings.Contains(fmt.Sprint(a.Result["content"]), "computed sync") {
		t.Errorf("a task-supporting tool without the extension = %+v, want its result", a)
	}
}

// recorder forwards to target and records the JSON-RPC methods (and task
// ids) of what it forwards.
type recorder struct {
	target string
	mu     sync.Mutex
	seen   []string // "method taskId"
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		Method string `json:"method"`
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
		rc.mu.Lock()
		rc.seen = append(rc.seen, strings.TrimSpace(msg.Method+" "+msg.Params.TaskID))
		rc.mu.Unlock()
	}
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, rc.target, bytes.NewReader(body))
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	buf := make([]byte, 32*1024)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

func (rc *recorder) methods(prefix string) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, s := range rc.seen {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// conduit's client follows the tasks a server answers with: a real
// conduit serve that makes tasks, in front of the conformance backend.
// A task's result is the call's, polled with tasks/get; what a task asks
// is answered by the call's handlers through tasks/update; a call
// cancelled cancels its task (tasks/cancel), which the server then shows.
func TestClientFollowsTasks(t *testing.T) {
	url := serveHTTP(t, tasksConfig(t, ""), nil, "--transparent", "--no-auth")
	rc := &recorder{target: url}
	proxy := httptest.NewServer(rc)
	t.Cleanup(proxy.Close)
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "gw", URL: proxy.URL}}, &conduit.Options{
		Policy: conduit.AllowAll(),
		Handlers: &conduit.Handlers{Elicitation: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()

	res, err := hub.CallTool(ctx, "gw__slow_compute", map[string]any{"seconds": 1, "label": "client"}, nil)
	if err != nil || res.IsError || resultText(res) != "computed client after 1s" {
		t.Fatalf("a task's call = %q (isError %v), %v", resultText(res), res != nil && res.IsError, err)
	}
	if id, _ := res.Meta[conduit.MetaTaskID].(string); id == "" || len(rc.methods("tasks/get "+id)) == 0 {
		t.Errorf("the result names task %q, polled %v", id, rc.methods("tasks/get"))
	}

	res, err = hub.CallTool(ctx, "gw__confirm_delete", map[string]any{"filename": "a.txt"}, nil)
	if err != nil || resultText(res) != "Deleted a.txt" {
		t.Errorf("a task that asks = %q, %v", resultText(res), err)
	}
	if len(rc.methods("tasks/update")) == 0 {
		t.Errorf("no tasks/update was sent: %v", rc.methods("tasks/"))
	}

	res, err = hub.CallTool(ctx, "gw__failing_job", map[string]any{}, nil)
	if err != nil || !res.IsError {
		t.Errorf("a task that ended with a tool error = %+v, %v; want the tool error", res, err)
	}

	cctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if _, err := hub.CallTool(cctx, "gw__slow_compute", map[string]any{"seconds": 60, "label": "cancel"}, nil); err == nil {
		t.Fatal("a cancelled call of a 60s task returned no error")
	}
	deadline := time.Now().Add(testenv.ReadyTimeout)
	for len(rc.methods("tasks/cancel")) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cancels := rc.methods("tasks/cancel ")
	if len(cancels) != 1 {
		t.Fatalf("tasks/cancel sent %v, want once", cancels)
	}
	id := strings.TrimPrefix(cancels[0], "tasks/cancel ")
	if got := pollTask(t, url, "", id, "completed", "failed", "cancelled"); got["status"] != "cancelled" {
		t.Errorf("the task of the cancelled call is %v", got["status"])
	}
}

// deferringHub is a child's hub on the gateway at url. It defers every
// question a call's server asks, to be answered by a later process. st
// holds the claims of the calls a resumed state decides; nil is none.
func deferringHub(ctx context.Context, url string, st store.Store) (*conduit.Hub, error) {
	return conduit.NewHub(ctx, []conduit.Server{{ID: "gw", URL: url}}, &conduit.Options{
		Policy: conduit.AllowAll(),
		Store:  st,
		Handlers: &conduit.Handlers{Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, conduit.DeferInput("a person answers later")
		}},
	})
}

// confirmAll answers each question in still waits for with a confirmation.
func confirmAll(in *conduit.Input) mcp.InputResponseMap {
	answers := mcp.InputResponseMap{}
	for _, k := range in.Missing() {
		answers[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}
	}
	return answers
}

// taskProcesses serves the tasks configuration behind a recording proxy.
// run starts a child process for a step (see taskChild) on the proxy,
// saving to and reading from saved, and returns what it printed.
func taskProcesses(t *testing.T, saved string) (rc *recorder, run func(step string) string) {
	url := serveHTTP(t, tasksConfig(t, ""), nil, "--transparent", "--no-auth")
	rc = &recorder{target: url}
	proxy := httptest.NewServer(rc)
	t.Cleanup(proxy.Close)
	return rc, func(step string) string {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"="+step, "TASK_URL="+proxy.URL, "TASK_FILE="+saved, "GORACE=atexit_sleep_ms=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", step, err, out)
		}
		return string(out)
	}
}

// taskChild is one process of TestTaskAcrossProcesses: "task-defer"
// calls a tool that its server runs as a task, defers what the task asks,
// and saves the deferral's Input; "task-resume" answers it and takes the
// call up with it, and prints the result.
func taskChild(step string) error {
	if strings.HasPrefix(step, "conv-") {
		return convChild(step)
	}
	url, saved := os.Getenv("TASK_URL"), os.Getenv("TASK_FILE")
	ctx := context.Background()
	hub, err := deferringHub(ctx, url, nil)
	if err != nil {
		return err
	}
	defer hub.Close()
	args := map[string]any{"filename": "b.txt"}
	if step == "task-defer" {
		_, err := hub.CallTool(ctx, "gw__confirm_delete", args, nil)
		var d *conduit.Deferral
		if !errors.As(err, &d) || d.Input == nil {
			return fmt.Errorf("the call = %v, want a deferral for input", err)
		}
		b, err := json.Marshal(d.Input)
		if err != nil {
			return err
		}
		return os.WriteFile(saved, b, 0o600)
	}
	b, err := os.ReadFile(saved)
	if err != nil {
		return err
	}
	var in conduit.Input
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	res, err := hub.CallTool(ctx, "gw__confirm_delete", args, &conduit.CallOptions{Input: in.WithResponses(confirmAll(&in))})
	if err != nil {
		return err
	}
	fmt.Printf("RESULT %s %v\n", resultText(res), res.Meta[conduit.MetaTaskID])
	return nil
}

// A task outlives the process that made it: one process calls a tool its
// server (conduit serve) runs as a task, defers what the task asks and
// exits; the deferral carries the task's id. Another process answers and
// takes the call up: the answer goes to the same task (no second
// tools/call), which it polls to its end.
func TestTaskAcrossProcesses(t *testing.T) {
	saved := filepath.Join(t.TempDir(), "deferred.json")
	rc, run := taskProcesses(t, saved)
	run("task-defer")
	var in conduit.Input
	b, _ := os.ReadFile(saved)
	if err := json.Unmarshal(b, &in); err != nil || in.Task == nil || in.Task.ID == "" {
		t.Fatalf("the deferral saved %s, want a task id (%v)", b, err)
	}
	calls := len(rc.methods("tools/call"))
	out := run("task-resume")
	if want := "RESULT Deleted b.txt " + in.Task.ID; !strings.Contains(out, want) {
		t.Errorf("the resumed call printed %q, want %q", out, want)
	}
	if n := len(rc.methods("tools/call")); n != calls {
		t.Errorf("taking the call up sent tools/call %d more times, want none", n-calls)
	}
	if len(rc.methods("tasks/update "+in.Task.ID)) != 1 {
		t.Errorf("tasks/update of the task: %v, want one", rc.methods("tasks/update"))
	}
}

// An "ask" rule holds a task's call, unsent, until its client approves
// it through the task: input_required with the approval's question,
// answered by tasks/update. Declined, the task completes with the
// refusal as a tool error, and the call was never sent.
func TestTasksApproval(t *testing.T) {
	config := strings.Replace(tasksConfig(t, ""), `"policy": [{"allow": ["*"]}]`, `"policy": [{"ask": ["backend/slow_compute"]}, {"allow": ["*"]}]`, 1)
	url := serveHTTP(t, config, []string{"CONDUIT_STATE_KEY=" + string(stateKey)}, "--transparent", "--no-auth")
	for _, action := range []string{"accept", "decline"} {
		created := rpc(t, url, "", "tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0, "label": action}}, false)
		id, _ := created.Result["taskId"].(string)
		if id == "" {
			t.Fatalf("tools/call = %+v, want a task", created)
		}
		asked := pollTask(t, url, "", id, "input_required", "completed", "failed")
		reqs, _ := asked["inputRequests"].(map[string]any)
		if asked["status"] != "input_required" || len(reqs) != 1 {
			t.Fatalf("%s: the task is %v with %v, want the approval asked", action, asked["status"], reqs)
		}
		for key := range reqs {
			rpc(t, url, "", "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": action}}}, false)
		}
		done := pollTask(t, url, "", id, "completed", "failed", "cancelled")
		res, _ := done["result"].(map[string]any)
		switch text := taskText(done); {
		case action == "accept" && (text != "computed accept after 0s" || res["isError"] == true):
			t.Errorf("approved: %v %q", done["status"], text)
		case action == "decline" && (res["isError"] != true || strings.Contains(text, "computed")):
			t.Errorf("declined: %v %q, want the refusal", done["status"], text)
		}
	}
}

// convChild is one process of TestConversationTaskAcrossProcesses:
// "conv-defer" runs a model's response whose call its server runs as a
// task, defers what the task asks and saves the conversation's state;
// "conv-resume" resumes the conversation from it, answers, and prints the
// call's answer.
func convChild(step string) error {
	url, saved := os.Getenv("TASK_URL"), os.Getenv("TASK_FILE")
	ctx := context.Background()
	// The claims of the calls a resumed state decides: one store for the
	// processes of the machine.
	st, err := sqlitestore.Open(saved+".db", nil)
	if err != nil {
		return err
	}
	defer st.Close()
	hub, err := deferringHub(ctx, url, st)
	if err != nil {
		return err
	}
	defer hub.Close()
	opts := &adapters.ConversationOptions{State: adapters.StateOptions{Keys: [][]byte{stateKey}}}
	if step == "conv-defer" {
		conv, err := adapters.NewConversation(ctx, hub, adapters.Anthropic, opts)
		if err != nil {
			return err
		}
		resp := adaptertest.FakeOf(adapters.Anthropic).Response("deleting",
			toolcall.Raw{ID: "call-1", Name: "gw__confirm_delete", Args: map[string]any{"filename": "c.txt"}})
		ex, err := conv.Execute(ctx, resp)
		if err != nil {
			return err
		}
		if len(ex.Pending) != 1 || ex.Pending[0].Input == nil || ex.Pending[0].Input.Task == nil {
			return fmt.Errorf("the turn's pending calls are %+v, want the call waiting on its task's question", ex.Pending)
		}
		state, err := conv.State()
		if err != nil {
			return err
		}
		return os.WriteFile(saved, state, 0o600)
	}
	state, err := os.ReadFile(saved)
	if err != nil {
		return err
	}
	conv, err := adapters.ResumeConversation(ctx, hub, adapters.Anthropic, state, opts)
	if err != nil {
		return err
	}
	saved2, err := adapters.ReadState(state, &opts.State)
	if err != nil {
		return err
	}
	decisions := map[string]adapters.Ruling{}
	for _, p := range saved2.Pending {
		decisions[p.ID] = adapters.Ruling{Allow: true, Input: confirmAll(p.Input)}
		fmt.Printf("TASK %s\n", p.Input.Task.ID)
	}
	ex, err := conv.Resume(ctx, decisions)
	if err != nil {
		return err
	}
	b, err := json.Marshal(ex.Results)
	if err != nil {
		return err
	}
	fmt.Printf("RESULTS %s\n", b)
	return nil
}

// A conversation's call that its server (conduit serve) runs as a task
// outlives the process: one process runs the model's response, defers
// what the task asks and saves the conversation's state. Another resumes
// the conversation from the state and decides: the answer goes to the
// same task (no second tools/call), which it polls to its end, and the
// task's result answers the model's call.
func TestConversationTaskAcrossProcesses(t *testing.T) {
	saved := filepath.Join(t.TempDir(), "conversation.state")
	rc, run := taskProcesses(t, saved)
	run("conv-defer")
	calls := rc.methods("tools/call")
	if len(calls) != 1 {
		t.Fatalf("the first process sent tools/call %d times, want once", len(calls))
	}
	out := run("conv-resume")
	id := ""
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, "TASK "); ok {
			id = v
		}
	}
	if id == "" || !strings.Contains(out, `Deleted c.txt`) || !strings.Contains(out, `"tool_use_id":"call-1"`) {
		t.Errorf("the resumed process printed %q, want the task's result for call-1", out)
	}
	if n := len(rc.methods("tools/call")); n != 1 {
		t.Errorf("tools/call was sent %d times in all, want once", n)
	}
	if len(rc.methods("tasks/update "+id)) != 1 || len(rc.methods("tasks/get "+id)) == 0 {
		t.Errorf("the second process sent %v about task %q, want its answer and polls", rc.methods("tasks/"), id)
	}
}
