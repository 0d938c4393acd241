package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// catalogTools are five servers' tools, 42 in all: past
// DefaultSearchThreshold, so a Conversation over them searches by default.
var catalogTools = map[string][][2]string{
	"github": {
		{"create_pull_request", "Create a new pull request in a GitHub repository."},
		{"list_pull_requests", "List and filter the pull requests of a repository."},
		{"merge_pull_request", "Merge a pull request."},
		{"get_issue", "Get the details of an issue of a repository."},
		{"create_issue", "Create a new issue in a GitHub repository."},
		{"list_issues", "List the issues of a repository, with filters."},
		{"search_repositories", "Search for GitHub repositories."},
		{"delete_repository", "Delete a repository and everything in it."},
		{"get_file_contents", "Get the contents of a file or directory of a repository."},
		{"push_files", "Push several files to a repository in one commit."},
		{"create_branch", "Create a new branch in a repository."},
		{"list_commits", "Get the list of commits of a branch."},
	},
	"kubernetes": {
		{"kubectl_get", "Get Kubernetes resources such as pods, deployments and services."},
		{"kubectl_logs", "Get the logs of a pod's containers."},
		{"kubectl_delete", "Delete Kubernetes resources."},
		{"kubectl_apply", "Apply a YAML manifest to the cluster."},
		{"kubectl_scale", "Scale a deployment to a number of replicas."},
		{"kubectl_describe", "Describe a Kubernetes resource in detail."},
		{"port_forward", "Forward a local port to a pod."},
		{"list_namespaces", "List the namespaces of the cluster."},
	},
	"slack": {
		{"post_message", "Post a new message to a Slack channel."},
		{"list_channels", "List the public channels of the workspace."},
		{"reply_to_thread", "Reply to a message's thread in a channel."},
		{"add_reaction", "Add an emoji reaction to a message."},
		{"get_channel_history", "Get the recent messages of a channel."},
		{"get_users", "List the users of the workspace with their profiles."},
	},
	"db": {
		{"query", "Run a read-only SQL query against the database."},
		{"list_tables", "List the tables of the database."},
		{"describe_table", "Describe a table's columns and types."},
		{"drop_database", "Drop a database and all its data."},
		{"create_database", "Create a new empty database."},
		{"backup_database", "Back up a database to a file."},
	},
	"files": {
		{"read_file", "Read the complete contents of a file."},
		{"write_file", "Create a new file or overwrite one with new content."},
		{"list_directory", "List the files and directories in a path."},
		{"move_file", "Move or rename a file or directory."},
		{"search_files", "Search for files whose names match a pattern."},
		{"get_file_info", "Get a file's size, times and permissions."},
		{"create_directory", "Create a new directory."},
		{"delete_file", "Delete a file."},
		{"edit_file", "Make line-based edits to a text file."},
		{"read_multiple_files", "Read the contents of several files at once."},
	},
}

var catalogOrder = []string{"github", "kubernetes", "slack", "db", "files"}

// catalog records the calls its servers received, as server/tool.
type catalog struct {
	mu   sync.Mutex
	sent []string
}

func (c *catalog) calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sent)
}

