//go:build temporalserver

// A worker process killed (SIGKILL) between two calls of a turn, while its
// call is at the MCP server, and another worker process that finishes the
// turn: each call is sent once.
package temporalconduit_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/store"
	"github.com/conduitmcp/conduit/store/redisstore"
	"github.com/conduitmcp/conduit/temporalconduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/temporaltest"
)

// Environment of a worker process: the test binary run again as a worker
// (see TestMain) against the test's Temporal server, MCP endpoint and
// Redis (none: the worker's own store in memory).
const (
	envWorker    = "CONDUIT_TEMPORAL_TEST_WORKER" // the Temporal frontend host:port
	envNamespace = "CONDUIT_TEMPORAL_TEST_NAMESPACE"
	envMCP       = "CONDUIT_TEMPORAL_TEST_MCP"
	envRedis     = "CONDUIT_TEMPORAL_TEST_REDIS"
)

func TestMain(m *testing.M) {
	if hostPort := os.Getenv(envWorker); hostPort != "" {
		runWorkerProcess(hostPort, os.Getenv(envNamespace), os.Getenv(envMCP), os.Getenv(envRedis))
		return
	}
	os.Exit(m.Run())
}

// runWorkerProcess is a worker as an application runs one: a conduit
// client connected once, with the deployment's shared store, then
// activities and workflows until it is killed.
func runWorkerProcess(hostPort, namespace, mcpURL, redisURL string) {
	ctx := context.Background()
	var st store.Store
	if redisURL != "" {
		rs, err := redisstore.Open(redisURL, nil)
		if err != nil {
			log.Fatal(err)
		}
		defer rs.Close()
		st = rs
	}
	src, err := conduit.NewClient(ctx, conduit.Server{ID: "mail", URL: mcpURL}, &conduit.Options{Policy: conduit.AllowAll(), Store: st})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	c, err := client.Dial(client.Options{HostPort: hostPort, Namespace: namespace, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, taskQueue, worker.Options{})
	if _, err := register(w, src, nil); err != nil {
		log.Fatal(err)
	}
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
func startWorkerProcess(t *testing.T, ts *temporaltest.TestServer, mcpURL, redisURL string) *workerProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorker+"="+ts.GetFrontendHostPort(),
		envNamespace+"="+ts.GetDefaultNamespace(), envMCP+"="+mcpURL, envRedis+"="+redisURL)
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

// A turn of three calls, one after another. The first worker process
// sends the first, then the second, which the server takes and hangs on;
// the process is killed there, before the second call's outcome is
// recorded. A second worker process finishes the turn: the second call's
// next attempt finds its claim pending, sends nothing and answers that
// the outcome is unknown; the third call is sent. Each call reaches the
// server once, counted there.
//
// With the workers sharing a real Redis, the second call's activity is
// retried (the claim holds across workers); with a store of each
// process's own, it had one attempt, and the workflow asks for its
// outcome again, sending nothing.
func TestServerWorkerKilledBetweenCalls(t *testing.T) {
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	m := newMailServer()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.srv }, nil))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(m.release) }) // before hs.Close, which waits for the handlers
	c := ts.GetDefaultClient()
	redis := testenv.Redis(t, nil)

	for _, tc := range []struct{ name, redisURL string }{{"redis", redis.URL}, {"memory", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			id := func(n int) string { return fmt.Sprintf("%s-%d", tc.name, n) }
			hang := toolcall.Raw{ID: id(2), Name: "send_then_hang", Args: map[string]any{"id": id(2), "to": "ops@example.com"}}
			first := startWorkerProcess(t, ts, hs.URL, tc.redisURL)
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "agent-killed-" + tc.name, TaskQueue: taskQueue}, agentWorkflow,
				agentInput{Script: [][]toolcall.Raw{{send(id(1)), hang, send(id(3))}},
					Options: temporalconduit.ConversationOptions{Provider: adapters.Anthropic, HeartbeatTimeout: 2 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-m.hanging:
			case <-first.exited:
				t.Fatal("the worker process exited")
			case <-ctx.Done():
				t.Fatal("the call never reached the server")
			}
			if m.sends(id(1)) != 1 || m.sends(id(3)) != 0 {
				t.Fatalf("before the kill: sent %v", m.sent)
			}
			first.kill()
			killed := time.Now()
			startWorkerProcess(t, ts, hs.URL, tc.redisURL)

			var out agentOutput
			if err := run.Get(ctx, &out); err != nil {
				t.Fatal(err)
			}
			t.Logf("the turn was finished %v after the kill", time.Since(killed))
			got := answered(out.Turns[0].Results)
			if len(got) != 3 || got[0] != id(1)+" sent "+id(1)+" to ops@example.com" ||
				!strings.HasPrefix(got[1], id(2)+" error: The call to send_then_hang may have been made") ||
				got[2] != id(3)+" sent "+id(3)+" to ops@example.com" {
				t.Errorf("answers %q", got)
			}
			for n := 1; n <= 3; n++ {
				if s := m.sends(id(n)); s != 1 {
					t.Errorf("call %d sent %d times, want once", n, s)
				}
			}
			if !slices.Equal(out.Turns[0].Unknown, []string{id(2)}) {
				t.Errorf("unknown outcomes %q, want the second call's", out.Turns[0].Unknown)
			}
			if !slices.Equal(out.State.Taint, []string{"mail"}) {
				t.Errorf("taint %v", out.State.Taint)
			}
		})
	}
}
