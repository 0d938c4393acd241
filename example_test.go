package conduit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type issueArgs struct {
	Number int `json:"number"`
}

// startServer runs an in-process MCP server and returns the client's end
// of its transport. Real programs name a command or a URL instead.
func startServer(name string, setup func(*mcp.Server)) mcp.Transport {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	setup(s)
	clientT, serverT := mcp.NewInMemoryTransports()
	if _, err := s.Connect(context.Background(), serverT, nil); err != nil {
		log.Fatal(err)
	}
	return clientT
}

func github() mcp.Transport {
	return startServer("github", func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "get_issue", Description: "Get an issue."},
			func(_ context.Context, _ *mcp.CallToolRequest, in issueArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Issue #%d: It crashes", in.Number)}}}, nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "delete_repo", Description: "Delete the repository."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil, nil
			})
	})
}

func files() mcp.Transport {
	return startServer("files", func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "read.file", Description: "Read a file."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil, nil
			})
	})
}

func ExampleNewHub() {
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{
		{ID: "github", Transport: github()},
		{ID: "files", Transport: files()},
		// A server that cannot start does not stop the hub.
		{ID: "broken", Command: "/nonexistent/mcp-server"},
	}, &conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("github/get_*", "files/*"), conduit.Ask("github/*")),
		Reconnect: conduit.Backoff{Disabled: true}})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()

	ts, err := hub.ListTools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for t := range ts.All() {
		fmt.Printf("%s: %s\n", t.Exposed, t.Description)
	}
	for _, s := range ts.Skipped() {
		fmt.Printf("left out: %s (%s)\n", s.Server, s.Reason)
	}
	for _, st := range hub.Status() {
		fmt.Println(st.ID, st.State)
	}
	// Output:
	// github__delete_repo: Delete the repository.
	// github__get_issue: Get an issue.
	// files__read_file: Read a file.
	// left out: broken (server_down)
	// github up
	// files up
	// broken down
}

func ExampleNewClient() {
	ctx := context.Background()
	cl, err := conduit.NewClient(ctx, conduit.Server{ID: "github", Transport: github()}, &conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("github/get_*")), Prefix: "gh_"})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()

	// The listing for a principal leaves out what the policy denies.
	ts, err := cl.ListToolsFor(ctx, &conduit.ListOptions{Principal: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	for t := range ts.All() {
		server, tool := t.Server, t.Name
		fmt.Println(t.Exposed, "is", server+"/"+tool)
	}
	res, err := cl.CallTool(ctx, "gh_get_issue", map[string]any{"number": 7}, &conduit.CallOptions{ToolSet: ts})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// gh_get_issue is github/get_issue
	// Issue #7: It crashes
}

func ExampleHub_CallTool() {
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "github", Transport: github()}}, &conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("github/get_*"), conduit.Ask("github/*")),
		Approver: func(ctx context.Context, req conduit.ApprovalRequest) conduit.Approval {
			return conduit.Reject("deleting needs a human")
		}})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()

	res, err := hub.CallTool(ctx, "github__get_issue", `{"number": 42}`, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)

	_, err = hub.CallTool(ctx, "github__delete_repo", nil, nil)
	var e *conduit.Error
	if errors.As(err, &e) {
		fmt.Println(e.Kind, errors.Is(err, conduit.ErrDenied))
		fmt.Println(e.Message) // fit to show the model
	}

	_, err = hub.CallTool(ctx, "github__nope", nil, nil)
	fmt.Println(err)
	// Output:
	// Issue #42: It crashes
	// denied true
	// The call to github__delete_repo was denied: deleting needs a human.
	// conduit: unknown_tool: Unknown tool "github__nope": it is not among the tools offered.
}

func ExampleNewPolicy() {
	p := conduit.NewPolicy(
		// Once a web page is in the model's context, nothing may write.
		conduit.Deny("*/write_*", "*/delete_*").When(conduit.Tainted("web")),
		conduit.Allow("files/read_*", "web/fetch"),
		conduit.Allow("files/*").When(conduit.Principal("admin")),
		conduit.Ask("files/*"),
	)
	if err := p.Err(); err != nil {
		log.Fatal(err)
	}
	for _, c := range []conduit.Call{
		{Server: "files", Tool: "read_file"},
		{Server: "files", Tool: "write_file"},
		{Server: "files", Tool: "write_file", Principal: "admin"},
		{Server: "files", Tool: "write_file", Principal: "admin", Taint: []string{"web"}},
		{Server: "mail", Tool: "send"},
	} {
		d, rule, _ := p.Decide(&c)
		fmt.Printf("%s/%s %q %v: %v (%v)\n", c.Server, c.Tool, c.Principal, c.Taint, d, rule)
	}
	// Output:
	// files/read_file "" []: allow (allow files/read_*,web/fetch)
	// files/write_file "" []: ask (ask files/*)
	// files/write_file "admin" []: allow (allow files/* (when ...))
	// files/write_file "admin" [web]: deny (deny */write_*,*/delete_* (when ...))
	// mail/send "" []: deny ()
}