// catalogHub starts a hub over the catalog's servers, in-process.
func catalogHub(t testing.TB, o hubOpts) (*conduit.Hub, *catalog) {
	t.Helper()
	c := &catalog{}
	var servers []conduit.Server
	for _, id := range catalogOrder {
		srv := mcp.NewServer(&mcp.Implementation{Name: id, Version: "1.0.0"}, nil)
		for _, td := range catalogTools[id] {
			name := td[0]
			srv.AddTool(&mcp.Tool{Name: name, Description: td[1], InputSchema: obj(map[string]any{"input": str})},
				func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					c.mu.Lock()
					c.sent = append(c.sent, id+"/"+name)
					c.mu.Unlock()
					return text(id + "/" + name + " " + string(req.Params.Arguments)), nil
				})
		}
		tr, _ := connect(t, srv)
		servers = append(servers, conduit.Server{ID: id, Transport: tr})
	}
	if o.policy == nil {
		o.policy = conduit.AllowAll()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hub, err := conduit.NewHub(ctx, servers, &conduit.Options{Policy: o.policy, Approver: o.approver, Hooks: o.hooks, Filter: o.filter, Reconnect: conduit.Backoff{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	return hub, c
}

func newConv(t testing.TB, src conduit.Source, p adapters.Provider, o *adapters.ConversationOptions) *adapters.Conversation {
	t.Helper()
	conv, err := adapters.NewConversation(context.Background(), src, p, o)
	if err != nil {
		t.Fatal(err)
	}
	return conv
}

// toolNames are the names a tool list offers, in order; Responses
// namespaces count as their name.
func toolNames(tools []map[string]any) []string {
	var out []string
	for _, d := range tools {
		if fn := jsonv.Object(d["function"]); fn != nil {
			d = fn
		}
		if spec := jsonv.Object(d["toolSpec"]); spec != nil {
			d = spec
		}
		name := jsonv.String(d["name"])
		if name == "" {
			name = jsonv.String(d["type"])
		}
		out = append(out, name)
	}
	return out
}

// answerText is the text of one answer, in any provider's shape.
func answerText(res map[string]any) string {
	return canon(res)
}

func TestSearchWhen(t *testing.T) {
	hub, _ := catalogHub(t, hubOpts{})
	small, _, _ := labHub(t, hubOpts{noGone: true})
	native := map[adapters.Provider]string{adapters.Anthropic: "tool_search_tool_bm25", adapters.OpenAIChat: "search_tools",
		adapters.OpenAIResponses: "tool_search", adapters.Gemini: "search_tools", adapters.Bedrock: "search_tools"}
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			// Auto, past the threshold: the provider's own, or conduit's.
			l := newConv(t, hub, p, nil).Listing()
			if l.SearchTool != native[p] || len(l.Deferred) != 42 {
				t.Errorf("auto over 42 tools: search tool %q, %d deferred", l.SearchTool, len(l.Deferred))
			}
			// Auto below it: every tool.
			if l := newConv(t, small, p, nil).Listing(); l.SearchTool != "" || l.Deferred != nil {
				t.Errorf("auto over the lab: search tool %q", l.SearchTool)
			}
			// A higher threshold, then the byte budget alone.
			if l := newConv(t, hub, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Threshold: 100}}).Listing(); l.SearchTool != "" || len(l.Tools) != 42 {
				t.Errorf("threshold 100: search tool %q, %d tools", l.SearchTool, len(l.Tools))
			}
			if l := newConv(t, small, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Threshold: -1, Budget: 100}}).Listing(); l.SearchTool == "" {
				t.Error("a budget of 100 bytes did not search")
			}
			if l := newConv(t, hub, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Threshold: -1, Budget: -1}}).Listing(); l.SearchTool != "" {
				t.Error("no threshold and no budget searched")
			}
			// On and Off force it.
			if l := newConv(t, small, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOn}}).Listing(); l.SearchTool != native[p] {
				t.Errorf("on: search tool %q", l.SearchTool)
			}
			if l := newConv(t, hub, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOff}}).Listing(); l.SearchTool != "" || len(l.Tools) != 42 {
				t.Errorf("off: search tool %q, %d tools", l.SearchTool, len(l.Tools))
			}
			// conduit's own on request, and always-loaded tools first.
			l = newConv(t, hub, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Conduit: true, AlwaysLoaded: []string{"github/get_*", "db/query"}}}).Listing()
			if got := toolNames(l.Tools); !slices.Equal(got, []string{"github__get_file_contents", "github__get_issue", "db__query", "search_tools"}) {
				t.Errorf("conduit's search with always-loaded tools lists %v", got)
			}
			if len(l.Deferred) != 39 || slices.Contains(l.Deferred, "db__query") {
				t.Errorf("%d deferred: %v", len(l.Deferred), l.Deferred)
			}
			// Bad options are errors.
			for _, so := range []adapters.SearchOptions{{Mode: adapters.SearchMode(7)}, {AlwaysLoaded: []string{"github/[get"}}} {
				if _, err := adapters.NewConversation(context.Background(), hub, p, &adapters.ConversationOptions{Search: so}); err == nil {
					t.Errorf("%+v: no error", so)
				}
			}
		})
	}
}

