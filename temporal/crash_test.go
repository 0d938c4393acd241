//go:build temporalserver

// A worker process killed (SIGKILL) while its call is at the MCP server,
// and another worker process that goes on: what Temporal's retry policy
// alone guarantees, which is what conduit's at-most-once store must add to.
package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"
)

// Environment of a worker process: the test binary run again as a worker
// (see TestMain) against the test's Temporal server and MCP endpoint.
const (
	envWorker    = "CONDUIT_TEMPORAL_SPIKE_WORKER" // the Temporal frontend host:port
	envNamespace = "CONDUIT_TEMPORAL_SPIKE_NAMESPACE"
	envMCP       = "CONDUIT_TEMPORAL_SPIKE_MCP"
)

func TestMain(m *testing.M) {
	if hostPort := os.Getenv(envWorker); hostPort != "" {
		runWorkerProcess(hostPort, os.Getenv(envNamespace), os.Getenv(envMCP))
		return
	}
	os.Exit(m.Run())
}

// runWorkerProcess is a worker as an application runs one: a conduit
// client connected once, then activities and workflows until killed.
func runWorkerProcess(hostPort, namespace, mcpURL string) {
	ctx := context.Background()
	src, err := conduit.NewClient(ctx, conduit.Server{ID: "mail", URL: mcpURL}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: namespace,
		Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(AgentLoop, workflow.RegisterOptions{Name: loopWorkflow})
	w.RegisterActivity(&Activities{Source: src})
	if err := w.Run(worker.InterruptCh()); err != nil {
		log.Fatal(err)
	}
}

// A workerProcess is a worker process the test started.
type workerProcess struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when it has exited
}

// kill ends the process with SIGKILL, as a crash or an OOM kill would.
func (p *workerProcess) kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// startWorkerProcess starts a worker process; it is killed with the test.
func startWorkerProcess(t *testing.T, ts *temporaltest.TestServer, mcpURL string) *workerProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorker+"="+ts.GetFrontendHostPort(),
		envNamespace+"="+ts.GetDefaultNamespace(), envMCP+"="+mcpURL)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &workerProcess{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	return p
}

// A worker killed after its call reached the server and before the result
// was recorded. With one attempt the call is sent once and the workflow
// learns, by the heartbeat timeout, that its outcome is unknown; with a
// retry the next worker sends it again. conduit's at-most-once store is
// what turns the second case into the first.
func TestServerWorkerKilledMidCall(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	m := newMailServer()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.srv }, nil))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(m.release) }) // before hs.Close, which waits for the handlers
	c := ts.GetDefaultClient()

	for _, tc := range []struct {
		attempts int32
		sends    int
	}{{1, 1}, {2, 2}} {
		t.Run(fmt.Sprintf("attempts=%d", tc.attempts), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			id := fmt.Sprintf("k%d", tc.attempts)
			first := startWorkerProcess(t, ts, hs.URL)
			call := ToolCall{ID: id, Name: "send_once_then_hang", Arguments: map[string]any{"id": id, "to": "ops@example.com"}}
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "loop-killed-" + id, TaskQueue: taskQueue},
				loopWorkflow, LoopInput{Call: call, ApprovalTimeout: time.Hour, Attempts: tc.attempts})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.SignalWorkflow(ctx, run.GetID(), run.GetRunID(), approvalSignal, Decision{Allow: true}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-m.hanging:
			case <-first.exited:
				t.Fatal("the worker process exited")
			case <-ctx.Done():
				t.Fatal("the call never reached the server")
			}
			first.kill()
			killed := time.Now()
			startWorkerProcess(t, ts, hs.URL)

			var out LoopOutput
			err = run.Get(ctx, &out)
			t.Logf("workflow ended %v after the kill: %v %+v", time.Since(killed), err, out.Outcome)
			var te *sdktemporal.TimeoutError
			switch {
			case tc.attempts == 1 && !errors.As(err, &te):
				t.Errorf("with one attempt: %v, want a heartbeat timeout", err)
			case tc.attempts > 1 && (err != nil || out.Outcome.IsError):
				t.Errorf("with a retry: %v %+v, want the retry's result", err, out.Outcome)
			}
			if n := m.sends(id); n != tc.sends {
				t.Errorf("call sent %d times, want %d", n, tc.sends)
			}
		})
	}
}
