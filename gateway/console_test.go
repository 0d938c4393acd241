// The console's decisions, refusals and timeouts, over HTTP without a browser.

package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// consoleReplica is a gateway serving HTTP with the console, its shell
// tool counting its runs.
type consoleReplica struct {
	g    *gateway.Gateway
	base string // http://host:port
}

func newConsoleReplica(t *testing.T, st store.Store, runs *atomic.Int32, wait time.Duration, onAudit ...func(context.Context, gateway.AuditRecord)) *consoleReplica {
	t.Helper()
	return newConsoleReplicaWith(t, st, runs, wait, func(o *gateway.Options) {
		if len(onAudit) > 0 {
			o.Console.OnAudit = onAudit[0]
		}
	})
}

// newConsoleReplicaWith is newConsoleReplica with its options changed by
// with before the gateway starts.
func newConsoleReplicaWith(t *testing.T, st store.Store, runs *atomic.Int32, wait time.Duration, with func(*gateway.Options)) *consoleReplica {
	t.Helper()
	shell := newUpstream(t, "shell")
	shell.tool("run", "Run a command.", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		runs.Add(1)
		return text("ran " + string(req.Params.Arguments)), nil
	})
	o := &gateway.Options{
		Hub:             &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("shell/*")), Store: st},
		ApprovalTimeout: wait,
		StateKeys:       [][]byte{[]byte(strings.Repeat("s", 40))},
		Console:         &gateway.ConsoleOptions{Admins: []string{"alice", "carol"}, Approvals: true},
	}
	with(o)
	g := newGateway(t, []conduit.Server{shell.server("shell")}, o)
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- g.ListenAndServe(ctx, "127.0.0.1:0", &gateway.HTTPOptions{Tokens: map[string]string{
			consoleAdminToken: "alice", consoleUserToken: "bob", "carol-admin-token-0123456789": "carol"}}, func(a net.Addr) { addr <- a })
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case a := <-addr:
		return &consoleReplica{g: g, base: "http://" + a.String()}
	case err := <-done:
		t.Fatal(err)
	}
	return nil
}