func TestSearchNativeListing(t *testing.T) {
	hub, _ := catalogHub(t, hubOpts{})
	// Anthropic: loaded, the search tool (BM25 or regex), then every
	// other tool deferred; the cache mark on the search tool.
	for _, regex := range []bool{false, true} {
		conv := newConv(t, hub, adapters.Anthropic, &adapters.ConversationOptions{Listing: adapters.ListingOptions{CacheLast: true}, Search: adapters.SearchOptions{Regex: regex, AlwaysLoaded: []string{"slack/post_message"}}})
		tools := conv.Tools()
		if len(tools) != 43 || tools[0]["name"] != "slack__post_message" || tools[0]["defer_loading"] != nil {
			t.Fatalf("regex %v: %d tools, first %v", regex, len(tools), tools[0])
		}
		want := map[bool]string{false: "tool_search_tool_bm25_20251119", true: "tool_search_tool_regex_20251119"}[regex]
		if tools[1]["type"] != want || tools[1]["cache_control"] == nil {
			t.Errorf("regex %v: the search tool is %v", regex, tools[1])
		}
		for _, d := range tools[2:] {
			if d["defer_loading"] != true || d["cache_control"] != nil || d["name"] == "slack__post_message" {
				t.Errorf("deferred tool %v", d)
			}
		}
		if conv.Listing().ToolSet.Len() != 42 {
			t.Error("calls do not resolve against every tool")
		}
	}
	// Responses: loaded functions, tool_search, one namespace per server
	// whose functions are deferred and named without the server prefix.
	conv := newConv(t, hub, adapters.OpenAIResponses, &adapters.ConversationOptions{Search: adapters.SearchOptions{AlwaysLoaded: []string{"slack/post_message"}}})
	tools := conv.Tools()
	if got := toolNames(tools); !slices.Equal(got, []string{"slack__post_message", "tool_search", "github", "kubernetes", "slack", "db", "files"}) {
		t.Fatalf("responses lists %v", got)
	}
	slack := tools[4]
	if slack["type"] != "namespace" || slack["description"] != "The 5 tools of the MCP server slack." {
		t.Errorf("slack namespace %v", slack)
	}
	for _, f := range jsonv.List(slack["tools"]) {
		fn := jsonv.Object(f)
		if fn["defer_loading"] != true || strings.HasPrefix(jsonv.String(fn["name"]), "slack__") || fn["name"] == "post_message" {
			t.Errorf("slack function %v", fn)
		}
	}
}

