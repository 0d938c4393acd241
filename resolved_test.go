// Tests of ResolvedCaller and of the one copy of a call's arguments.
package conduit

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call the caller resolved runs as CallTool's does, on the offered
// definition: a tool of the same name that the set does not hold (made by
// hand, or of another listing) is refused unsent.
func TestCallResolved(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	h := newHub(t, []Server{srv.server("s")}, nil)
	ctx := context.Background()
	ts, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tool, args, err := ts.Resolve("s__t", `{"a":1}`)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.ResolvedCaller(h)(ctx, tool, args, &CallOptions{ToolSet: ts})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(res); !strings.Contains(got, `"a":1`) {
		t.Fatalf("result %q", got)
	}
	// Without a ToolSet, the tool must be the current listing's.
	if _, err := h.ResolvedCaller(h)(ctx, tool, args, nil); err != nil {
		t.Fatal(err)
	}
	forged := &Tool{Tool: &mcp.Tool{Name: "t"}, Exposed: "s__t", Server: "s"}
	_, err = h.ResolvedCaller(h)(ctx, forged, args, &CallOptions{ToolSet: ts})
	wantKind(t, err, ErrUnknownTool)
	_, err = h.ResolvedCaller(h)(ctx, nil, args, &CallOptions{ToolSet: ts})
	wantKind(t, err, ErrUnknownTool)
	if n := srv.called("t"); n != 2 {
		t.Fatalf("the server got %d calls, want 2", n)
	}
}

// A before-hook's edit of a nested value reaches the server, never the
// caller's map: the pipeline's one copy is deep.
func TestHookEditStaysInCall(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	h := newHub(t, []Server{srv.server("s")}, &Options{Hooks: []Hook{{
		Name: "rewrite",
		Before: func(_ context.Context, c *Call) error {
			c.Args["o"].(map[string]any)["k"] = "hook"
			return nil
		},
	}}})
	ctx := context.Background()
	ts, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"CallTool", "CallResolved"} {
		t.Run(name, func(t *testing.T) {
			args := map[string]any{"o": map[string]any{"k": "model"}}
			var res *mcp.CallToolResult
			var err error
			if name == "CallTool" {
				res, err = h.CallTool(ctx, "s__t", args, &CallOptions{ToolSet: ts})
			} else {
				tool, _ := ts.Lookup("s__t")
				res, err = h.ResolvedCaller(h)(ctx, tool, args, &CallOptions{ToolSet: ts})
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(res); !strings.Contains(got, `"k":"hook"`) {
				t.Fatalf("the server got %q, not the hook's edit", got)
			}
			if got := args["o"].(map[string]any)["k"]; got != "model" {
				t.Fatalf("the caller's map holds %v after the hook", got)
			}
		})
	}
}

// embedded wraps a hub and changes its CallTool, as a program may.
type embedded struct{ *Hub }

// A type that embeds a Hub gets no resolved caller for itself, so that a
// caller that asks (package adapters) uses the wrapper's CallTool.
func TestResolvedCallerOwnerOnly(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	h := newHub(t, []Server{srv.server("s")}, nil)
	w := embedded{h}
	if w.ResolvedCaller(w) != nil {
		t.Fatal("a wrapper of the hub got a resolved caller")
	}
	if h.ResolvedCaller(nil) != nil {
		t.Fatal("no source got a resolved caller")
	}
	if w.ResolvedCaller(h) == nil || h.ResolvedCaller(h) == nil {
		t.Fatal("the hub itself got no resolved caller")
	}
	cl := newClient(t, srv.server("s"), nil)
	if cl.ResolvedCaller(cl) == nil || cl.ResolvedCaller(h) != nil {
		t.Fatal("a client's resolved caller is not its own")
	}
}
