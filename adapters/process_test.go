package adapters_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/testenv"
	"github.com/conduitmcp/conduit/store/redisstore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a process of an application that defers and
// resumes conversations: run with helperEnv set (defer or resume), TestMain
// runs helper instead of the tests. Its server is a Streamable HTTP
// server of the test process, which counts what it is sent; its claims, a
// real Redis when HELPER_REDIS is set.
const helperEnv = "ADAPTERS_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helper(mode))
	}
	os.Exit(m.Run())
}

// helper is one process: "defer" executes HELPER_RESPONSE (an Anthropic
// response) with every ask deferred and writes the state to HELPER_STATE;
// "resume" waits for its stdin to close, resumes the state with
// HELPER_DECISIONS and prints the Execution's results, errors' kinds and
// causes as JSON.
func helper(mode string) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "bank", URL: os.Getenv("HELPER_SERVER")}}, &conduit.Options{
		Policy: conduit.NewPolicy(conduit.Ask("bank/transfer"), conduit.Allow("*")), Approver: conduit.DeferAll("a person decides"),
		RequireServers: true})
	if err != nil {
		return fail(err)
	}
	defer hub.Close()
	o := &adapters.ConversationOptions{State: adapters.StateOptions{Keys: [][]byte{testKey}}, TurnOptions: adapters.TurnOptions{Principal: "ada"}}
	if url := os.Getenv("HELPER_REDIS"); url != "" {
		s, err := redisstore.Open(url, nil)
		if err != nil {
			return fail(err)
		}
		defer s.Close()
		if err := s.Ping(ctx); err != nil {
			return fail(err)
		}
		o.State.Claims = s
	}
	p := adapters.Anthropic
	switch mode {
	case "defer":
		conv, err := adapters.NewConversation(ctx, hub, p, o)
		if err != nil {
			return fail(err)
		}
		exec, err := conv.Execute(ctx, []byte(os.Getenv("HELPER_RESPONSE")))
		if err != nil {
			return fail(err)
		}
		state, err := conv.State()
		if err != nil {
			return fail(err)
		}
		if err := os.WriteFile(os.Getenv("HELPER_STATE"), state, 0o600); err != nil {
			return fail(err)
		}
		return report(exec)
	case "resume":
		state, err := os.ReadFile(os.Getenv("HELPER_STATE"))
		if err != nil {
			return fail(err)
		}
		var decisions map[string]adapters.Ruling
		if err := json.Unmarshal([]byte(os.Getenv("HELPER_DECISIONS")), &decisions); err != nil {
			return fail(err)
		}
		conv, err := adapters.ResumeConversation(ctx, hub, p, state, o)
		if err != nil {
			return fail(err)
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		exec, err := conv.Resume(ctx, decisions)
		if err != nil {
			return fail(err)
		}
		return report(exec)
	}
	return fail(fmt.Errorf("unknown helper mode %q", mode))
}

// helperOut is what a helper process prints.
type helperOut struct {
	Results  []map[string]any `json:"results"`
	Errors   []string         `json:"errors"`
	Pending  []string         `json:"pending"`
	Complete bool             `json:"complete"`
}

func report(exec *adapters.Execution) int {
	out := helperOut{Results: exec.Results, Complete: exec.Complete()}
	for _, err := range exec.Errors {
		var s string
		switch {
		case errors.Is(err, adapters.ErrDecidedElsewhere):
			s = "decided elsewhere"
		case err != nil:
			var ce *conduit.Error
			errors.As(err, &ce)
			s = ce.String()
		}
		out.Errors = append(out.Errors, s)
	}
	for _, p := range exec.Pending {
		out.Pending = append(out.Pending, p.ID)
	}
	data, _ := json.Marshal(out)
	fmt.Println(string(data))
	return 0
}