// A whole loop of conduit's search: a tool called before it is found is
// unknown and nothing is sent; a search finds it, the next listing offers
// it after what was offered before, and a call of it goes to its server.
func TestSearchConduitLoop(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			hub, cat := catalogHub(t, hubOpts{})
			ctx := context.Background()
			conv := newConv(t, hub, p, &adapters.ConversationOptions{Listing: adapters.ListingOptions{CacheLast: true}, Search: adapters.SearchOptions{Conduit: true, Limit: 3}})
			first := conv.Tools()
			if got := toolNames(first); !slices.Equal(got, []string{"search_tools"}) {
				t.Fatalf("turn 1 lists %v", got)
			}
			exec, err := conv.Execute(ctx, script(p,
				scripted{id: "call_early", name: "github__merge_pull_request", args: map[string]any{"input": "1"}},
				scripted{id: "call_search", name: "search_tools", args: map[string]any{"query": "merge a pull request"}}))
			if err != nil {
				t.Fatal(err)
			}
			if !errors.Is(exec.Errors[0], conduit.ErrUnknownTool) {
				t.Errorf("a call before the search: %v, want an unknown tool", exec.Errors[0])
			}
			if exec.Errors[1] != nil || !strings.Contains(answerText(exec.Results[1]), "github__merge_pull_request: Merge a pull request.") {
				t.Errorf("the search answered %v: %s", exec.Errors[1], answerText(exec.Results[1]))
			}
			if n := len(cat.calls()); n != 0 {
				t.Errorf("the servers received %v", cat.calls())
			}
			second := conv.Tools()
			names := toolNames(second)
			if len(names) != 4 || names[0] != "search_tools" || names[1] != "github__merge_pull_request" {
				t.Fatalf("turn 2 lists %v", names)
			}
			assertPrefix(t, first, second)
			// The found tool is called, and goes to its server; the
			// search itself taints nothing.
			exec, err = conv.Execute(ctx, script(p, scripted{id: "call_merge", name: "github__merge_pull_request", args: map[string]any{"input": "7"}}))
			if err != nil || exec.Errors[0] != nil {
				t.Fatalf("the call after the search: %v %v", err, exec.Errors)
			}
			if got := cat.calls(); !slices.Equal(got, []string{"github/merge_pull_request"}) {
				t.Errorf("the servers received %v", got)
			}
			if got := conv.Taint(); !slices.Equal(got, []string{"github"}) {
				t.Errorf("taint %v", got)
			}
			// A search that finds nothing new leaves the list as it was.
			if _, err := conv.Execute(ctx, script(p, scripted{id: "call_again", name: "search_tools", args: map[string]any{"query": "merge pull request", "limit": 1}})); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(toolNames(conv.Tools()), names) {
				t.Errorf("a repeated search changed the list to %v", toolNames(conv.Tools()))
			}
		})
	}
}

// assertPrefix checks that the tool list before is the start of after,
// byte for byte, as a provider's prompt cache sees it.
func assertPrefix(t testing.TB, before, after []map[string]any) {
	t.Helper()
	b, a := []byte(canon(before)), []byte(canon(after))
	b = b[:len(b)-1] // the list's closing bracket
	if !strings.HasPrefix(string(a), string(b)) {
		t.Errorf("the list of %d tools is not a prefix of the next one's %d", len(before), len(after))
	}
}

func TestSearchArgs(t *testing.T) {
	hub, cat := catalogHub(t, hubOpts{})
	ctx := context.Background()
	p := adapters.OpenAIChat
	conv := newConv(t, hub, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOn}})
	exec, err := conv.Execute(ctx, script(p,
		scripted{id: "empty", name: "search_tools", args: map[string]any{"query": "  "}},
		scripted{id: "number", name: "search_tools", args: map[string]any{"query": 3}},
		scripted{id: "badlimit", name: "search_tools", args: map[string]any{"query": "files", "limit": 1.5}},
		scripted{id: "zero", name: "search_tools", args: map[string]any{"query": "files", "limit": 0}},
		scripted{id: "many", name: "search_tools", args: map[string]any{"query": "file files directory", "limit": 500}},
		scripted{id: "none", name: "search_tools", args: map[string]any{"query": "zebra xylophone"}},
		scripted{id: "notobject", name: "search_tools", args: []any{"files"}},
	))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{`\"query\" is empty`, `\"query\" must be a string`, `\"limit\" must be a whole number from 1 to 20`,
		`\"limit\" must be a whole number`, `13 tools match`, `No tool matches \"zebra xylophone\"`, `must be a JSON object`} {
		if got := answerText(exec.Results[i]); !strings.Contains(got, want) {
			t.Errorf("answer %d: %s, want %s", i, got, want)
		}
	}
	if !strings.HasPrefix(answerText(exec.Results[0]), `{"content":"Error: `) || strings.HasPrefix(answerText(exec.Results[4]), `{"content":"Error: `) {
		t.Errorf("a bad query is not an error answer, or a good one is: %s / %s", answerText(exec.Results[0]), answerText(exec.Results[4]))
	}
	// The 13 tools found are all revealed (the limit of 500 is cut to 20,
	// more than match), after the search tool, and nothing was sent.
	if got := len(conv.Tools()); got != 14 {
		t.Errorf("%d tools listed after the searches: %v", got, toolNames(conv.Tools()))
	}
	if len(cat.calls()) != 0 {
		t.Errorf("sent %v", cat.calls())
	}
}

