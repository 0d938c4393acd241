package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/bench/internal/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Principal is who every governed call is made for.
const principal = "user-42"

// transportKind is how the benchmarks reach the server.
type transportKind int

const (
	inMemory transportKind = iota
	loopbackHTTP
	stdio
)

// env is one server reached two ways: by a raw SDK session (the floor) and
// by a governed hub, with the listing a model was offered.
type env struct {
	ctx     context.Context
	raw     *mcp.ClientSession
	hub     *conduit.Hub
	listing *adapters.Listing
	exposed string
	url     string // the HTTP endpoint, for loopbackHTTP
	resp    []byte // an OpenAI Chat response with one call of the tool
	copts   *conduit.CallOptions
	shape   bool // hubCall shapes its result for a model
	eopts   *adapters.ExecOptions
}

func newEnv(tb testing.TB, kind transportKind) *env {
	tb.Helper()
	return newEnvWith(tb, kind, nil)
}

// newEnvWith is newEnv with the hub's options changed by edit first.
func newEnvWith(tb testing.TB, kind transportKind, edit func(*conduit.Options)) *env {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	e := &env{ctx: ctx}

	var rawT mcp.Transport
	var hubSrv conduit.Server
	switch kind {
	case inMemory:
		srv, err := fixture.CallServer()
		if err != nil {
			tb.Fatal(err)
		}
		if rawT, err = fixture.InMemory(ctx, srv); err != nil {
			tb.Fatal(err)
		}
		hubT, err := fixture.InMemory(ctx, srv)
		if err != nil {
			tb.Fatal(err)
		}
		hubSrv = conduit.Server{ID: fixture.ServerID, Transport: hubT}
	case loopbackHTTP:
		srv, err := fixture.CallServer()
		if err != nil {
			tb.Fatal(err)
		}
		hs := fixture.HTTP(srv)
		tb.Cleanup(hs.Close)
		e.url = hs.URL
		rawT = &mcp.StreamableClientTransport{Endpoint: hs.URL}
		hubSrv = conduit.Server{ID: fixture.ServerID, URL: hs.URL}
	case stdio:
		exe := selfExe(tb)
		rawT = &mcp.CommandTransport{Command: stdioCmd(exe), TerminateDuration: time.Second}
		hubSrv = conduit.Server{ID: fixture.ServerID, Command: exe, Env: map[string]string{fixture.StdioEnv: "1"}}
	}
	raw, err := fixture.RawClient().Connect(ctx, rawT, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { raw.Close() })
	// A program that hands the tools to a model has listed them, and the
	// SDK uses the list on every call after (over HTTP, for the headers a
	// tool's schema asks for): the raw floor lists them too.
	if _, err := raw.ListTools(ctx, nil); err != nil {
		tb.Fatal(err)
	}
	e.raw = raw

	hopts := fixture.Options()
	governed := true
	if edit != nil {
		edit(hopts)
		governed = len(hopts.Hooks) > 0
	}
	hub, err := conduit.NewHub(ctx, []conduit.Server{hubSrv}, hopts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { hub.Close() })
	e.hub = hub
	if e.listing, err = adapters.Tools(ctx, hub, adapters.OpenAIChat, &adapters.ToolsOptions{Principal: principal}); err != nil {
		tb.Fatal(err)
	}
	var ok bool
	if e.exposed, ok = e.listing.ToolSet.ExposedName(fixture.ServerID, fixture.Tool); !ok {
		tb.Fatalf("%s is not listed; skipped: %+v", fixture.Tool, e.listing.ToolSet.Skipped())
	}
	if len(e.listing.NullPaths[e.exposed]) == 0 {
		tb.Fatalf("%s has no null paths: strict mode was not applied", e.exposed)
	}
	// A strict-mode model sends every property, null for those it leaves out.
	e.resp = chatResponse(e.exposed, `{"path":"/srv/project/docs/notes.md","head":20,"tail":null}`, 1)
	// The governed call shapes its result for a model, as a program that
	// hands it to one does (0.1 did it in the pipeline).
	e.copts, e.shape = &conduit.CallOptions{ToolSet: e.listing.ToolSet, Principal: principal}, true
	e.eopts = &adapters.ExecOptions{ToolSet: e.listing.ToolSet, NullPaths: e.listing.NullPaths, TurnOptions: adapters.TurnOptions{Principal: principal}}

	// Both paths must work, and the governance must run, before anything
	// is timed.
	before := fixture.Before.Load()
	for _, f := range []func() error{e.rawCall, e.glueCall, e.hubCall, e.adaptersCall} {
		if err := f(); err != nil {
			tb.Fatal(err)
		}
	}
	if governed && fixture.Before.Load()-before != 2 {
		tb.Fatal("the before-hook did not run on both governed calls")
	}
	return e
}

