package conduit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// featureServer is a test server with prompts, resources and templates:
// prompts greet and <name>_only, resources test://shared (on every such
// server), test://<name>/doc and template test://<name>/items/{id}.
func featureServer(t *testing.T, name string) *testServer {
	ts := newTestServer(t, name)
	ts.Server = mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
				Values: []string{name + ":" + req.Params.Ref.Name + req.Params.Ref.URI + ":" + req.Params.Argument.Value}}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		SetCacheable:       stableLists,
	})
	prompt := func(p string) {
		ts.AddPrompt(&mcp.Prompt{Name: p, Description: "the " + p + " prompt", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
			func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
					Content: &mcp.TextContent{Text: name + " " + p + " " + req.Params.Arguments["who"]}}}}, nil
			})
	}
	prompt("greet")
	prompt(name + "_only")
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: name + " has " + req.Params.URI}}}, nil
	}
	ts.AddResource(&mcp.Resource{Name: "shared", URI: "test://shared"}, read)
	ts.AddResource(&mcp.Resource{Name: "doc", URI: "test://" + name + "/doc"}, read)
	ts.AddResourceTemplate(&mcp.ResourceTemplate{Name: "items", URITemplate: "test://" + name + "/items/{id}"}, read)
	return ts
}

func promptNames(ps *PromptSet) []string {
	var out []string
	for p := range ps.All() {
		out = append(out, p.Exposed)
	}
	return out
}

func resourceURIs(rs *ResourceSet) []string {
	var out []string
	for r := range rs.Resources() {
		out = append(out, r.Server+" "+r.URI)
	}
	for t := range rs.Templates() {
		out = append(out, t.Server+" "+t.URITemplate)
	}
	return out
}

func skippedOf(sk []Skipped) []string {
	var out []string
	for _, s := range sk {
		out = append(out, fmt.Sprintf("%s %s %v", s.Server, s.Tool, s.Reason))
	}
	return out
}