// hidden are the tools the guest of guestPolicy must never find: denied
// outright, or hidden by the filter.
var hidden = []string{"db__drop_database", "github__delete_repository", "files__delete_file", "kubernetes__kubectl_delete"}

func guestHub(t testing.TB) (*conduit.Hub, *catalog) {
	return catalogHub(t, hubOpts{
		policy: conduit.NewPolicy(
			conduit.Deny("db/drop_*", "*/*delete*").When(conduit.Principal("guest")),
			conduit.Deny("github/delete_*"),
			conduit.Allow("*"),
		),
		filter: func(server string, tool *mcp.Tool) bool { return tool.Name != "delete_file" },
	})
}

// Neither search finds a tool the policy denies the principal outright or
// the filter hides, whatever the words.
func TestSearchNeverFindsHidden(t *testing.T) {
	hub, cat := guestHub(t)
	ctx := context.Background()
	var words []string
	for _, id := range catalogOrder {
		for _, td := range catalogTools[id] {
			words = append(words, strings.FieldsFunc(td[0]+" "+td[1], func(r rune) bool { return r == '_' || r == ' ' || r == '.' })...)
		}
	}
	queries := append([]string{"delete", "drop database", "delete file", "delete repository", "kubectl delete", strings.Join(words, " ")}, words...)
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			opts := &adapters.ConversationOptions{
				Search: adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: true, Limit: adapters.MaxSearchLimit}, TurnOptions: adapters.TurnOptions{Principal: "guest"},
			}
			conv := newConv(t, hub, p, opts)
			var calls []scripted
			for i, q := range queries {
				calls = append(calls, scripted{id: fmt.Sprintf("q%d", i), name: "search_tools", args: map[string]any{"query": q}})
			}
			exec, err := conv.Execute(ctx, script(p, calls...))
			if err != nil {
				t.Fatal(err)
			}
			listed := canon(conv.Tools()) + canon(conv.Listing().Deferred)
			for _, h := range hidden {
				for i, res := range exec.Results {
					if strings.Contains(answerText(res), h) {
						t.Errorf("search %q found %s", queries[i], h)
					}
				}
				if strings.Contains(listed, h) {
					t.Errorf("%s is listed or deferred", h)
				}
			}
			// The searches did find the rest: every other tool is listed.
			if got := len(conv.Tools()); got != 1+42-len(hidden) {
				t.Errorf("%d tools listed after every search", got)
			}
			// And calls of the hidden ones are unknown, nothing sent.
			var hiddenCalls []scripted
			for _, h := range hidden {
				hiddenCalls = append(hiddenCalls, scripted{id: "call_" + h, name: h, args: map[string]any{}})
			}
			exec, err = conv.Execute(ctx, script(p, hiddenCalls...))
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range exec.Errors {
				if !errors.Is(e, conduit.ErrUnknownTool) {
					t.Errorf("call of %s: %v", hidden[i], e)
				}
			}
			if len(cat.calls()) != 0 {
				t.Errorf("sent %v", cat.calls())
			}
			// The provider's own search is offered only what the guest may
			// see, too.
			native := newConv(t, hub, p, &adapters.ConversationOptions{
				Search: adapters.SearchOptions{Mode: adapters.SearchOn}, TurnOptions: adapters.TurnOptions{Principal: "guest"},
			})
			nl := native.Listing()
			for _, h := range hidden {
				if _, ok := nl.ToolSet.Lookup(h); ok || slices.Contains(nl.Deferred, h) {
					t.Errorf("%s is in the provider's search listing", h)
				}
			}
		})
	}
}

