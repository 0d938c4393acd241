package gateway_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// conduit serve --code-mode: a host is offered run_code alone; its code's
// calls meet the principal's policy, a denied one is never sent, and what
// the code read taints the principal's later calls.
func TestGatewayCodeMode(t *testing.T) {
	var deletes, writes atomic.Int32
	notes := newUpstream(t, "notes").
		tool("read", "Reads the notes.", echo("notes: ")).
		tool("delete", "Deletes a note.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			deletes.Add(1)
			return text("deleted"), nil
		}).
		tool("write", "Writes a note.", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			writes.Add(1)
			return text("written"), nil
		})
	web := newUpstream(t, "web").tool("fetch", "Fetches a page.", echo("page: "))
	g := newGateway(t, []conduit.Server{notes.server("notes"), web.server("web")}, &gateway.Options{
		Hub: &conduit.Options{Policy: conduit.NewPolicy(
			conduit.Ask("notes/delete"),
			conduit.Deny("notes/write").When(conduit.Tainted("web")),
			conduit.Allow("*"))},
		CodeMode: gateway.CodeModeOptions{On: true},
	})
	cs, _ := connect(t, g, "alice", nil)
	ctx := context.Background()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lt.Tools) != 1 || lt.Tools[0].Name != "run_code" || !strings.Contains(lt.Tools[0].Description, "declare const notes") {
		t.Fatalf("listed %v", lt.Tools)
	}
	code := `const r = await notes.read({});
let del = "sent"; try { await notes.delete({id: 1}) } catch (e) { del = e.message }
await web.fetch({url: "x"});
let w = "sent"; try { await notes.write({text: "y"}) } catch (e) { w = e.message }
return {r, del, w}`
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatal(err)
	}
	out := resultText(res)
	if res.IsError || !strings.Contains(out, "notes: ") || strings.Contains(out, `"del":"sent"`) || strings.Contains(out, `"w":"sent"`) {
		t.Fatalf("answer %s", out)
	}
	if deletes.Load() != 0 || writes.Load() != 0 {
		t.Fatalf("refused calls were sent: %d deletes, %d writes", deletes.Load(), writes.Load())
	}
	// The principal's taint now holds web: a later run's write is denied.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"code": `try { await notes.write({text: "z"}); return "sent" } catch (e) { return e.message }`}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(resultText(res), `"sent"`) || writes.Load() != 0 {
		t.Fatalf("the taint from the first run was lost: %s", resultText(res))
	}
}
