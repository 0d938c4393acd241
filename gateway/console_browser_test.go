// The console in a real headless Chromium, in front of two conduit serve processes.

package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/internal/testenv"
)

const (
	consoleAdminToken = "alice-admin-token-0123456789"
	consoleUserToken  = "bob-user-token-0123456789abc"
)

// browser starts a headless Chromium with the flags a closed network
// needs, and returns its first tab's context.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := testenv.Binary(t, "chromium", "chromium")
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium did not start: %v", err)
	}
	return ctx
}

// tab opens a tab in the browser of ctx whose every request carries
// headers (none: anonymous).
func tab(t *testing.T, ctx context.Context, headers map[string]any) context.Context {
	t.Helper()
	tctx, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	if _, err := chromedp.Call(tctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if headers != nil {
		if _, err := chromedp.Call(tctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers(headers)}); err != nil {
			t.Fatal(err)
		}
	}
	return tctx
}

// do runs steps in a tab with a bound, failing the test with what.
func do(t *testing.T, tctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tctx, 60*time.Second)
	defer cancel()
	if err := swapped(func() error { return chromedp.Do(ctx, steps...) }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// get runs a in a tab with a bound and returns its value.
func get[T any](t *testing.T, tctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tctx, 60*time.Second)
	defer cancel()
	var v T
	err := swapped(func() (err error) {
		v, err = chromedp.Run(ctx, a)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// swapped runs f again when the page's live refresh replaced the node it
// found before it could use it. A person would look again; nothing was
// done to the stale node.
func swapped(f func() error) error {
	err := f()
	for range 5 {
		if err == nil || !strings.Contains(err.Error(), "No node with given id found") {
			return err
		}
		time.Sleep(100 * time.Millisecond)
		err = f()
	}
	return err
}

// shot saves a screenshot of the tab's page under docs/images, for the
// console's guide, when CONDUIT_CONSOLE_SHOTS is set: a test run leaves
// the tree as it found it.
func shot(t *testing.T, tctx context.Context, name string) {
	t.Helper()
	if os.Getenv("CONDUIT_CONSOLE_SHOTS") == "" {
		return
	}
	png := get(t, tctx, "screenshot "+name, chromedp.FullScreenshot(100))
	dir := filepath.Join(testenv.RepoRoot(), "docs", "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "console-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

type css = chromedp.CSS

// consoleFleet starts two conduit serve --console replicas that share one
// SQLite store, in front of server-everything, whose echo asks.
func consoleFleet(t *testing.T) (bin, storeURL string, replicas [2]*testenv.Daemon, addrs [2]string) {
	t.Helper()
	command, args := testenv.Everything(t)
	bin = testenv.BuildGo(t, "github.com/conduitmcp/conduit/cmd/conduit")
	dir := t.TempDir()
	storeURL = "sqlite://" + filepath.Join(dir, "store.db")
	server, _ := json.Marshal(map[string]any{"command": command, "args": args})
	config := filepath.Join(dir, "mcp.json")
	cfg := fmt.Sprintf(`{
	"mcpServers": {"everything": %s},
	"policy": [{"ask": ["everything/echo"]}, {"allow": ["*"]}],
	"serve": {
		"tokens": [{"principal": "alice", "env": "TOKEN_ALICE"}, {"principal": "bob", "env": "TOKEN_BOB"}],
		"admins": ["alice"],
		"approvals": "console",
		"store": %q,
		"limits": [{"principal": "*", "tool": "everything/*", "perMinute": 100}]
	}
}`, server, storeURL)
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"TOKEN_ALICE=" + consoleAdminToken, "TOKEN_BOB=" + consoleUserToken, "XDG_STATE_HOME=" + dir,
		"CONDUIT_STATE_KEY=" + strings.Repeat("k", 40)}
	for i := range replicas {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(testenv.FreePort(t)))
		replicas[i] = testenv.Start(t, bin, []string{"serve", "--config", config, "--http", addrs[i], "--console", "--approval-timeout", "90s"}, env, addrs[i])
	}
	return bin, storeURL, replicas, addrs
}

// callAsync calls the echo tool as bob on url, and sends the result.
func callAsync(t *testing.T, url, message string) <-chan *mcp.CallToolResult {
	t.Helper()
	return callNamed(t, url, "everything__echo", map[string]any{"message": message})
}

// callNamed calls the tool name with args as bob on url, and sends the
// result.
func callNamed(t *testing.T, url, name string, args map[string]any) <-chan *mcp.CallToolResult {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "bob", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: tokenTransport{token: consoleUserToken, base: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "call failed: " + err.Error()}}}
		}
		out <- res
	}()
	return out
}

func consoleText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func waitResult(t *testing.T, ch <-chan *mcp.CallToolResult) *mcp.CallToolResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("the client's call did not complete")
	}
	return nil
}

