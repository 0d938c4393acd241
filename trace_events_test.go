package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type spanKey struct{}

// spanOf is the value a test's CallStart or ListStart put in ctx.
func spanOf(ctx context.Context) string {
	if ctx == nil {
		return "<nil ctx>"
	}
	s, _ := ctx.Value(spanKey{}).(string)
	return s
}

// eventTrace records the events of every Trace field, each with the value
// its context carries, and gives each call a context of its own.
func eventTrace(rec *recorder) *Trace {
	return &Trace{
		CallStart: func(i CallStartInfo) context.Context {
			rec.add("start %s (id %s)", i.Call.Exposed, i.Call.ID)
			return context.WithValue(i.Context, spanKey{}, "call "+i.Call.ID)
		},
		Decided: func(i StepInfo) {
			rec.add("decided %s %v [%s]", i.Call.Exposed, i.Decision, spanOf(i.Context))
		},
		Approved: func(i StepInfo) {
			rec.add("approved %s allow=%v halt=%v rule=%q [%s]", i.Call.Exposed, i.Approval.Allow, i.Approval.Halt, i.Rule, spanOf(i.Context))
		},
		HookDenied: func(i StepInfo) {
			rec.add("hook %s denied %s after=%v: %v [%s]", i.Hook, i.Call.Exposed, i.After, i.Err, spanOf(i.Context))
		},
		ValidationFailed: func(i StepInfo) {
			rec.add("invalid %s [%s]", i.Call.Exposed, spanOf(i.Context))
		},
		RequestMeta: func(i RequestMetaInfo) map[string]any {
			rec.add("meta %s %s [%s]", i.Method, i.Server, spanOf(i.Context))
			return map[string]any{"traceparent": spanOf(i.Context), "shared": "trace's"}
		},
		CallDone: func(i CallDoneInfo) {
			var kind string
			if e := (*Error)(nil); errors.As(i.Err, &e) {
				kind = e.Kind.String()
			}
			rec.add("done %s tool=%s err=%s sent=%v [%s]", i.Call.Exposed, i.Call.Tool, kind, i.Request != nil, spanOf(i.Context))
		},
	}
}