// stdioExeEnv names another binary to serve as the stdio child (another
// commit's bench test binary, say), so that a difference between two
// builds can be put on the client or on the child.
const stdioExeEnv = "CONDUIT_BENCH_STDIO_EXE"

func selfExe(tb testing.TB) string {
	if exe := os.Getenv(stdioExeEnv); exe != "" {
		return exe
	}
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return exe
}

func stdioCmd(exe string) *exec.Cmd {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fixture.StdioEnv+"=1")
	return cmd
}

func (e *env) rawCall() error { return fixture.RawCall(e.ctx, e.raw) }

func (e *env) hubCall() error {
	res, err := e.hub.CallTool(e.ctx, e.exposed, fixture.Args(), e.copts)
	if err != nil {
		return err
	}
	if e.shape {
		res = adapters.ShapeForModel(res)
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("unexpected result %+v", res)
	}
	return nil
}

func (e *env) adaptersCall() error {
	exec, err := adapters.ExecuteToolCalls(e.ctx, e.hub, adapters.OpenAIChat, e.resp, e.eopts)
	if err != nil {
		return err
	}
	if len(exec.Results) != 1 || exec.Errors[0] != nil {
		return fmt.Errorf("unexpected execution %+v", exec)
	}
	return nil
}

// glueCall is what a program calling the SDK by hand must do with the
// same OpenAI Chat response: decode it (into a struct of the few fields it
// needs, as careful code would), decode the call's arguments, make the raw
// call, and write the tool message.
func (e *env) glueCall() error {
	var resp struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(e.resp, &resp); err != nil {
		return err
	}
	tc := resp.Choices[0].Message.ToolCalls[0]
	var args map[string]any
	if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
		return err
	}
	if args["tail"] == nil {
		delete(args, "tail")
	}
	res, err := e.raw.CallTool(e.ctx, &mcp.CallToolParams{Name: fixture.Tool, Arguments: args})
	if err != nil {
		return err
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok || res.IsError {
		return fmt.Errorf("unexpected result %+v", res)
	}
	msg := map[string]any{"role": "tool", "tool_call_id": tc.ID, "content": text.Text}
	if msg["content"] == "" {
		return fmt.Errorf("empty answer")
	}
	return nil
}

// chatResponse is an OpenAI Chat Completions response body whose message
// calls tool n times with args.
func chatResponse(tool, args string, n int) []byte {
	calls := make([]any, n)
	for i := range calls {
		calls[i] = map[string]any{
			"id":       fmt.Sprintf("call_%024d", i),
			"type":     "function",
			"function": map[string]any{"name": tool, "arguments": args},
		}
	}
	resp := map[string]any{
		"id": "chatcmpl-bench", "object": "chat.completion", "created": 1767225600, "model": "gpt-4.1-2025-04-14",
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": nil, "tool_calls": calls, "refusal": nil},
			"finish_reason": "tool_calls",
		}},
		"usage": map[string]any{"prompt_tokens": 1873, "completion_tokens": 41, "total_tokens": 1914},
	}
	data, err := json.Marshal(resp)
	if err != nil {
		panic(err)
	}
	return data
}

// must turns an error into a benchmark failure.
func must(b *testing.B, f func() error) func() {
	return func() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
}