// search_tools is governed as conduit/search_tools: the policy, its
// conditions and the approver apply to it like to any tool.
func TestSearchGoverned(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var asked []string
	hub, _ := catalogHub(t, hubOpts{
		policy: conduit.NewPolicy(
			conduit.Deny("conduit/search_tools").When(conduit.Tainted("slack")),
			conduit.Ask("conduit/search_tools").When(conduit.Principal("careful")),
			conduit.Allow("*"),
		),
		approver: func(_ context.Context, req conduit.ApprovalRequest) conduit.Approval {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Call.Server+"/"+req.Call.Tool+" "+canon(req.Call.Args))
			return conduit.Reject("no searching today")
		},
	})
	p := adapters.Gemini
	// Asked, and rejected: nothing is revealed.
	careful := newConv(t, hub, p, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Principal: "careful"}})
	exec, err := careful.Execute(ctx, script(p, scripted{id: "s1", name: "search_tools", args: map[string]any{"query": "pods"}}))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(exec.Errors[0], conduit.ErrDenied) || len(careful.Tools()) != 1 {
		t.Errorf("careful: %v, %d tools", exec.Errors[0], len(careful.Tools()))
	}
	mu.Lock()
	if !slices.Equal(asked, []string{`conduit/search_tools {"query":"pods"}`}) {
		t.Errorf("the approver was asked %v", asked)
	}
	mu.Unlock()
	// Allowed until slack's output reaches the model, denied after.
	conv := newConv(t, hub, p, nil)
	exec, err = conv.Execute(ctx, script(p, scripted{id: "s2", name: "search_tools", args: map[string]any{"query": "post a slack message"}}))
	if err != nil || exec.Errors[0] != nil {
		t.Fatalf("search: %v %v", err, exec.Errors)
	}
	n := len(conv.Tools())
	if _, err := conv.Execute(ctx, script(p, scripted{id: "c", name: "slack__post_message", args: map[string]any{}})); err != nil {
		t.Fatal(err)
	}
	exec, err = conv.Execute(ctx, script(p, scripted{id: "s3", name: "search_tools", args: map[string]any{"query": "kubernetes pods"}}))
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(exec.Errors[0], conduit.ErrDenied) || len(conv.Tools()) != n {
		t.Errorf("after slack's output: %v, %d tools (was %d)", exec.Errors[0], len(conv.Tools()), n)
	}
	// A policy that denies it outright: Auto lists every tool and says
	// why; On is an error.
	strict, _ := catalogHub(t, hubOpts{policy: conduit.NewPolicy(conduit.Allow("github/*", "slack/*"))})
	l := newConv(t, strict, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Threshold: 10}}).Listing()
	if l.SearchTool != "" || len(l.Tools) != 18 || len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0].Message, "conduit/search_tools") {
		t.Errorf("auto, search denied: search tool %q, %d tools, warnings %v", l.SearchTool, len(l.Tools), l.Warnings)
	}
	_, err = adapters.NewConversation(ctx, strict, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOn}})
	if err == nil || !strings.Contains(err.Error(), "conduit/search_tools") {
		t.Errorf("on, search denied: %v", err)
	}
	// The provider's own search is the provider's: the policy has no say.
	if l := newConv(t, strict, adapters.Anthropic, &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOn}}).Listing(); l.SearchTool != "tool_search_tool_bm25" {
		t.Errorf("anthropic's own search with the strict policy: %q", l.SearchTool)
	}
}