// TestPromptsAndResources: prompts are named as tools are; resources keep
// their URIs, and a URI two servers share is left out and reported; the
// policy's server/name patterns govern both.
func TestPromptsAndResources(t *testing.T) {
	a, b := featureServer(t, "a"), featureServer(t, "b")
	var approved []string
	var mu sync.Mutex
	h := newHub(t, []Server{a.server("a"), b.server("b")}, &Options{Policy: NewPolicy(
		Deny("b/b_only").When(Principal("eve")),
		Deny("a/test://a/doc"),
		Ask("b/greet", "b/test://b/items/*"),
		Allow("*"),
	),
		Approver: func(_ context.Context, req ApprovalRequest) Approval {
			mu.Lock()
			approved = append(approved, req.Call.Method+" "+req.Call.Exposed)
			mu.Unlock()
			return Approve()
		}})
	ctx := context.Background()

	ps, err := h.ListPromptsFor(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := promptNames(ps), []string{"a__a_only", "a__greet", "b__b_only", "b__greet"}; !slices.Equal(got, want) {
		t.Errorf("prompts = %v, want %v", got, want)
	}
	ps, _ = h.ListPromptsFor(ctx, &ListOptions{Principal: "eve"})
	if got := promptNames(ps); slices.Contains(got, "b__b_only") || len(got) != 3 {
		t.Errorf("prompts for eve = %v, want b__b_only left out", got)
	}

	rs, err := h.ListResourcesFor(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resourceURIs(rs), []string{"b test://b/doc", "a test://a/items/{id}", "b test://b/items/{id}"}; !slices.Equal(got, want) {
		t.Errorf("resources = %v, want %v", got, want)
	}
	if got, want := skippedOf(rs.Skipped()), []string{"a test://shared collision", "b test://shared collision", "a test://a/doc policy"}; !slices.Equal(got, want) {
		t.Errorf("skipped = %v, want %v", got, want)
	}

	res, err := h.GetPrompt(ctx, "b__greet", map[string]string{"who": "you"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Messages[0].Content.(*mcp.TextContent).Text; got != "b greet you" {
		t.Errorf("b__greet = %q", got)
	}
	_, err = h.GetPrompt(ctx, "b__b_only", nil, &CallOptions{Principal: "eve"})
	wantKind(t, err, ErrDenied)
	_, err = h.GetPrompt(ctx, "c__greet", nil, nil)
	wantKind(t, err, ErrUnknownTool)

	for uri, want := range map[string]string{
		"test://b/doc":      "b has test://b/doc",
		"test://a/items/7":  "a has test://a/items/7",
		"test://b/items/42": "b has test://b/items/42",
	} {
		rr, err := h.ReadResource(ctx, uri, nil)
		if err != nil {
			t.Errorf("read %s: %v", uri, err)
			continue
		}
		if got := rr.Contents[0].Text; got != want {
			t.Errorf("read %s = %q, want %q", uri, got, want)
		}
	}
	_, err = h.ReadResource(ctx, "test://shared", nil)
	wantKind(t, err, ErrUnknownTool)
	_, err = h.ReadResource(ctx, "test://a/doc", nil)
	wantKind(t, err, ErrDenied)
	mu.Lock()
	if want := []string{"prompts/get b__greet", "resources/read test://b/items/42"}; !slices.Equal(approved, want) {
		t.Errorf("approved %v, want %v", approved, want)
	}
	mu.Unlock()

	cr, err := h.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "a__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "x"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cr.Completion.Values; !slices.Equal(got, []string{"a:greet:x"}) {
		t.Errorf("prompt completion = %v", got)
	}
	cr, err = h.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "test://b/items/{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "4"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cr.Completion.Values; !slices.Equal(got, []string{"b:test://b/items/{id}:4"}) {
		t.Errorf("resource completion = %v", got)
	}
}

// TestFeaturesChanged: a server's list_changed makes the next listing ask
// again, and is told to Trace; a subscribed resource's update too.
func TestFeaturesChanged(t *testing.T) {
	a := featureServer(t, "a")
	var mu sync.Mutex
	var events []string
	record := func(s string) {
		mu.Lock()
		events = append(events, s)
		mu.Unlock()
	}
	h := newHub(t, []Server{a.server("a")}, &Options{Trace: &Trace{
		PromptsChanged:   func(i ServerEvent) { record("prompts " + i.Server) },
		ResourcesChanged: func(i ServerEvent) { record("resources " + i.Server) },
		ResourceUpdated:  func(i ServerEvent) { record("updated " + i.Server + " " + i.URI) },
	}})
	ctx := context.Background()
	ps, err := h.ListPromptsFor(ctx, nil)
	if err != nil || ps.Len() != 2 {
		t.Fatalf("prompts: %v %v", promptNames(ps), err)
	}
	before := a.method("prompts/list")
	if ps, _ = h.ListPromptsFor(ctx, nil); a.method("prompts/list") != before || ps.Len() != 2 {
		t.Errorf("a second listing asked the server again")
	}
	a.AddPrompt(&mcp.Prompt{Name: "new"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	has := func(s string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(events, s)
		}
	}
	eventually(t, 10*time.Second, has("prompts a"), "PromptsChanged")
	if ps, _ = h.ListPromptsFor(ctx, nil); ps.Len() != 3 {
		t.Errorf("prompts after the change = %v", promptNames(ps))
	}
	a.AddResource(&mcp.Resource{Name: "more", URI: "test://a/more"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://a/more", Text: "more"}}}, nil
	})
	eventually(t, 10*time.Second, has("resources a"), "ResourcesChanged")
	rs, _ := h.ListResourcesFor(ctx, nil)
	if _, ok := rs.Lookup("test://a/more"); !ok {
		t.Errorf("resources after the change = %v", resourceURIs(rs))
	}

	if err := h.SubscribeResource(ctx, "test://a/doc", nil); err != nil {
		t.Fatal(err)
	}
	// On protocol 2026-07-28 the subscription is a stream the server
	// registers after Subscribe returns: updates are sent until one lands.
	updated := has("updated a test://a/doc")
	eventually(t, 10*time.Second, func() bool {
		a.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://a/doc"})
		return updated()
	}, "ResourceUpdated")
	if err := h.UnsubscribeResource(ctx, "test://a/doc", nil); err != nil {
		t.Fatal(err)
	}
	err = h.SubscribeResource(ctx, "test://nowhere", nil)
	wantKind(t, err, ErrUnknownTool)
}

// TestClientPrompts: a client keeps the prompts' own names.
func TestClientPrompts(t *testing.T) {
	a := featureServer(t, "a")
	cl := newClient(t, a.server("a"), nil)
	ps, err := cl.ListPromptsFor(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := promptNames(ps); !slices.Equal(got, []string{"a_only", "greet"}) {
		t.Errorf("prompts = %v", got)
	}
	res, err := cl.GetPrompt(context.Background(), "greet", map[string]string{"who": "me"}, nil)
	if err != nil || !strings.HasSuffix(res.Messages[0].Content.(*mcp.TextContent).Text, "greet me") {
		t.Errorf("greet = %v, %v", res, err)
	}
}

// TestReadCacheAcrossPrincipals: the SDK's session keeps a read its
// server hints fresh, by URI alone, and the pipeline decides every read
// before that cache: a principal the policy denies is refused, never
// answered with another's cached read; one it allows may be given it (the
// server, of identity shared, sees one client). Each caller gets its own
// copy: what one changes in its result, no later read sees.
func TestReadCacheAcrossPrincipals(t *testing.T) {
	a := newTestServer(t, "a") // its reads are hinted fresh for an hour
	a.AddResource(&mcp.Resource{Name: "doc", URI: "test://a/doc"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "a has " + req.Params.URI}}}, nil
	})
	h := newHub(t, []Server{a.server("a")}, &Options{Policy: NewPolicy(
		Deny("a/test://a/doc").When(Principal("bob")),
		Allow("*"),
	)})
	ctx := context.Background()
	first, err := h.ReadResource(ctx, "test://a/doc", &CallOptions{Principal: "alice"})
	if err != nil || first.TTLMs <= 0 {
		t.Fatalf("alice's read: %v (ttlMs %d: the test needs a hint)", err, first.TTLMs)
	}
	first.Contents[0].Text, first.CacheScope = "changed by alice's caller", "private"
	_, err = h.ReadResource(ctx, "test://a/doc", &CallOptions{Principal: "bob"})
	if !errors.Is(err, ErrDenied) {
		t.Errorf("bob's read: %v, want denied", err)
	}
	again, err := h.ReadResource(ctx, "test://a/doc", &CallOptions{Principal: "carol"})
	if err != nil || again.Contents[0].Text != "a has test://a/doc" || again.CacheScope != "public" {
		t.Errorf("carol's read: %v, %+v", err, again)
	}
	if n := a.method("resources/read"); n != 1 {
		t.Errorf("the server was read %d times, want once (the SDK's cache answered carol)", n)
	}
}