var (
	approvalID = regexp.MustCompile(`data-approval-id="([A-Z0-9]+)"`)
	csrfField  = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

// page GETs a console page with token and returns its status and body.
func (r *consoleReplica) page(t *testing.T, token, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.base+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// post POSTs form to path with token and origin ("" for none), and
// returns the status and the redirect's location.
func (r *consoleReplica) post(t *testing.T, token, origin, path string, form url.Values) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+token)
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.QueryUnescape(resp.Header.Get("Location"))
	return resp.StatusCode, loc
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// waitPending waits until r's console lists an approval, and returns its
// id and the admin's CSRF token.
func (r *consoleReplica) waitPending(t *testing.T, token string) (id, csrf string) {
	t.Helper()
	var body string
	eventually(t, "an approval is listed", func() bool {
		_, body = r.page(t, token, "/console/")
		return approvalID.MatchString(body)
	})
	return approvalID.FindStringSubmatch(body)[1], csrfField.FindStringSubmatch(body)[1]
}

// callShell calls shell__run as bob on r's gateway, and sends the result.
func callShell(t *testing.T, r *consoleReplica) <-chan *mcp.CallToolResult {
	return callNamed(t, r.base+"/mcp", "shell__run", map[string]any{"cmd": "ls"})
}

// TestConsoleDecidedOnce: an approve on one replica and a deny on the
// other, at once, make one decision; the call runs at most once, as the
// winner decided.
func TestConsoleDecidedOnce(t *testing.T) {
	for range 3 {
		st := store.NewMemory()
		var runs atomic.Int32
		a, b := newConsoleReplica(t, st, &runs, time.Minute), newConsoleReplica(t, st, &runs, time.Minute)
		res := callShell(t, a)
		id, csrfA := a.waitPending(t, consoleAdminToken)
		_, csrfB := b.waitPending(t, "carol-admin-token-0123456789")
		var wg sync.WaitGroup
		var locA, locB string
		wg.Go(func() {
			_, locA = a.post(t, consoleAdminToken, a.base, "/console/approvals/"+id, url.Values{"csrf": {csrfA}, "action": {"approve"}})
		})
		wg.Go(func() {
			_, locB = b.post(t, "carol-admin-token-0123456789", b.base, "/console/approvals/"+id, url.Values{"csrf": {csrfB}, "action": {"deny"}, "reason": {"no"}})
		})
		wg.Wait()
		approved, denied := strings.Contains(locA, "Approved"), strings.Contains(locB, "Denied")
		if approved == denied {
			t.Fatalf("approve answered %q, deny %q: want exactly one decision", locA, locB)
		}
		r := waitResult(t, res)
		if approved != !r.IsError || int(runs.Load()) != map[bool]int{true: 1, false: 0}[approved] {
			t.Fatalf("approved %v: the call answered %v %q and ran %d times", approved, r.IsError, consoleText(r), runs.Load())
		}
	}
}

// TestConsoleRefusals: a POST without the admin's own CSRF token, or from
// another origin, decides nothing; a non-admin and an anonymous caller
// are refused; the call then times out, saying so.
func TestConsoleRefusals(t *testing.T) {
	var runs atomic.Int32
	r := newConsoleReplica(t, store.NewMemory(), &runs, 3*time.Second)
	res := callShell(t, r)
	id, csrf := r.waitPending(t, consoleAdminToken)
	_, carolCSRF := r.waitPending(t, "carol-admin-token-0123456789")
	path := "/console/approvals/" + id
	for name, c := range map[string]struct {
		token, origin string
		form          url.Values
	}{
		"no csrf":            {consoleAdminToken, r.base, url.Values{"action": {"approve"}}},
		"another's csrf":     {consoleAdminToken, r.base, url.Values{"csrf": {carolCSRF}, "action": {"approve"}}},
		"another origin":     {consoleAdminToken, "https://evil.example", url.Values{"csrf": {csrf}, "action": {"approve"}}},
		"a non-admin":        {consoleUserToken, r.base, url.Values{"csrf": {csrf}, "action": {"approve"}}},
		"a forged null site": {consoleAdminToken, "null", url.Values{"csrf": {csrf}, "action": {"approve"}}},
	} {
		if code, _ := r.post(t, c.token, c.origin, path, c.form); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	if code, _ := r.page(t, consoleUserToken, "/console/audit"); code != http.StatusForbidden {
		t.Errorf("a non-admin's audit page: %d", code)
	}
	if code, _ := r.page(t, "", "/console/"); code != http.StatusSeeOther {
		t.Errorf("an anonymous caller: %d, want a redirect to the sign-in", code)
	}
	got := waitResult(t, res)
	if !got.IsError || !strings.Contains(consoleText(got), "no admin decided within 3s") || runs.Load() != 0 {
		t.Fatalf("the undecided call answered %v %q, ran %d times", got.IsError, consoleText(got), runs.Load())
	}
	// The console's header promises: scripts from itself only.
	req, _ := http.NewRequest(http.MethodGet, r.base+"/console/", nil)
	req.Header.Set("Authorization", "Bearer "+consoleAdminToken)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

// TestConsolePattern: approving "for an hour" lets the principal's next
// calls of the tool through without asking, until it is revoked.
func TestConsolePattern(t *testing.T) {
	var runs atomic.Int32
	var mu sync.Mutex
	var audited []gateway.AuditRecord
	r := newConsoleReplica(t, store.NewMemory(), &runs, time.Minute, func(_ context.Context, rec gateway.AuditRecord) {
		mu.Lock()
		audited = append(audited, rec)
		mu.Unlock()
	})
	res := callShell(t, r)
	id, csrf := r.waitPending(t, consoleAdminToken)
	if code, loc := r.post(t, consoleAdminToken, r.base, "/console/approvals/"+id, url.Values{"csrf": {csrf}, "action": {"approve"}, "for": {"1h"}}); code != http.StatusSeeOther || !strings.Contains(loc, "Allowed for 1h") {
		t.Fatalf("approve for an hour: %d %q", code, loc)
	}
	waitResult(t, res)
	if got := waitResult(t, callShell(t, r)); got.IsError || runs.Load() != 2 {
		t.Fatalf("a call under the pattern answered %v %q, %d runs", got.IsError, consoleText(got), runs.Load())
	}
	_, body := r.page(t, consoleAdminToken, "/console/")
	pat := regexp.MustCompile(`data-pattern-id="([A-Z0-9]+)"`).FindStringSubmatch(body)
	if pat == nil {
		t.Fatalf("the pattern is not shown:\n%s", body)
	}
	if code, _ := r.post(t, consoleAdminToken, r.base, "/console/patterns/"+pat[1]+"/revoke", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther {
		t.Fatalf("revoke: %d", code)
	}
	callShell(t, r)
	r.waitPending(t, consoleAdminToken) // asks again
	// OnAudit saw what the trail kept: the approved call, by the console.
	mu.Lock()
	defer mu.Unlock()
	var call bool
	for _, rec := range audited {
		call = call || (rec.Kind == "call" && rec.Tool == "run" && strings.HasPrefix(rec.Approver, "console:"))
	}
	if !call {
		t.Errorf("OnAudit got no approved call of shell/run: %+v", audited)
	}
}

// TestConsoleHeldCallAsTask: a client that negotiated tasks (conduit's own,
// on 2026-07-28) gets a task for a call held for an admin, so its request
// is not held. The admin approves; the task completes; the call ran once.
func TestConsoleHeldCallAsTask(t *testing.T) {
	var runs atomic.Int32
	r := newConsoleReplicaWith(t, store.NewMemory(), &runs, time.Minute, func(o *gateway.Options) {
		o.Tasks = &gateway.TaskOptions{After: 100 * time.Millisecond, PollInterval: 50 * time.Millisecond}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "gw", URL: r.base + "/mcp",
		Headers: map[string]string{"Authorization": "Bearer " + consoleUserToken}}}, &conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := hub.CallTool(ctx, "gw__shell__run", map[string]any{"cmd": "ls"}, nil)
		done <- answer{res, err}
	}()
	id, csrf := r.waitPending(t, consoleAdminToken)
	// The admin decides well after the call became a task.
	time.Sleep(time.Second)
	if code, _ := r.post(t, consoleAdminToken, r.base, "/console/approvals/"+id, url.Values{"csrf": {csrf}, "action": {"approve"}}); code != http.StatusSeeOther {
		t.Fatalf("approve: %d", code)
	}
	a := <-done
	if a.err != nil || a.res.IsError {
		t.Fatalf("the held call: %v, %+v", a.err, a.res)
	}
	if tid, _ := a.res.Meta[conduit.MetaTaskID].(string); tid == "" {
		t.Errorf("the held call was answered without a task: %+v", a.res.Meta)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the call ran %d times, want once", n)
	}
}
