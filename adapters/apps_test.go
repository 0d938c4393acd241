package adapters_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/apps"
	"github.com/conduitmcp/conduit/skills"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const appView = "ui://charts/view.html"

// appServer is an in-process SDK server of an MCP App: a tool the model
// may call that shows the app, one only the app may call, and the app's
// ui:// resource. It counts the calls of the app-only tool.
func appServer(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var appCalls atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "charts", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	answer := func(text string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if text == "refreshed" {
				appCalls.Add(1)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		}
	}
	srv.AddTool(&mcp.Tool{Name: "show_chart", Description: "Show a chart.", InputSchema: obj,
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": appView, "visibility": []any{"model", "app"}}}}, answer("shown"))
	srv.AddTool(&mcp.Tool{Name: "refresh_chart", Description: "Refresh the chart's data.", InputSchema: obj,
		Meta: mcp.Meta{"ui": map[string]any{"resourceUri": appView, "visibility": []any{"app"}}}}, answer("refreshed"))
	srv.AddTool(&mcp.Tool{Name: "plain", Description: "A tool with no app.", InputSchema: obj}, answer("plain"))
	srv.AddResource(&mcp.Resource{URI: appView, Name: "view", MIMEType: "text/html;profile=mcp-app"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: appView, MIMEType: "text/html;profile=mcp-app", Text: "<html>chart</html>"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL, &appCalls
}

// TestAppOnlyToolsNeverOfferedToModel: with no option set, a tool only
// an MCP App may call is absent from every provider's listing, and a
// model's call of it is refused as unknown, nothing sent. The tool that
// shows the app is offered; a host asking for app tools gets both with
// their _meta.ui.
func TestAppOnlyToolsNeverOfferedToModel(t *testing.T) {
	url, appCalls := appServer(t)
	hub, err := conduit.NewHub(t.Context(), []conduit.Server{{ID: "charts", URL: url}}, &conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	ctx := t.Context()
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			l, err := adapters.Tools(ctx, hub, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(l.Tools)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), "refresh_chart") {
				t.Fatalf("the app-only tool is offered to the model: %s", data)
			}
			if !strings.Contains(string(data), "show_chart") || !strings.Contains(string(data), "plain") {
				t.Fatalf("the model's tools are missing: %s", data)
			}
			resp := adaptertest.FakeOf(p).Response("", toolcall.Raw{ID: "c1", Name: "charts__refresh_chart", Args: map[string]any{}})
			ex, err := adapters.ExecuteToolCalls(ctx, hub, p, resp, nil)
			if err != nil {
				t.Fatal(err)
			}
			var ce *conduit.Error
			if len(ex.Errors) != 1 || !errors.As(ex.Errors[0], &ce) || ce.Kind != conduit.ErrUnknownTool {
				t.Fatalf("the model's call of the app-only tool: %v", ex.Errors)
			}
		})
	}
	if n := appCalls.Load(); n != 0 {
		t.Fatalf("the app-only tool was called %d times by a model", n)
	}
	ts, err := hub.ListToolsFor(ctx, &conduit.ListOptions{AppTools: true})
	if err != nil {
		t.Fatal(err)
	}
	tool, ok := ts.Lookup("charts__refresh_chart")
	if !ok || !apps.AppOnly(tool.Tool) || apps.Resource(tool.Tool) != appView {
		t.Fatalf("a host's listing: %v %v", tool, ok)
	}
	model, err := hub.ListToolsFor(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	skipped := false
	for _, s := range model.Skipped() {
		skipped = skipped || (s.Tool == "refresh_chart" && s.Reason == conduit.SkipAppOnly)
	}
	if !skipped {
		t.Fatalf("the model's listing does not say why refresh_chart is left out: %v", model.Skipped())
	}
}

// TestAppResourceGoverned: a host fetches an app's ui:// resource with
// the hub's governed resources/read, which the policy can deny.
func TestAppResourceGoverned(t *testing.T) {
	url, _ := appServer(t)
	ctx := t.Context()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "charts", URL: url}}, &conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	res, err := hub.ReadResource(ctx, appView, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || res.Contents[0].Text != "<html>chart</html>" {
		t.Fatalf("the app's resource: %+v", res.Contents)
	}
	denied, err := conduit.NewHub(ctx, []conduit.Server{{ID: "charts", URL: url}},
		&conduit.Options{Policy: conduit.NewPolicy(conduit.Deny("charts/ui://*"), conduit.Allow("*"))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { denied.Close() })
	if _, err := denied.ReadResource(ctx, appView, nil); !errors.Is(err, conduit.ErrDenied) {
		t.Fatalf("a denied app resource: %v", err)
	}
}

// TestSkillMessage: a loaded skill is a user message of each
// provider's conversation, which its fake reads back as the
// conversation's text.
func TestSkillMessage(t *testing.T) {
	ls := &skills.Loaded{Skill: &skills.Skill{Server: "docs", Name: "pdf-processing"}, Instructions: "---\nname: pdf-processing\n---\nUse pdftk.\n"}
	for _, p := range adapters.Providers() {
		msg, err := adapters.SkillMessage(p, ls)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		want, _ := json.Marshal(p.Wire().Prompt("x"))
		got, _ := json.Marshal(msg)
		if !strings.Contains(string(got), "Use pdftk.") || !strings.Contains(string(got), "pdf-processing (from server docs)") {
			t.Fatalf("%s: %s", p, got)
		}
		// The same shape as the provider's own user message.
		var a, b map[string]any
		json.Unmarshal(want, &a)
		json.Unmarshal(got, &b)
		if len(a) != len(b) || a["role"] != b["role"] {
			t.Fatalf("%s: %s is not shaped as %s", p, got, want)
		}
	}
	if _, err := adapters.SkillMessage(adapters.Anthropic, nil); err == nil {
		t.Fatal("no skill, no error")
	}
}