// A policy with conditions may offer callers different tools: conduit
// serve tells its clients that its lists are theirs alone ("private").
func ExamplePolicy_Conditional() {
	byName := conduit.NewPolicy(conduit.Deny("github/delete_repo"), conduit.Allow("*"))
	byCaller := conduit.NewPolicy(conduit.Allow("github/delete_repo").When(conduit.Principal("admin")), conduit.Allow("files"))
	fmt.Println(byName.Conditional(), byCaller.Conditional())
	// Output: false true
}

func ExamplePolicy_Check() {
	p := conduit.NewPolicy(
		conduit.Deny("gihtub/delete_*"),
		conduit.Deny("*/write_*").When(conduit.Tainted("wbe")),
		conduit.Allow("*/read_*", "conduit/search_tools"),
	)
	err := p.Check([]string{"github", "web"})
	fmt.Println(errors.Is(err, conduit.ErrUnknownServer))
	fmt.Println(err)
	// Output:
	// true
	// policy rule 1 (deny gihtub/delete_*): pattern "gihtub/delete_*" names no configured server (did you mean "github"?)
	// policy rule 2 (deny */write_* (when ...)): tainted "wbe" names no configured server (did you mean "web"?)
}

func ExampleConditionFunc() {
	p := conduit.NewPolicy(
		conduit.Deny("files/write_file").When(conduit.ConditionFunc(func(c *conduit.Call) bool {
			path, _ := c.Args["path"].(string)
			return strings.HasPrefix(path, "/etc/")
		})),
		conduit.Allow("files/*"),
	)
	for _, path := range []string{"/tmp/notes.txt", "/etc/passwd"} {
		d, _, _ := p.Decide(&conduit.Call{Server: "files", Tool: "write_file", Args: map[string]any{"path": path}})
		fmt.Println(path, d)
	}
	// Output:
	// /tmp/notes.txt allow
	// /etc/passwd deny
}

func ExampleToolSet_Resolve() {
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true}, conduit.ServerTools{
		Server: "github", Tools: []*mcp.Tool{{Name: "get_issue", InputSchema: map[string]any{"type": "object"}}},
	})
	// A call as the model wrote it: arguments as JSON text, as OpenAI
	// sends them.
	tool, args, err := ts.Resolve("github__get_issue", json.RawMessage(`{"number": 7}`))
	fmt.Println(tool.Server, tool.Name, args, err)
	// What must be answered, not sent: JSON null is not an object, and a
	// name the model was not offered resolves to nothing.
	_, _, err = ts.Resolve("github__get_issue", json.RawMessage(`null`))
	fmt.Println(err)
	_, _, err = ts.Resolve("github__delete_repo", nil)
	fmt.Println(errors.Is(err, conduit.ErrUnknownTool), err)
	// Output:
	// github get_issue map[number:7] <nil>
	// conduit: invalid_arguments (github/get_issue): Invalid arguments for github__get_issue: the arguments must be a JSON object.
	// true conduit: unknown_tool: Unknown tool "github__delete_repo": it is not among the tools offered.
}

func ExampleToolSet_Warnings() {
	ctx := context.Background()
	// Every server down: the hub starts, and its tool set says why it
	// offers nothing (adapters.Listing.Warnings carries the same).
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "broken", Command: "/nonexistent/mcp-server"}},
		&conduit.Options{Policy: conduit.AllowAll(), Reconnect: conduit.Backoff{Disabled: true}})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	ts, err := hub.ListTools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ts.Len(), "tools")
	fmt.Println(ts.Warnings()[0])
	// Output:
	// 0 tools
	// no tools are offered: the servers are down (broken)
}

func ExampleOptions_requireServers() {
	// Fail fast instead: every server must be up within ConnectTimeout.
	_, err := conduit.NewHub(context.Background(), []conduit.Server{
		{ID: "github", Transport: github()},
		{ID: "broken", Command: "/nonexistent/mcp-server"},
	}, &conduit.Options{Policy: conduit.AllowAll(), RequireServers: true, Reconnect: conduit.Backoff{Disabled: true}})
	fmt.Println(errors.Is(err, conduit.ErrServersDown))
	// Output:
	// true
}

func ExampleToolSet_With() {
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true},
		conduit.ServerTools{Server: "github", Tools: []*mcp.Tool{{Name: "get_issue"}}},
		conduit.ServerTools{Server: "jira", Down: errors.New("connection refused")})
	// A tool the program answers itself (a conduit.LocalTool's), offered
	// beside the servers'.
	own := &conduit.Tool{Tool: &mcp.Tool{Name: "remember"}, Exposed: "remember", Server: "app"}
	for t := range ts.With(own).All() {
		fmt.Println(t.Exposed)
	}
	fmt.Println(ts.With(own).Warnings())
	// Output:
	// github__get_issue
	// remember
	// [server jira is down, so its tools are not offered: connection refused]
}
