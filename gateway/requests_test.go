package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectClient opens a session of g with client, closed at the test's end.
func connectClient(t *testing.T, g *gateway.Gateway, client *mcp.Client) *mcp.ClientSession {
	t.Helper()
	return connectClientWith(t, g, client, sessionVersion)
}

// connectClientWith is connectClient with the session options o (nil: the
// newest protocol version).
func connectClientWith(t *testing.T, g *gateway.Gateway, client *mcp.Client, o *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, st, nil) }()
	cs, err := client.Connect(ctx, ct, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

// askingServer is an upstream whose tools ask the client for roots, an
// elicitation and a sample, and answer with what they got: through
// multi-round-trip results (protocol 2026-07-28) unless versions keeps it
// to older protocols, where they send JSON-RPC requests. Its tools fail
// when the session's protocol is not the one meant. calls counts the
// tools' invocations.
func askingServer(t *testing.T, name string, versions []string, calls *atomic.Int64) *upstream {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	u := &upstream{Server: s, t: t}
	modern := versions == nil
	check := func(req *mcp.CallToolRequest) error {
		calls.Add(1)
		if v := req.Session.InitializeParams().ProtocolVersion; (v >= "2026-07-28") != modern {
			return fmt.Errorf("protocol %s", v)
		}
		return nil
	}
	u.tool("roots", "The client's roots.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := check(req); err != nil {
			return nil, err
		}
		var r *mcp.ListRootsResult
		if modern {
			var ok bool
			if r, ok = req.Params.InputResponses["r"].(*mcp.ListRootsResult); !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"r": &mcp.ListRootsParams{}}}, nil
			}
		} else {
			var err error
			if r, err = req.Session.ListRoots(ctx, nil); err != nil {
				return nil, err
			}
		}
		var uris []string
		for _, root := range r.Roots {
			uris = append(uris, root.URI)
		}
		return text("roots " + strings.Join(uris, ",")), nil
	})
	u.tool("elicit", "Ask the user.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := check(req); err != nil {
			return nil, err
		}
		p := &mcp.ElicitParams{Message: "who?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}}}`)}
		var r *mcp.ElicitResult
		if modern {
			var ok bool
			if r, ok = req.Params.InputResponses["e"].(*mcp.ElicitResult); !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"e": p}}, nil
			}
		} else {
			var err error
			if r, err = req.Session.Elicit(ctx, p); err != nil {
				return nil, err
			}
		}
		return text(fmt.Sprint(r.Action, " ", r.Content["who"])), nil
	})
	u.tool("sample", "Ask the client's model.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := check(req); err != nil {
			return nil, err
		}
		p := &mcp.CreateMessageParams{MaxTokens: 5, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}
		var model, reply string
		if modern {
			r, ok := req.Params.InputResponses["s"].(*mcp.CreateMessageWithToolsResult)
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"s": p}}, nil
			}
			model, reply = r.Model, r.Content[0].(*mcp.TextContent).Text
		} else {
			r, err := req.Session.CreateMessage(ctx, p)
			if err != nil {
				return nil, err
			}
			model, reply = r.Model, r.Content.(*mcp.TextContent).Text
		}
		return text("sampled " + model + ": " + reply), nil
	})
	return u
}

// TestServerRequestsDuringCall: in hub mode, what a server asks during a
// call (roots, elicitation, sampling) is asked of the client of the
// session that made the call, and its answer goes back: from a server of
// protocol 2026-07-28 (multi-round-trip results) and from one of
// 2025-11-25 (JSON-RPC requests) alike. A client that did not declare
// roots gets an error for its call, and the server is not asked again
// with an empty list.
func TestServerRequestsDuringCall(t *testing.T) {
	var modernCalls, legacyCalls atomic.Int64
	modern := askingServer(t, "modern", nil, &modernCalls)
	legacy := askingServer(t, "legacy", []string{"2025-11-25"}, &legacyCalls)
	g := newGateway(t, []conduit.Server{modern.server("modern"), legacy.server("legacy")},
		&gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})

	client := func(name string, caps *mcp.ClientCapabilities) *mcp.Client {
		c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
			Capabilities: caps,
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": name}}, nil
			},
			CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				in := req.Params.Messages[0].Content.(*mcp.TextContent).Text
				return &mcp.CreateMessageResult{Model: name + "-model", Role: "assistant", Content: &mcp.TextContent{Text: "re: " + in}}, nil
			},
		})
		c.AddRoots(&mcp.Root{URI: "file:///" + name})
		return c
	}
	alice := connectClient(t, g, client("alice", nil)) // the SDK's default: roots
	bob := connectClient(t, g, client("bob", &mcp.ClientCapabilities{}))

	for _, server := range []string{"modern", "legacy"} {
		for _, tc := range []struct {
			cs         *mcp.ClientSession
			tool, want string
		}{
			{alice, "roots", "roots file:///alice"},
			{alice, "elicit", "accept alice"},
			{alice, "sample", "sampled alice-model: re: hi"},
			{bob, "elicit", "accept bob"},
			{bob, "sample", "sampled bob-model: re: hi"},
		} {
			res := callTool(t, tc.cs, server+"__"+tc.tool, nil)
			if got := resultText(res); res.IsError || got != tc.want {
				t.Errorf("%s__%s = %q (isError %v), want %q", server, tc.tool, got, res.IsError, tc.want)
			}
		}
	}

	// Bob declared no roots: his call fails, and neither server gets an
	// answer it did not ask for.
	modernCalls.Store(0)
	res := callTool(t, bob, "modern__roots", nil)
	if got := resultText(res); !res.IsError || !strings.Contains(got, "roots capability") {
		t.Errorf("modern__roots for bob = %q (isError %v), want an error naming the roots capability", got, res.IsError)
	}
	if n := modernCalls.Load(); n != 1 {
		t.Errorf("the modern server's tool ran %d times for bob, want 1", n)
	}
	res, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "legacy__roots", Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Errorf("legacy__roots for bob = %q, want an error", resultText(res))
	}
}