// A server tool named search_tools leaves no room for conduit's.
func TestSearchNameTaken(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "x", Version: "1"}, nil)
	for _, name := range []string{"search_tools", "other"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: obj(map[string]any{})}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("ok"), nil
		})
	}
	tr, _ := connect(t, srv)
	cl, err := conduit.NewClient(context.Background(), conduit.Server{ID: "x", Transport: tr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	l := newConv(t, cl, adapters.Gemini, &adapters.ConversationOptions{Search: adapters.SearchOptions{Threshold: 1}}).Listing()
	if l.SearchTool != "" || len(l.Tools) != 2 || len(l.Warnings) != 1 {
		t.Errorf("auto: search tool %q, %d tools, %v", l.SearchTool, len(l.Tools), l.Warnings)
	}
	if _, err := adapters.NewConversation(context.Background(), cl, adapters.Gemini, &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOn}}); err == nil {
		t.Error("on: no error")
	}
}

// ownSource is a Source of the caller's own, which conduit cannot govern:
// search_tools is answered without it.
type ownSource struct{ conduit.Source }

func TestSearchOwnSource(t *testing.T) {
	hub, _ := catalogHub(t, hubOpts{policy: conduit.NewPolicy(conduit.Allow("github/*"))})
	p := adapters.OpenAIChat
	conv := newConv(t, ownSource{hub}, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOn}})
	exec, err := conv.Execute(context.Background(), script(p, scripted{id: "s", name: "search_tools", args: map[string]any{"query": "issues"}}))
	if err != nil || exec.Errors[0] != nil {
		t.Fatalf("%v %v", err, exec.Errors)
	}
	if len(conv.Tools()) < 2 {
		t.Errorf("nothing was revealed: %v", toolNames(conv.Tools()))
	}
}

// The stable-prefix property: whatever the searches, the list of turn n is
// a byte prefix of the list of turn n+1, for every provider; with the
// provider's own search the list never changes.
func TestSearchStablePrefix(t *testing.T) {
	hub, _ := catalogHub(t, hubOpts{})
	vocab := strings.Fields("pull request issue repository branch commit file directory read write pods logs deploy scale " +
		"channel message thread reaction user table database query backup namespace port kubernetes slack github zebra")
	for i, p := range adapters.Providers() {
		for _, conduitSearch := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v/conduit=%v", p, conduitSearch), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(i+1), 42))
				for run := 0; run < 5; run++ {
					var queries []string
					for range 1 + rng.IntN(8) {
						var q []string
						for range 1 + rng.IntN(3) {
							q = append(q, vocab[rng.IntN(len(vocab))])
						}
						queries = append(queries, strings.Join(q, " "))
					}
					checkPrefix(t, hub, p, conduitSearch, queries, rng.IntN(6))
				}
			})
		}
	}
}

// checkPrefix runs queries, one a turn, and checks the property.
func checkPrefix(t testing.TB, src conduit.Source, p adapters.Provider, conduitSearch bool, queries []string, limit int) {
	t.Helper()
	conv := newConv(t, src, p, &adapters.ConversationOptions{Listing: adapters.ListingOptions{CacheLast: true}, Search: adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: conduitSearch, AlwaysLoaded: []string{"db/*"}, Limit: limit}})
	prev := conv.Tools()
	for i, q := range queries {
		name := "search_tools"
		if !conduitSearch {
			name = "not_offered" // the provider searches; calls are the model's own
		}
		if _, err := conv.Execute(context.Background(), script(p, scripted{id: fmt.Sprintf("s%d", i), name: name, args: map[string]any{"query": q}})); err != nil {
			t.Fatal(err)
		}
		next := conv.Tools()
		assertPrefix(t, prev, next)
		if !conduitSearch && canon(next) != canon(prev) {
			t.Fatal("the provider's search listing changed")
		}
		if len(next) < len(prev) {
			t.Fatalf("the list shrank from %d to %d", len(prev), len(next))
		}
		prev = next
	}
}

