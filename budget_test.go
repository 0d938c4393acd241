package conduit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/internal/modelresult"
	"github.com/conduitmcp/conduit/internal/tokens"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCutForModel(t *testing.T) {
	text := strings.Repeat("a line of the log, with a few words\n", 4000)
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAAEElEQVR4nGL6z8AACAAA//8DCQECWLbVUAAAAABJRU5ErkJggg==")
	res := &mcp.CallToolResult{
		Content: []mcp.Content{
			&mcp.TextContent{Text: "The log:"},
			&mcp.ImageContent{MIMEType: "image/png", Data: png},
			&mcp.TextContent{Text: text},
			&mcp.ResourceLink{URI: "file:///log.txt", Name: "log"},
		},
		StructuredContent: map[string]any{"log": text},
	}
	before, _ := json.Marshal(res)
	out, n := modelresult.Cut(res, 2000)
	if after, _ := json.Marshal(res); string(after) != string(before) {
		t.Fatal("res was modified")
	}
	if n < 30000 || len(out.Content) != 4 || out.StructuredContent == nil {
		t.Fatalf("%d tokens, %d blocks", n, len(out.Content))
	}
	kept := out.Content[2].(*mcp.TextContent).Text
	notice := out.Content[3].(*mcp.TextContent).Text
	if !strings.HasPrefix(text, kept) || !strings.HasSuffix(kept, "\n") || !strings.HasPrefix(notice, "[conduit: the result was cut to fit its budget of 2000 tokens: kept the first ") {
		t.Fatalf("kept %.60q, notice %q", kept, notice)
	}
	// What is kept, images by the largest rule, is within the budget.
	mt, _ := modelresult.ImageType("image/png", png)
	if used := tokens.Text("The log:") + tokens.AnyImage(tokens.ImageSize(mt, png)) + tokens.Text(kept); used > 2000 || used < 1900 {
		t.Fatalf("%d tokens kept", used)
	}
	// Within the budget, or without one, res itself.
	if o, _ := modelresult.Cut(res, n); o != res {
		t.Fatal("within the budget")
	}
	if o, _ := modelresult.Cut(res, 0); o != res {
		t.Fatal("no budget")
	}
	// A JSON text is cut into valid JSON; an embedded resource's text is
	// cut in its block.
	rows := make([]any, 3000)
	for i := range rows {
		rows[i] = map[string]any{"n": i}
	}
	data, _ := json.Marshal(rows)
	out, _ = modelresult.Cut(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}, 100)
	if c := out.Content[0].(*mcp.TextContent).Text; !json.Valid([]byte(c)) || !strings.Contains(out.Content[1].(*mcp.TextContent).Text, "The JSON kept is valid") {
		t.Fatalf("JSON %q", c)
	}
	out, _ = modelresult.Cut(&mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", Text: text}}}}, 100)
	if r := out.Content[0].(*mcp.EmbeddedResource).Resource; r.URI != "file:///a" || !strings.HasPrefix(text, r.Text) || len(r.Text) == 0 || len(r.Text) > 1000 {
		t.Fatalf("resource %+v", r)
	}
	// Nothing fits: the notice alone.
	out, _ = modelresult.Cut(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: png}}}, 10)
	if len(out.Content) != 1 || !out.IsError || !strings.Contains(out.Content[0].(*mcp.TextContent).Text, "none of it could be kept") {
		t.Fatalf("nothing fits: %+v", out.Content)
	}
}

func TestToolSetWith(t *testing.T) {
	ts := NewToolSet(&ToolSetOptions{Namespace: true},
		ServerTools{Server: "a", Tools: []*mcp.Tool{{Name: "x"}}, MaxResultTokens: 700},
		ServerTools{Server: "down", Down: context.DeadlineExceeded})
	if tool, _ := ts.Lookup("a__x"); tool.MaxResultTokens != 700 {
		t.Fatalf("the server's budget: %d", tool.MaxResultTokens)
	}
	own := &Tool{Tool: &mcp.Tool{Name: "read"}, Exposed: "read", Server: "conduit"}
	clash := &Tool{Tool: &mcp.Tool{Name: "x"}, Exposed: "a__x", Server: "other"}
	with := ts.With(own, clash, nil)
	var names []string
	for tool := range with.All() {
		names = append(names, tool.Exposed)
	}
	if !reflect.DeepEqual(names, []string{"a__x", "read"}) || ts.Len() != 1 {
		t.Fatalf("names %v, the set's own %d", names, ts.Len())
	}
	if !reflect.DeepEqual(with.Warnings(), ts.Warnings()) || len(with.Warnings()) != 1 {
		t.Fatalf("warnings %v", with.Warnings())
	}
	if s := with.Skipped(); len(s) != 2 || s[1].Reason != SkipCollision || s[1].Server != "other" {
		t.Fatalf("skipped %+v", s)
	}
	// A call of a down server's tool is still unavailable, not unknown.
	if _, _, err := with.Resolve("down__y", nil); !isKind(err, ErrUnavailable) {
		t.Fatalf("a down server's tool: %v", err)
	}
}

func isKind(err error, k *Error) bool {
	var e *Error
	return errors.As(err, &e) && e.String() == k.String()
}

// TestServerBudgetReachesTools: a hub's tools carry their server's
// budget.
func TestServerBudgetReachesTools(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hub, err := NewHub(ctx, []Server{{ID: "s", Transport: ct, MaxResultTokens: 1234}}, &Options{Policy: AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	ts, err := hub.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tool, ok := ts.Lookup("s__t"); !ok || tool.MaxResultTokens != 1234 {
		t.Fatalf("%+v", tool)
	}
}