// TestTraceCallEvents follows calls through every step the Trace reports,
// and checks that the context CallStart returned is the call's: every
// event, the approver, the hooks and the request's _meta get it.
func TestTraceCallEvents(t *testing.T) {
	rec := &recorder{}
	srv := newTestServer(t, "s").echoTools("read", "write", "drop", "secret")
	srv.AddTool(&mcp.Tool{Name: "typed", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return textResult("ok"), nil })
	h := newHub(t, []Server{srv.server("s")}, &Options{Policy: NewPolicy(Deny("s/drop"), Ask("s/write", "s/secret"), Allow("s/*")),
		Validate: true,
		Approver: func(ctx context.Context, req ApprovalRequest) Approval {
			rec.add("approver sees [%s]", spanOf(ctx))
			if req.Call.Tool == "secret" {
				return RejectAndHalt("not now")
			}
			return Approve()
		},
		Hooks: []Hook{{
			Name: "guard",
			Before: func(ctx context.Context, c *Call) error {
				rec.add("before sees [%s]", spanOf(ctx))
				if c.Args["deny"] == true {
					return errors.New("refused")
				}
				return nil
			},
			After: func(ctx context.Context, c *Call, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
				if c.Args["withhold"] == true {
					return nil, errors.New("withheld")
				}
				return nil, nil
			},
		}},
		Trace: eventTrace(rec)})
	ctx := context.Background()
	ts, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	call := func(id, name string, args map[string]any, meta mcp.Meta) {
		rec.mu.Lock()
		rec.events = nil
		rec.mu.Unlock()
		_, _ = h.CallTool(ctx, name, args, &CallOptions{ToolSet: ts, ID: id, Meta: meta})
	}
	for _, c := range []struct {
		id, name string
		args     map[string]any
		want     []string
	}{
		{"1", "s__read", map[string]any{}, []string{
			"start s__read (id 1)",
			"decided s__read allow [call 1]",
			"before sees [call 1]",
			"meta tools/call s [call 1]",
			"done s__read tool=read err= sent=true [call 1]",
		}},
		{"2", "s__write", map[string]any{}, []string{
			"start s__write (id 2)",
			"decided s__write ask [call 2]",
			"approver sees [call 2]",
			`approved s__write allow=true halt=false rule="ask s/write,s/secret" [call 2]`,
			"before sees [call 2]",
			"meta tools/call s [call 2]",
			"done s__write tool=write err= sent=true [call 2]",
		}},
		{"3", "s__secret", map[string]any{}, []string{
			"start s__secret (id 3)",
			"decided s__secret ask [call 3]",
			"approver sees [call 3]",
			`approved s__secret allow=false halt=true rule="ask s/write,s/secret" [call 3]`,
			"done s__secret tool=secret err=denied sent=false [call 3]",
		}},
		{"4", "s__drop", map[string]any{}, []string{
			"start s__drop (id 4)",
			"decided s__drop deny [call 4]",
			"done s__drop tool=drop err=denied sent=false [call 4]",
		}},
		{"5", "s__read", map[string]any{"deny": true}, []string{
			"start s__read (id 5)",
			"decided s__read allow [call 5]",
			"before sees [call 5]",
			"hook guard denied s__read after=false: refused [call 5]",
			"done s__read tool=read err=denied sent=false [call 5]",
		}},
		{"6", "s__read", map[string]any{"withhold": true}, []string{
			"start s__read (id 6)",
			"decided s__read allow [call 6]",
			"before sees [call 6]",
			"meta tools/call s [call 6]",
			"hook guard denied s__read after=true: withheld [call 6]",
			"done s__read tool=read err=denied sent=true [call 6]",
		}},
		{"7", "s__typed", map[string]any{"n": "seven"}, []string{
			"start s__typed (id 7)",
			"decided s__typed allow [call 7]",
			"before sees [call 7]",
			"invalid s__typed [call 7]",
			"done s__typed tool=typed err=invalid_arguments sent=false [call 7]",
		}},
		{"8", "s__nope", map[string]any{}, []string{
			"start s__nope (id 8)",
			"done s__nope tool= err=unknown_tool sent=false [call 8]",
		}},
	} {
		call(c.id, c.name, c.args, nil)
		if got := rec.get(); !slices.Equal(got, c.want) {
			t.Errorf("call %s %s: events\n%s\nwant\n%s", c.id, c.name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}

	// The trace's _meta reaches the server beside the caller's, and the
	// trace's keys win: a traceparent the caller sent (a gateway's
	// client's) is the call's parent, and the server must see the call's.
	call("9", "s__read", map[string]any{}, mcp.Meta{"shared": "caller's", "mine": 1, "traceparent": "client's"})
	srv.mu.Lock()
	meta := srv.lastMeta
	srv.mu.Unlock()
	if meta["traceparent"] != "call 9" || meta["shared"] != "trace's" || meta["mine"] != float64(1) {
		t.Errorf("the server got _meta %v", meta)
	}
}

// TestTraceUnset checks that a hub with a Trace of no fields, or with only
// the 0.1 fields, still runs every call as before.
func TestTraceUnset(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("read")
	for _, tr := range []*Trace{nil, {}, {CallDone: func(CallDoneInfo) {}}} {
		h := newHub(t, []Server{srv.server("s")}, &Options{Trace: tr})
		res, err := h.CallTool(context.Background(), "s__read", map[string]any{"a": 1}, &CallOptions{Meta: mcp.Meta{"k": "v"}})
		if err != nil || !strings.HasPrefix(resultText(res), "read ") {
			t.Fatalf("trace %+v: %v %v", tr, resultText(res), err)
		}
		srv.mu.Lock()
		meta := srv.lastMeta
		srv.mu.Unlock()
		if meta["k"] != "v" || meta["traceparent"] != nil {
			t.Fatalf("trace %+v: _meta %v", tr, meta)
		}
	}
}

// TestTraceRequestInfo checks what a request's info says, over Streamable
// HTTP and in memory, and that it holds no part of the URL but the host
// and port, nor any header.
func TestTraceRequestInfo(t *testing.T) {
	srv := newTestServer(t, "web").echoTools("get")
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil))
	t.Cleanup(hs.Close)
	var mu sync.Mutex
	var calls []CallDoneInfo
	var lists []ListInfo
	tr := &Trace{
		CallDone: func(i CallDoneInfo) { mu.Lock(); calls = append(calls, i); mu.Unlock() },
		ListDone: func(i ListInfo) { mu.Lock(); lists = append(lists, i); mu.Unlock() },
	}
	url := strings.Replace(hs.URL, "http://", "http://user:pa55word@", 1) + "/?token=s3cret"
	h := newHub(t, []Server{
		{ID: "web", URL: url, Headers: map[string]string{"Authorization": "Bearer t0ken"}},
		{ID: "mem", Transport: newTestServer(t, "mem").echoTools("get").transport()},
	}, &Options{Trace: tr})
	ctx := context.Background()
	for _, name := range []string{"web__get", "mem__get"} {
		if _, err := h.CallTool(ctx, name, map[string]any{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || len(lists) != 2 {
		t.Fatalf("%d calls, %d listings traced", len(calls), len(lists))
	}
	port := hs.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndex(port, ":")+1:]
	web, mem := calls[0].Request, calls[1].Request
	if web == nil || web.Transport != "streamable-http" || web.Address != "127.0.0.1" || fmt.Sprint(web.Port) != port ||
		web.SessionID == "" || web.ProtocolVersion == "" || web.Elapsed <= 0 {
		t.Errorf("web request %+v (port %s)", web, port)
	}
	if mem == nil || mem.Transport != "in-memory" || mem.Address != "" || mem.SessionID != "" || mem.ProtocolVersion == "" {
		t.Errorf("in-memory request %+v", mem)
	}
	for _, l := range lists {
		if l.Err != nil || l.Items != 1 || l.Request == nil || l.Request.ProtocolVersion == "" {
			t.Errorf("listing %+v", l)
		}
		if l.Server == "web" && l.Request.SessionID != web.SessionID {
			t.Errorf("the listing's session %q is not the call's %q", l.Request.SessionID, web.SessionID)
		}
	}
	all := fmt.Sprintf("%+v %+v %+v %+v", *web, *mem, *lists[0].Request, *lists[1].Request)
	for _, secret := range []string{"user", "pa55word", "s3cret", "t0ken", "Bearer"} {
		if strings.Contains(all, secret) {
			t.Errorf("a request's info holds %q: %s", secret, all)
		}
	}
}

// TestTraceListing checks the events of the tools/list requests: one per
// server asked, none for a listing answered from the cache, again after
// list_changed, each in the context ListStart returned, with the
// RequestMeta's _meta sent in the request.
func TestTraceListing(t *testing.T) {
	rec := &recorder{}
	srv := newTestServer(t, "s").echoTools("a", "b")
	var mu sync.Mutex
	var listMeta []mcp.Meta
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ListToolsRequest); ok {
				mu.Lock()
				listMeta = append(listMeta, r.Params.Meta)
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	n := 0
	tr := &Trace{
		ListStart: func(i ListInfo) context.Context {
			n++
			rec.add("list start %s", i.Server)
			return context.WithValue(i.Context, spanKey{}, fmt.Sprint("list ", n))
		},
		ListDone: func(i ListInfo) {
			rec.add("list done %s tools=%d err=%v sent=%v [%s]", i.Server, i.Items, i.Err, i.Request != nil, spanOf(i.Context))
		},
		RequestMeta: func(i RequestMetaInfo) map[string]any {
			rec.add("meta %s %s call=%v [%s]", i.Method, i.Server, i.Call != nil, spanOf(i.Context))
			return map[string]any{"traceparent": spanOf(i.Context)}
		},
	}
	h := newHub(t, []Server{srv.server("s")}, &Options{Trace: tr})
	ctx := context.Background()
	for range 2 {
		if _, err := h.ListTools(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"list start s", "meta tools/list s call=false [list 1]", "list done s tools=2 err=<nil> sent=true [list 1]"}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	rec.mu.Lock()
	rec.events = nil
	rec.mu.Unlock()
	srv.echoTools("c") // the server says its tools changed
	eventually(t, 10*time.Second, func() bool {
		ts, err := h.ListTools(ctx)
		return err == nil && ts.Len() == 3
	}, "the third tool")
	want = []string{"list start s", "meta tools/list s call=false [list 2]", "list done s tools=3 err=<nil> sent=true [list 2]"}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Fatalf("after list_changed, events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(listMeta) != 2 || listMeta[0]["traceparent"] != "list 1" || listMeta[1]["traceparent"] != "list 2" {
		t.Fatalf("the server's tools/list _meta: %v", listMeta)
	}
}

func TestHostPort(t *testing.T) {
	for _, c := range []struct {
		url  string
		host string
		port int
	}{
		{"https://mcp.example.com/mcp", "mcp.example.com", 443},
		{"http://user:secret@10.1.2.80/x?token=y", "10.1.2.80", 80},
		{"http://[::1]:8080/mcp", "::1", 8080},
		{"https://example.com:8443", "example.com", 8443},
		{"ws://example.com/x", "example.com", 0},
		{"not a url", "", 0},
		{"http://%zz", "", 0},
	} {
		if h, p := hostPort(c.url); h != c.host || p != c.port {
			t.Errorf("hostPort(%q) = %q, %d, want %q, %d", c.url, h, p, c.host, c.port)
		}
	}
}

func TestPeerInfo(t *testing.T) {
	ct, _ := mcp.NewInMemoryTransports()
	for _, c := range []struct {
		s    Server
		want RequestInfo
	}{
		{Server{Command: "node"}, RequestInfo{Transport: "stdio"}},
		{Server{URL: "https://h.example/mcp?key=k"}, RequestInfo{Transport: "streamable-http", Address: "h.example", Port: 443}},
		{Server{URL: "http://h.example:9000/sse", SSE: true}, RequestInfo{Transport: "sse", Address: "h.example", Port: 9000}},
		{Server{Transport: ct}, RequestInfo{Transport: "in-memory"}},
		{Server{Transport: &mcp.StreamableClientTransport{Endpoint: "http://127.0.0.1:1/"}}, RequestInfo{Transport: "streamable-http", Address: "127.0.0.1", Port: 1}},
		{Server{Transport: &mcp.CommandTransport{}}, RequestInfo{Transport: "stdio"}},
		{Server{Transport: &mcp.IOTransport{}}, RequestInfo{}},
	} {
		if got := peerInfo(c.s); got != c.want {
			t.Errorf("peerInfo(%+v) = %+v, want %+v", c.s, got, c.want)
		}
	}
}

// TestTraceRequestErr checks that a request's info tells the request's
// own failure from the pipeline's: a server's JSON-RPC error is the
// request's, an after-hook's refusal is not.
func TestTraceRequestErr(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("ok")
	addTool(srv.Server, "fail", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, jsonRPCError(-32602, "bad path")
	})
	var mu sync.Mutex
	done := map[string]CallDoneInfo{}
	h := newHub(t, []Server{srv.server("s")}, &Options{Hooks: []Hook{{Name: "dlp", After: func(_ context.Context, c *Call, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
		if c.Tool == "ok" {
			return nil, errors.New("withheld")
		}
		return nil, nil
	}}},
		Trace: &Trace{CallDone: func(i CallDoneInfo) { mu.Lock(); done[i.Call.Tool] = i; mu.Unlock() }}})
	ctx := context.Background()
	h.CallTool(ctx, "s__ok", map[string]any{}, nil)
	h.CallTool(ctx, "s__fail", map[string]any{}, nil)
	mu.Lock()
	defer mu.Unlock()
	if i := done["ok"]; !errors.Is(i.Err, ErrDenied) || i.Request == nil || i.Request.Err != nil {
		t.Errorf("after-hook refusal: err %v, request %+v", i.Err, i.Request)
	}
	if i := done["fail"]; !errors.Is(i.Err, ErrServerError) || i.Request == nil || !errors.Is(i.Request.Err, ErrServerError) {
		t.Errorf("server error: err %v, request %+v", i.Err, i.Request)
	}
}

// TestTraceRequests follows prompts/get, resources/read and
// completion/complete through RequestStart and RequestDone: the listings
// they need and the policy's decision happen in the request's context,
// the request's _meta carries the trace's keys over the caller's, and
// RequestDone has the request, with its JSON-RPC id.
func TestTraceRequests(t *testing.T) {
	rec := &recorder{}
	srv := featureServer(t, "a").echoTools("t")
	var mu sync.Mutex
	metas := map[string]mcp.Meta{}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			mu.Lock()
			metas[method] = req.GetParams().GetMeta()
			mu.Unlock()
			return next(ctx, method, req)
		}
	})
	var starts []CallStartInfo
	var dones []CallDoneInfo
	var callIDs []string
	h := newHub(t, []Server{srv.server("a")}, &Options{Policy: NewPolicy(Deny("a/a_only"), Allow("*")),
		Trace: &Trace{
			RequestStart: func(i CallStartInfo) context.Context {
				mu.Lock()
				starts = append(starts, i)
				mu.Unlock()
				rec.add("start %s %s", i.Method, i.Call.Exposed)
				return context.WithValue(i.Context, spanKey{}, i.Method+" "+i.Call.Exposed)
			},
			Decided: func(i StepInfo) {
				rec.add("decided %s %s %v [%s]", i.Call.Method, i.Call.Exposed, i.Decision, spanOf(i.Context))
			},
			ListStart: func(i ListInfo) context.Context {
				rec.add("list %s %s [%s]", i.Method, i.Server, spanOf(i.Context))
				return context.WithValue(i.Context, spanKey{}, i.Method)
			},
			ListDone: func(i ListInfo) {
				rec.add("listed %s %d [%s]", i.Method, i.Items, spanOf(i.Context))
			},
			RequestMeta: func(i RequestMetaInfo) map[string]any {
				return map[string]any{"traceparent": spanOf(i.Context)}
			},
			RequestDone: func(i CallDoneInfo) {
				mu.Lock()
				dones = append(dones, i)
				mu.Unlock()
				var kind string
				if e := (*Error)(nil); errors.As(i.Err, &e) {
					kind = e.Kind.String()
				}
				rec.add("done %s %s/%s err=%s sent=%v [%s]", i.Method, i.Call.Server, i.Call.Tool, kind, i.Request != nil, spanOf(i.Context))
			},
			CallDone: func(i CallDoneInfo) {
				if i.Request != nil {
					mu.Lock()
					callIDs = append(callIDs, i.Request.RequestID)
					mu.Unlock()
				}
			},
		}})
	ctx := context.Background()
	client := mcp.Meta{"traceparent": "client's", "k": "v"}
	if _, err := h.GetPrompt(ctx, "a__greet", map[string]string{"who": "you"}, &CallOptions{Meta: client}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.GetPrompt(ctx, "a__a_only", nil, nil); err == nil {
		t.Fatal("a denied prompt was got")
	}
	if _, err := h.ReadResource(ctx, "test://a/doc", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "a__greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "y"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CallTool(ctx, "a__t", nil, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"start prompts/get a__greet",
		"list prompts/list a [prompts/get a__greet]",
		"listed prompts/list 2 [prompts/list]",
		"decided prompts/get a__greet allow [prompts/get a__greet]",
		"done prompts/get a/greet err= sent=true [prompts/get a__greet]",
		"start prompts/get a__a_only",
		"decided prompts/get a__a_only deny [prompts/get a__a_only]",
		"done prompts/get a/a_only err=denied sent=false [prompts/get a__a_only]",
		"start resources/read test://a/doc",
		"list resources/list a [resources/read test://a/doc]",
		"listed resources/list 2 [resources/list]",
		"list resources/templates/list a [resources/read test://a/doc]",
		"listed resources/templates/list 1 [resources/templates/list]",
		"decided resources/read test://a/doc allow [resources/read test://a/doc]",
		"done resources/read a/test://a/doc err= sent=true [resources/read test://a/doc]",
		"start completion/complete a__greet",
		"decided prompts/get a__greet allow [completion/complete a__greet]",
		"done completion/complete a/greet err= sent=true [completion/complete a__greet]",
		"list tools/list a []",
		"listed tools/list 1 [tools/list]",
		"decided tools/call a__t allow []", // a Trace without CallStart
	}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mu.Lock()
	defer mu.Unlock()
	if m := starts[0].Meta; m["traceparent"] != "client's" {
		t.Errorf("RequestStart's Meta = %v, want the caller's", m)
	}
	for method, want := range map[string]string{
		"prompts/get": "prompts/get a__greet", "resources/read": "resources/read test://a/doc",
		"prompts/list": "prompts/list", "resources/list": "resources/list",
	} {
		if got := metas[method]["traceparent"]; got != want {
			t.Errorf("%s: the server got traceparent %v, want %q", method, got, want)
		}
	}
	if metas["completion/complete"]["traceparent"] != "completion/complete a__greet" {
		t.Errorf("completion/complete: the server got _meta %v", metas["completion/complete"])
	}
	if metas["prompts/get"]["k"] != "v" {
		t.Errorf("prompts/get: the caller's _meta is not sent: %v", metas["prompts/get"])
	}
	for _, d := range dones {
		if d.Request == nil {
			continue
		}
		if d.Request.RequestID == "" || d.Request.Transport != "in-memory" || d.Request.SessionID == "" && d.Request.ProtocolVersion == "" {
			t.Errorf("%s: RequestInfo %+v", d.Method, *d.Request)
		}
	}
	if len(callIDs) != 1 || callIDs[0] == "" {
		t.Errorf("tools/call request ids %q", callIDs)
	}
}