// FuzzSearchPrefix runs random search sequences through conduit's search
// for every provider: the list only ever grows at its end, and the guest
// never finds a hidden tool.
func FuzzSearchPrefix(f *testing.F) {
	f.Add("merge pull request\nkubernetes pods\nslack", uint8(3))
	f.Add("delete\ndrop database\n\n", uint8(0))
	f.Add("file files directory read write\nzebra", uint8(20))
	hub, _ := guestHub(f)
	f.Fuzz(func(t *testing.T, queries string, limit uint8) {
		qs := strings.Split(queries, "\n")
		if len(qs) > 8 {
			qs = qs[:8]
		}
		for _, p := range adapters.Providers() {
			conv := newConv(t, hub, p, &adapters.ConversationOptions{Listing: adapters.ListingOptions{CacheLast: true}, Search: adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: true, Limit: int(limit)}, TurnOptions: adapters.TurnOptions{Principal: "guest"}})
			prev := conv.Tools()
			for i, q := range qs {
				if _, err := conv.Execute(context.Background(), script(p, scripted{id: fmt.Sprintf("s%d", i), name: "search_tools",
					args: map[string]any{"query": q, "limit": float64(limit%25) + 1}})); err != nil {
					t.Fatal(err)
				}
				next := conv.Tools()
				assertPrefix(t, prev, next)
				prev = next
			}
			for _, name := range toolNames(prev) {
				if slices.Contains(hidden, name) {
					t.Fatalf("%v: the guest found %s", p, name)
				}
			}
		}
	})
}

// The search answers as any call is answered, in each provider's shape.
func TestSearchAnswerShape(t *testing.T) {
	hub, _ := catalogHub(t, hubOpts{})
	for _, p := range adapters.Providers() {
		conv := newConv(t, hub, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: true}})
		exec, err := conv.Execute(context.Background(), script(p, scripted{id: "s", name: "search_tools", args: map[string]any{"query": "kubernetes pod logs", "limit": 2}}))
		if err != nil || exec.Errors[0] != nil {
			t.Fatal(err, exec.Errors)
		}
		ids := answerIDs(p, exec.Results)
		if len(ids) != 1 || ids[0] != "s" {
			t.Errorf("%v: the answer is keyed by %v", p, ids)
		}
		want := "2 tools match \\\"kubernetes pod logs\\\", best first; they can be called from now on:\\nkubernetes__kubectl_logs: Get the logs of a pod's containers."
		if got := answerText(exec.Results[0]); !strings.Contains(got, want) {
			t.Errorf("%v: %s", p, got)
		}
	}
}

// Strict mode's fallbacks are traced once, as the tools that fall back
// are found, and a Trace may call the Conversation.
func TestSearchTracesFallbacks(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true, policy: conduit.AllowAll()})
	var conv *adapters.Conversation
	var traced []string
	o := &adapters.ConversationOptions{
		TurnOptions: adapters.TurnOptions{Trace: &adapters.Trace{StrictFallback: func(i adapters.StrictFallbackInfo) {
			traced = append(traced, i.Tool)
			if conv != nil {
				conv.Tools() // must not deadlock
			}
		}}},
		Search: adapters.SearchOptions{Mode: adapters.SearchOn}}
	conv = newConv(t, hub, adapters.OpenAIChat, o)
	for i := range 2 {
		if _, err := conv.Execute(context.Background(), script(adapters.OpenAIChat,
			scripted{id: fmt.Sprint(i), name: "search_tools", args: map[string]any{"query": "picks an item by id or by name", "limit": 1}})); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(traced, []string{"lab__pick"}) || !slices.Equal(conv.Listing().Fallbacks, []string{"lab__pick"}) {
		t.Errorf("traced %v, listing's fallbacks %v", traced, conv.Listing().Fallbacks)
	}
}

// TestSearchToolServerIsKnown: a policy may name conduit's search tool
// without a warning that its server is not configured.
func TestSearchToolServerIsKnown(t *testing.T) {
	p := conduit.NewPolicy(conduit.Allow(adapters.SearchToolServer+"/"+adapters.SearchToolName), conduit.Deny(adapters.SearchToolServer))
	if err := p.Check([]string{"notes"}); err != nil {
		t.Errorf("Check = %v", err)
	}
}