// bank is a Streamable HTTP MCP server that counts the transfers it makes.
func bank(t *testing.T) (url string, transfers *atomic.Int32) {
	t.Helper()
	transfers = new(atomic.Int32)
	srv := mcp.NewServer(&mcp.Implementation{Name: "bank", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "transfer", Description: "Moves money.", InputSchema: obj(map[string]any{"amount": map[string]any{"type": "number"}})},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := transfers.Add(1)
			time.Sleep(50 * time.Millisecond) // long enough for a second resumer to find the claim pending
			return text(fmt.Sprintf("transfer %d made: %s", n, req.Params.Arguments)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "balance", Description: "Reads the balance.", InputSchema: obj(map[string]any{})},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("balance: 100"), nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL, transfers
}

// helperCmd is a helper process of mode with the given environment.
func helperCmd(t *testing.T, mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	cmd.Stderr = os.Stderr
	return cmd
}

func parseHelper(t *testing.T, out []byte) helperOut {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var h helperOut
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &h); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	return h
}

// Across OS processes: one process defers a turn and saves its state;
// then two others resume that state at once, sharing their claims through
// a real Redis. The server sees the transfer once: one resumer made it,
// the other answers with the recorded answer or says that it was decided
// elsewhere; the balance, answered in the first process, is answered
// again by neither and carried into both.
func TestResumeAcrossProcesses(t *testing.T) {
	redis := testenv.Redis(t, nil)
	url, transfers := bank(t)
	state := t.TempDir() + "/conv.state"
	resp := canon(script(adapters.Anthropic,
		scripted{id: "b1", name: "bank__balance", args: map[string]any{}},
		scripted{id: "t1", name: "bank__transfer", args: map[string]any{"amount": 40}}))
	env := []string{"HELPER_SERVER=" + url, "HELPER_STATE=" + state, "HELPER_REDIS=" + redis.URL}
	out, err := helperCmd(t, "defer", append(env, "HELPER_RESPONSE="+resp)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	first := parseHelper(t, out)
	if first.Complete || len(first.Pending) != 1 || first.Pending[0] != "t1" || transfers.Load() != 0 {
		t.Fatalf("the deferring process: %+v, transfers %d", first, transfers.Load())
	}

	const n = 2
	var wg sync.WaitGroup
	outs := make([]helperOut, n)
	var starts []io.WriteCloser
	var ready sync.WaitGroup
	for i := range n {
		cmd := helperCmd(t, "resume", append(env, `HELPER_DECISIONS={"t1":{"Allow":true}}`)...)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		starts = append(starts, stdin)
		ready.Add(1)
		wg.Go(func() {
			sc := bufio.NewScanner(stdout)
			sc.Buffer(nil, 1<<20)
			readyOnce := sync.OnceFunc(ready.Done)
			defer readyOnce()
			var lines []string
			for sc.Scan() {
				if sc.Text() == "ready" {
					readyOnce()
					continue
				}
				lines = append(lines, sc.Text())
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("resumer %d: %v", i, err)
				return
			}
			outs[i] = parseHelper(t, []byte(strings.Join(lines, "\n")))
		})
	}
	ready.Wait()
	for _, s := range starts {
		s.Close() // both resume now
	}
	wg.Wait()
	if got := transfers.Load(); got != 1 {
		t.Fatalf("the server made %d transfers", got)
	}
	made := 0
	for i, o := range outs {
		if !o.Complete || len(o.Results) != 2 || !strings.Contains(canon(o.Results[0]), "balance: 100") {
			t.Fatalf("resumer %d: %+v", i, o)
		}
		switch {
		case o.Errors[1] == "" && strings.Contains(canon(o.Results[1]), "transfer 1 made"):
			made++
		case o.Errors[1] == "decided elsewhere":
		default:
			t.Errorf("resumer %d: transfer answered %v %s", i, o.Errors[1], canon(o.Results[1]))
		}
	}
	if made == 0 {
		t.Error("no resumer answered with the transfer")
	}
	t.Logf("%d of %d resumers answered with the transfer; the others, decided elsewhere", made, n)
	// A third, later, reads the recorded answer.
	cmd := helperCmd(t, "resume", append(env, `HELPER_DECISIONS={"t1":{"Allow":true}}`)...)
	cmd.Stdin = strings.NewReader("")
	out, err = cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if late := parseHelper(t, out); late.Errors[1] != "" || !strings.Contains(canon(late.Results[1]), "transfer 1 made") || transfers.Load() != 1 {
		t.Errorf("a later resumer: %+v", late)
	}
}