// TestTraceRequestUnsent checks that a completion conduit answers itself
// (the server offers none) reports no request.
func TestTraceRequestUnsent(t *testing.T) {
	srv := newTestServer(t, "s")
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	var done []CallDoneInfo
	h := newHub(t, []Server{srv.server("s")}, &Options{Trace: &Trace{
		RequestDone: func(i CallDoneInfo) { done = append(done, i) },
	}})
	res, err := h.Complete(context.Background(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "s__p"}}, nil)
	if err != nil || len(res.Completion.Values) != 0 {
		t.Fatalf("%v %v", res, err)
	}
	if len(done) != 1 || done[0].Request != nil || done[0].Err != nil {
		t.Errorf("RequestDone %+v, want one with no request", done)
	}
}

// TestTraceRequestApproved: the approval of a prompt or a resource read
// goes through the one approver runner of the pipeline, so Trace.Approved
// is told of it as of a tool call's, in the request's context, and a
// denial names the request; an approver that ignores its context is
// waited for no longer than the call's time limit, the message naming it.
func TestTraceRequestApproved(t *testing.T) {
	srv := featureServer(t, "a").echoTools("t")
	rec := &recorder{}
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	h := newHub(t, []Server{srv.server("a")}, &Options{
		Policy: NewPolicy(Ask("a/*")),
		Approver: func(_ context.Context, req ApprovalRequest) Approval {
			if req.Call.Exposed == "test://a/doc" {
				<-block // ignores its context
			}
			return Approval{Allow: req.Call.Exposed != "a__a_only", Reason: "not that one"}
		},
		Trace: &Trace{
			RequestStart: func(i CallStartInfo) context.Context {
				return context.WithValue(i.Context, spanKey{}, i.Method)
			},
			RequestDone: func(CallDoneInfo) {},
			Approved: func(i StepInfo) {
				rec.add("approved %s %s %v [%s]", i.Call.Method, i.Call.Exposed, i.Approval.Allow, spanOf(i.Context))
			},
		}})
	ctx := context.Background()
	if _, err := h.GetPrompt(ctx, "a__greet", map[string]string{"who": "you"}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := h.GetPrompt(ctx, "a__a_only", nil, nil)
	if e := wantKind(t, err, ErrDenied); e.Message != "The request for a__a_only was denied: not that one." {
		t.Errorf("denial %q", e.Message)
	}
	if _, err := h.CallTool(ctx, "a__t", nil, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"approved prompts/get a__greet true [prompts/get]",
		"approved prompts/get a__a_only false [prompts/get]",
		"approved tools/call a__t true []",
	}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, err = h.ReadResource(ctx, "test://a/doc", &CallOptions{CallTimeout: 200 * time.Millisecond})
	e := wantKind(t, err, ErrTimeout)
	if want := "The request for test://a/doc timed out after 200ms, waiting for the approver."; e.Message != want || e.Server != "a" {
		t.Errorf("%q (server %q), want %q", e.Message, e.Server, want)
	}
}