// trail runs conduit trail on the store and returns its records.
func trail(t *testing.T, bin, storeURL string) []gateway.AuditRecord {
	t.Helper()
	cmd := exec.Command(bin, "trail", "--store", storeURL, "--since", "1h")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("conduit trail: %v\n%s", err, out)
	}
	var recs []gateway.AuditRecord
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r gateway.AuditRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("conduit trail printed %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestConsoleBrowser drives the console in Chromium: a real MCP client's
// ask, held on one replica, is approved by a click on the other's console
// and runs once; a denial's reason reaches the client; an argument holding
// <script> is text; a non-admin and an anonymous caller are refused; the
// audit trail survives a restart of both replicas.
func TestConsoleBrowser(t *testing.T) {
	ctx := browser(t)
	bin, storeURL, replicas, addrs := consoleFleet(t)
	held, console := "http://"+addrs[0]+"/mcp", "http://"+addrs[1]+"/console/"
	admin := tab(t, ctx, map[string]any{"Authorization": "Bearer " + consoleAdminToken})
	t.Cleanup(func() {
		if t.Failed() {
			for i, d := range replicas {
				t.Logf("replica %d:\n%s", i, d.Output())
			}
		}
	})

	// An argument a page would run if it were not escaped.
	evil := `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">`
	first := callAsync(t, held, evil)
	do(t, admin, "the held call is listed on the other replica", chromedp.Navigate(console), chromedp.WaitVisible(css(`[data-approval-id]`)))
	args := get(t, admin, "the arguments", chromedp.Text(css(`[data-approval-id] pre.args`)))
	scripts := get(t, admin, "elements", chromedp.Evaluate[int](`document.querySelectorAll("#live script, #live img").length`))
	title := get(t, admin, "title", chromedp.Title())
	if !strings.Contains(args, `<script>document.title=\"pwned\"</script>`) || scripts != 0 || strings.Contains(title, "pwned") {
		t.Fatalf("the argument was not shown as text: args %q, %d script or img elements, title %q", args, scripts, title)
	}
	who := get(t, admin, "the approval's head", chromedp.Text(css(`[data-approval-id] .head`)))
	if !strings.Contains(who, "everything/echo") || !strings.Contains(who, "bob") {
		t.Fatalf("the approval shows %q", who)
	}
	shot(t, admin, "approvals")
	do(t, admin, "approve", chromedp.Click(css(`[data-approval-id] button[data-action="approve"]`)), chromedp.WaitVisible(css(`p.flash`)))
	r := waitResult(t, first)
	if r.IsError || !strings.Contains(consoleText(r), "Echo: <script>") {
		t.Fatalf("the approved call answered %v %q", r.IsError, consoleText(r))
	}

	// The page is open: the next ask appears by itself (server-sent events).
	second := callAsync(t, held, "drop the table")
	do(t, admin, "deny with a reason",
		chromedp.WaitVisible(css(`[data-approval-id]`)),
		chromedp.SendKeys(css(`[data-approval-id] input[name="reason"]`), "not on a Friday"),
		chromedp.Click(css(`[data-approval-id] button[data-action="deny"]`)),
		chromedp.WaitVisible(css(`p.flash`)),
	)
	r = waitResult(t, second)
	if !r.IsError || !strings.Contains(consoleText(r), "not on a Friday") {
		t.Fatalf("the denied call answered %v %q", r.IsError, consoleText(r))
	}

	do(t, admin, "the audit page", chromedp.Navigate(console+"audit"), chromedp.WaitVisible(css(`table.audit`)))
	shot(t, admin, "audit")
	do(t, admin, "the now page", chromedp.Navigate(console+"now"), chromedp.WaitVisible(css(`.servers`)))
	shot(t, admin, "now")

	// A non-admin's token is refused, and so is a caller without one.
	user := tab(t, ctx, map[string]any{"Authorization": "Bearer " + consoleUserToken})
	do(t, user, "a non-admin", chromedp.Navigate(console), chromedp.WaitVisible(css(`main`)))
	body := get(t, user, "a non-admin's page", chromedp.Text(css(`main`)))
	if !strings.Contains(body, "Not an admin") || strings.Contains(body, "Approvals") {
		t.Fatalf("a non-admin sees %q", body)
	}
	anon := tab(t, ctx, nil)
	do(t, anon, "an anonymous caller", chromedp.Navigate(console), chromedp.WaitVisible(css(`#token`)))
	if loc := get(t, anon, "location", chromedp.Location()); !strings.HasSuffix(loc, "/console/signin") {
		t.Fatalf("an anonymous caller is at %s", loc)
	}
	shot(t, anon, "signin")
	for _, c := range []struct{ token, path string }{{"", "events"}, {consoleUserToken, "events"}, {consoleUserToken, ""}} {
		req, _ := http.NewRequest(http.MethodGet, console+c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			t.Fatalf("GET /console/%s with token %q: %s", c.path, c.token, resp.Status)
		}
	}

	// The audit trail survives both replicas' restart, and shows the
	// approved call once, the admin who approved it, and the denial.
	for _, d := range replicas {
		d.Stop()
	}
	for _, d := range replicas {
		d.Start()
	}
	recs := trail(t, bin, storeURL)
	var ran, denied, actions int
	for _, r := range recs {
		switch {
		case r.Kind == "call" && r.Tool == "echo" && r.Outcome == "ok":
			ran++
			if r.Approver != "console:alice" || r.Decision != "ask" || !strings.HasPrefix(r.ArgsDigest, "sha256:") {
				t.Errorf("the approved call's record: %+v", r)
			}
		case r.Kind == "call" && r.Tool == "echo":
			denied++
		case r.Kind == "console" && r.Principal == "alice":
			actions++
		}
	}
	if ran != 1 || denied != 1 || actions < 2 {
		t.Fatalf("the trail holds %d approved echo calls (want 1), %d others (want 1), %d console actions (want 2 or more):\n%+v", ran, denied, actions, recs)
	}
	do(t, admin, "the audit page after a restart", chromedp.Navigate(console+"audit?principal=bob"), chromedp.WaitVisible(css(`table.audit`)))
	if body = get(t, admin, "the audit table", chromedp.Text(css(`table.audit`))); !strings.Contains(body, "console:alice") {
		t.Fatalf("the audit page after a restart shows %q", body)
	}
}