// TestCompletion: completion/complete for a server__prompt reference goes
// to that prompt's server under the prompt's own name, and for a resource
// template to the template's server. Values taint the session as a
// prompt's output does (here: mail is denied once docs has spoken); an
// answer without values, as conduit gives for a server that offers no
// completions, does not.
func TestCompletion(t *testing.T) {
	completing := func(name string, asked *[]string) *upstream {
		s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
			CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
				ref := req.Params.Ref.Name + req.Params.Ref.URI
				*asked = append(*asked, ref)
				return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
					Values: []string{name + ":" + ref + ":" + req.Params.Argument.Value}}}, nil
			},
		})
		u := &upstream{Server: s, t: t}
		u.AddPrompt(&mcp.Prompt{Name: "summarize", Arguments: []*mcp.PromptArgument{{Name: "topic"}}},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
		return u
	}
	var docsAsked, otherAsked []string
	docs, other := completing("docs", &docsAsked), completing("other", &otherAsked)
	docs.AddResourceTemplate(&mcp.ResourceTemplate{Name: "page", URITemplate: "docs://pages/{n}"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
	quiet := newUpstream(t, "quiet")
	quiet.AddPrompt(&mcp.Prompt{Name: "hello"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	mail := newUpstream(t, "mail")
	mail.tool("send", "Send mail.", echo("sent "))
	g := newGateway(t, []conduit.Server{docs.server("docs"), other.server("other"), quiet.server("quiet"), mail.server("mail")},
		&gateway.Options{Hub: &conduit.Options{Policy: conduit.NewPolicy(
			conduit.Deny("mail/*").When(conduit.Tainted("docs")),
			conduit.Allow("*"),
		)}})
	ctx := context.Background()
	complete := func(cs *mcp.ClientSession, ref *mcp.CompleteReference) []string {
		t.Helper()
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "topic", Value: "g"}})
		if err != nil {
			t.Fatalf("complete %+v: %v", ref, err)
		}
		return res.Completion.Values
	}
	mailAllowed := func(cs *mcp.ClientSession) bool {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mail__send", Arguments: map[string]any{}})
		return err == nil && !res.IsError
	}

	a, _ := connect(t, g, "", nil)
	if got := complete(a, &mcp.CompleteReference{Type: "ref/prompt", Name: "quiet__hello"}); len(got) != 0 {
		t.Errorf("quiet__hello completions = %q, want none", got)
	}
	if got := complete(a, &mcp.CompleteReference{Type: "ref/prompt", Name: "other__summarize"}); len(got) != 1 || got[0] != "other:summarize:g" {
		t.Errorf("other__summarize completions = %q", got)
	}
	if !mailAllowed(a) {
		t.Error("mail denied before docs' output reached the session")
	}
	if got := complete(a, &mcp.CompleteReference{Type: "ref/prompt", Name: "docs__summarize"}); len(got) != 1 || got[0] != "docs:summarize:g" {
		t.Errorf("docs__summarize completions = %q", got)
	}
	if mailAllowed(a) {
		t.Error("mail allowed after docs' completions reached the session")
	}

	b, _ := connect(t, g, "", nil)
	if got := complete(b, &mcp.CompleteReference{Type: "ref/resource", URI: "docs://pages/{n}"}); len(got) != 1 || got[0] != "docs:docs://pages/{n}:g" {
		t.Errorf("template completions = %q", got)
	}
	if mailAllowed(b) {
		t.Error("mail allowed after docs' template completions reached the session")
	}
	if !slices.Equal(docsAsked, []string{"summarize", "docs://pages/{n}"}) || !slices.Equal(otherAsked, []string{"summarize"}) {
		t.Errorf("docs was asked %q, other %q", docsAsked, otherAsked)
	}
}
