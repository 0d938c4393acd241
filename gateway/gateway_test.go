package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/pins"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstream is an in-process MCP server behind the gateway.
type upstream struct {
	*mcp.Server
	t *testing.T
}

func newUpstream(t *testing.T, name string) *upstream {
	return &upstream{mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil), t}
}

// tool adds a tool with an open object schema.
func (u *upstream) tool(name, desc string, h mcp.ToolHandler) *upstream {
	u.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
	return u
}

func (u *upstream) server(id string) conduit.Server {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := u.Connect(context.Background(), st, nil)
	if err != nil {
		u.t.Fatal(err)
	}
	u.t.Cleanup(func() { ss.Close() })
	return conduit.Server{ID: id, Transport: ct}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func echo(prefix string) mcp.ToolHandler {
	return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(prefix + string(req.Params.Arguments)), nil
	}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func newGateway(t *testing.T, servers []conduit.Server, opts *gateway.Options) *gateway.Gateway {
	t.Helper()
	g, err := gateway.New(context.Background(), servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// clientEvents records what a downstream client was told.
type clientEvents struct {
	mu       sync.Mutex
	changed  int // notifications/tools/list_changed
	progress []float64
	logs     []string
	elicited []string
}

func (e *clientEvents) snapshot() clientEvents {
	e.mu.Lock()
	defer e.mu.Unlock()
	return clientEvents{changed: e.changed, progress: slices.Clone(e.progress), logs: slices.Clone(e.logs), elicited: slices.Clone(e.elicited)}
}

// connect opens a session of g for principal, as a Go SDK client. With
// answer, the client declares elicitation and answers with it.
func connect(t *testing.T, g *gateway.Gateway, principal string, answer func(*mcp.ElicitRequest) *mcp.ElicitResult) (*mcp.ClientSession, *clientEvents) {
	t.Helper()
	ev := &clientEvents{}
	opts := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			ev.mu.Lock()
			ev.changed++
			ev.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			ev.mu.Lock()
			ev.progress = append(ev.progress, req.Params.Progress)
			ev.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			ev.mu.Lock()
			ev.logs = append(ev.logs, fmt.Sprint(req.Params.Data))
			ev.mu.Unlock()
		},
	}
	if answer != nil {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			ev.mu.Lock()
			ev.elicited = append(ev.elicited, req.Params.Message)
			ev.mu.Unlock()
			return answer(req), nil
		}
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, st, &gateway.SessionOptions{Principal: principal}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(ctx, ct, sessionVersion)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return cs, ev
}

// sessionVersion has a client of Serve speak 2025-11-25, whose session
// semantics (elicitation, notifications) these tests are about; Serve
// speaks 2026-07-28 to a client that asks for it.
var sessionVersion = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	return out
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// TestToolsAndCalls: a session lists the hub's tools for its principal,
// named server__tool, with cleaned descriptions and the servers' schemas;
// calls run through the policy.
func TestToolsAndCalls(t *testing.T) {
	notes := newUpstream(t, "notes")
	notes.AddTool(&mcp.Tool{
		Name: "add", Description: "Add a note.\u200b\u202e hidden",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}}}`),
		Annotations:  &mcp.ToolAnnotations{Title: "Add", IdempotentHint: true},
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"id":7}`}}, StructuredContent: map[string]any{"id": 7}}, nil
	})
	notes.tool("delete", "Delete a note.", echo("deleted "))
	notes.tool("admin", "Administer.", echo("admin "))
	g := newGateway(t, []conduit.Server{notes.server("notes")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Deny("notes/admin").When(conduit.Not(conduit.Principal("root"))),
		conduit.Deny("notes/delete"),
		conduit.Allow("*"),
	)}})
	cs, _ := connect(t, g, "alice", nil)
	if got, want := toolNames(t, cs), []string{"notes__add"}; !slices.Equal(got, want) {
		t.Errorf("alice's tools = %v, want %v", got, want)
	}
	root, _ := connect(t, g, "root", nil)
	if got, want := toolNames(t, root), []string{"notes__add", "notes__admin"}; !slices.Equal(got, want) {
		t.Errorf("root's tools = %v, want %v", got, want)
	}

	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	add := res.Tools[0]
	if add.Description != "Add a note. hidden" {
		t.Errorf("description = %q, want the invisible characters removed", add.Description)
	}
	schema, _ := json.Marshal(add.InputSchema)
	if string(schema) != `{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}` {
		t.Errorf("input schema = %s", schema)
	}
	if out, _ := json.Marshal(add.OutputSchema); !strings.Contains(string(out), `"id":{"type":"integer"}`) {
		t.Errorf("output schema = %s", out)
	}
	if add.Annotations == nil || add.Annotations.Title != "Add" || !add.Annotations.IdempotentHint {
		t.Errorf("annotations = %+v", add.Annotations)
	}

	got := callTool(t, cs, "notes__add", map[string]any{"text": "x"})
	if got.IsError || resultText(got) != `{"id":7}` {
		t.Errorf("add = %+v", got)
	}
	if sc, _ := json.Marshal(got.StructuredContent); string(sc) != `{"id":7}` {
		t.Errorf("structuredContent = %s", sc)
	}
	// Denied and not offered: conduit's answer, nothing sent.
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "notes__delete", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "notes__delete") {
		t.Errorf("delete: %v, want an unknown tool error", err)
	}
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "nope"`) {
		t.Errorf("nope: %v", err)
	}
}

// TestDeniedCall: a call the policy denies, of a tool that is offered
// (the listing cannot know an argument-dependent condition), is a tool
// error with conduit's message.
func TestDeniedCall(t *testing.T) {
	files := newUpstream(t, "files")
	files.tool("write", "Write.", echo("wrote "))
	g := newGateway(t, []conduit.Server{files.server("files")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Deny("files/write").When(conduit.ConditionFunc(func(c *conduit.Call) bool { return c.Args != nil && c.Args["path"] == "/etc/passwd" })),
		conduit.Allow("*"),
	)}})
	cs, _ := connect(t, g, "", nil)
	if got := callTool(t, cs, "files__write", map[string]any{"path": "/tmp/x"}); got.IsError || resultText(got) != `wrote {"path":"/tmp/x"}` {
		t.Errorf("allowed write = %+v", got)
	}
	got := callTool(t, cs, "files__write", map[string]any{"path": "/etc/passwd"})
	if !got.IsError || resultText(got) != "The policy does not allow calling files__write." {
		t.Errorf("denied write = %v %q", got.IsError, resultText(got))
	}
}

// TestAskBecomesElicitation: an ask rule asks the session's client,
// naming the tool and its arguments; accept runs the call, decline denies
// it; a client without elicitation is denied with a message that says so.
func TestAskBecomesElicitation(t *testing.T) {
	shell := newUpstream(t, "shell")
	shell.tool("run", "Run a command.", echo("ran "))
	g := newGateway(t, []conduit.Server{shell.server("shell")}, &gateway.Options{
		Hub: &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("shell/*"))},
	})
	var mu sync.Mutex
	action := "accept"
	cs, ev := connect(t, g, "", func(*mcp.ElicitRequest) *mcp.ElicitResult {
		mu.Lock()
		defer mu.Unlock()
		return &mcp.ElicitResult{Action: action}
	})
	got := callTool(t, cs, "shell__run", map[string]any{"cmd": "ls"})
	if got.IsError || resultText(got) != `ran {"cmd":"ls"}` {
		t.Errorf("accepted run = %v %q", got.IsError, resultText(got))
	}
	if e := ev.snapshot().elicited; len(e) != 1 || !strings.Contains(e[0], "shell__run") || !strings.Contains(e[0], `{"cmd":"ls"}`) {
		t.Errorf("elicitation messages = %q, want the tool and its arguments", e)
	}
	mu.Lock()
	action = "decline"
	mu.Unlock()
	got = callTool(t, cs, "shell__run", map[string]any{"cmd": "rm"})
	if !got.IsError || resultText(got) != "The call to shell__run was denied: the user declined it." {
		t.Errorf("declined run = %v %q", got.IsError, resultText(got))
	}

	mute, _ := connect(t, g, "", nil)
	got = callTool(t, mute, "shell__run", map[string]any{"cmd": "ls"})
	if !got.IsError || !strings.Contains(resultText(got), "did not declare the elicitation capability") {
		t.Errorf("run without elicitation = %v %q", got.IsError, resultText(got))
	}
}

// TestApprovalTimeout: no answer in time denies the call.
func TestApprovalTimeout(t *testing.T) {
	shell := newUpstream(t, "shell")
	shell.tool("run", "Run a command.", echo("ran "))
	g := newGateway(t, []conduit.Server{shell.server("shell")}, &gateway.Options{
		Hub:             &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("shell/*"))},
		ApprovalTimeout: 100 * time.Millisecond,
	})
	release := make(chan struct{})
	defer close(release)
	cs, _ := connect(t, g, "", func(*mcp.ElicitRequest) *mcp.ElicitResult {
		<-release
		return &mcp.ElicitResult{Action: "accept"}
	})
	got := callTool(t, cs, "shell__run", nil)
	if !got.IsError || !strings.Contains(resultText(got), "no answer to the approval request within 100ms") {
		t.Errorf("run = %v %q", got.IsError, resultText(got))
	}
}

// TestSessionTaint: once a session received a server's output, tainted
// rules apply to it (and tools they deny leave its list), and to every
// session of its principal, a new one too; another principal's session
// is not tainted.
func TestSessionTaint(t *testing.T) {
	web := newUpstream(t, "web")
	web.tool("fetch", "Fetch a page.", echo("page "))
	mail := newUpstream(t, "mail")
	mail.tool("send", "Send mail.", echo("sent "))
	g := newGateway(t, []conduit.Server{web.server("web"), mail.server("mail")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Deny("mail/*").When(conduit.Tainted("web")),
		conduit.Allow("*"),
	)}})
	cs, ev := connect(t, g, "", nil)
	other, _ := connect(t, g, "bob", nil)
	// The SDK's server lists tools by name.
	if got := toolNames(t, cs); !slices.Equal(got, []string{"mail__send", "web__fetch"}) {
		t.Fatalf("tools = %v", got)
	}
	if got := callTool(t, cs, "mail__send", map[string]any{}); got.IsError {
		t.Errorf("send before the taint: %q", resultText(got))
	}
	before := ev.snapshot().changed
	callTool(t, cs, "web__fetch", map[string]any{"url": "x"})
	// Denied at once: by the policy while the session's server still
	// offers the tool, or, once the refresh the taint started has removed
	// it, by the SDK's server as a tool it does not have. Never by
	// conduit as unknown: a tool's calls resolve against the tool set
	// that offered it (see syncTools).
	got, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mail__send", Arguments: map[string]any{}})
	switch {
	case err != nil && strings.Contains(err.Error(), `unknown tool "mail__send"`):
	case err == nil && got.IsError && strings.Contains(resultText(got), "does not allow calling mail__send"):
	default:
		t.Errorf("send after the taint = %+v, %v", got, err)
	}
	eventually(t, "list_changed after the taint", func() bool { return ev.snapshot().changed > before })
	if got := toolNames(t, cs); !slices.Equal(got, []string{"web__fetch"}) {
		t.Errorf("tools after the taint = %v", got)
	}
	if got := callTool(t, other, "mail__send", map[string]any{}); got.IsError {
		t.Errorf("the other principal's send: %q", resultText(got))
	}
	// A new session of the same principal does not shed the taint.
	again, _ := connect(t, g, "", nil)
	if got := toolNames(t, again); !slices.Equal(got, []string{"web__fetch"}) {
		t.Errorf("tools of a new session = %v", got)
	}
	if got, err := again.CallTool(context.Background(), &mcp.CallToolParams{Name: "mail__send", Arguments: map[string]any{}}); err == nil && !got.IsError {
		t.Errorf("a new session's send = %q", resultText(got))
	}
}

// TestListChanged: a server's change of tools reaches every session.
func TestListChanged(t *testing.T) {
	a := newUpstream(t, "a")
	a.tool("one", "One.", echo(""))
	g := newGateway(t, []conduit.Server{a.server("a")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	s1, ev1 := connect(t, g, "u1", nil)
	s2, ev2 := connect(t, g, "u2", nil)
	toolNames(t, s1)
	toolNames(t, s2)
	b1, b2 := ev1.snapshot().changed, ev2.snapshot().changed
	a.tool("two", "Two.", echo(""))
	eventually(t, "list_changed in both sessions", func() bool {
		return ev1.snapshot().changed > b1 && ev2.snapshot().changed > b2
	})
	eventually(t, "the new tool in both sessions", func() bool {
		return slices.Equal(toolNames(t, s1), []string{"a__one", "a__two"}) && slices.Equal(toolNames(t, s2), []string{"a__one", "a__two"})
	})
}

// TestProgressAndServerRequests: a call's progress reaches the client
// with the client's token, and what the server asks during the call goes
// to the session that made it.
func TestProgressAndServerRequests(t *testing.T) {
	up := newUpstream(t, "up")
	up.tool("slow", "Report progress.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := range 3 {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 3})
		}
		// The last notification must reach the client before the result.
		time.Sleep(50 * time.Millisecond)
		return text(fmt.Sprint("token ", req.Params.GetProgressToken() != nil)), nil
	})
	up.tool("ask", "Ask the user.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["q"].(*mcp.ElicitResult); ok {
			return text(fmt.Sprint(r.Action, " ", r.Content["name"])), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{
			Message: "your name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}}}, nil
	})
	g := newGateway(t, []conduit.Server{up.server("up")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	cs, ev := connect(t, g, "", func(req *mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}
	})
	params := &mcp.CallToolParams{Name: "up__slow", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || resultText(res) != "token true" {
		t.Fatalf("slow = %v, %v", res, err)
	}
	eventually(t, "three progress notifications", func() bool { return slices.Equal(ev.snapshot().progress, []float64{1, 2, 3}) })

	if got := resultText(callTool(t, cs, "up__ask", nil)); got != "accept ada" {
		t.Errorf("ask = %q", got)
	}
	if e := ev.snapshot().elicited; !slices.Equal(e, []string{"your name?"}) {
		t.Errorf("elicited %q", e)
	}
}

// TestPromptsAndResources: prompts as server__prompt, resources under
// their own URIs, both through the policy.
func TestPromptsAndResources(t *testing.T) {
	docs := newUpstream(t, "docs")
	docs.AddPrompt(&mcp.Prompt{Name: "summarize", Description: "Summarize.", Arguments: []*mcp.PromptArgument{{Name: "topic"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "summarize " + req.Params.Arguments["topic"]}}}}, nil
		})
	docs.AddPrompt(&mcp.Prompt{Name: "secret"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "content of " + req.Params.URI}}}, nil
	}
	docs.AddResource(&mcp.Resource{Name: "readme", URI: "docs://readme"}, read)
	docs.AddResourceTemplate(&mcp.ResourceTemplate{Name: "page", URITemplate: "docs://pages/{n}"}, read)
	g := newGateway(t, []conduit.Server{docs.server("docs")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Deny("docs/secret"), conduit.Allow("*"))}})
	cs, _ := connect(t, g, "", nil)
	ctx := context.Background()
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "docs__summarize" {
		t.Fatalf("prompts = %+v, %v", pl, err)
	}
	pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "docs__summarize", Arguments: map[string]string{"topic": "go"}})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "summarize go" {
		t.Errorf("get prompt = %+v, %v", pr, err)
	}
	for _, uri := range []string{"docs://readme", "docs://pages/3"} {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || rr.Contents[0].Text != "content of "+uri {
			t.Errorf("read %s = %+v, %v", uri, rr, err)
		}
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://elsewhere"}); err == nil {
		t.Error("a resource nobody offers was read")
	}
}

// TestNewErrors: what New refuses.
func TestNewErrors(t *testing.T) {
	a := newUpstream(t, "a")
	for _, tc := range []struct {
		opts *gateway.Options
		n    int
		want string
	}{
		{nil, 1, "Policy is required"},
		{&gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll(), Handlers: &conduit.Handlers{}}}, 1, "Handlers must be nil"},
		{&gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}, Transparent: true}, 2, "transparent mode serves one server"},
	} {
		servers := []conduit.Server{a.server("a"), a.server("b")}[:tc.n]
		if _, err := gateway.New(context.Background(), servers, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want %q", err, tc.want)
		}
	}
}

// Pins apply to what the gateway serves: a tool whose definition is not
// the pinned one is not offered, and a call to it reaches no server.
func TestPinnedTools(t *testing.T) {
	calls := 0
	files := newUpstream(t, "files")
	files.tool("read", "Read.", echo("read "))
	files.tool("write", "Write.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		calls++
		return text("wrote"), nil
	})
	pinned := pins.New()
	pinned.Pin("files", []*mcp.Tool{
		{Name: "read", Description: "Read.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "write", Description: "Write, as reviewed.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	})
	g := newGateway(t, []conduit.Server{files.server("files")}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll(), Pins: pinned}})
	cs, _ := connect(t, g, "", nil)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"files__read"}) {
		t.Fatalf("tools %v: the changed write is offered", got)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "files__write", Arguments: map[string]any{}})
	if (err == nil && !res.IsError) || calls != 0 {
		t.Fatalf("a call to the changed tool: %v, %v; the server got %d", res, err, calls)
	}
}
