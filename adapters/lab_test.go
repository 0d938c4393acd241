package adapters_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Real, tiny media bytes: what http.DetectContentType recognizes.
var (
	pngBytes  = b64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAAEElEQVR4nGL6z8AACAAA//8DCQECWLbVUAAAAABJRU5ErkJggg==")
	jpegBytes = b64("/9j/2wCEABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2MBERISGBUYLxoaL2NCOEJjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY//AAAsIAAEAAQEBEQD/xADSAAABBQEBAQEBAQAAAAAAAAAAAQIDBAUGBwgJCgsQAAIBAwMCBAMFBQQEAAABfQECAwAEEQUSITFBBhNRYQcicRQygZGhCCNCscEVUtHwJDNicoIJChYXGBkaJSYnKCkqNDU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6g4SFhoeIiYqSk5SVlpeYmZqio6Slpqeoqaqys7S1tre4ubrCw8TFxsfIycrS09TV1tfY2drh4uPk5ebn6Onq8fLz9PX29/j5+v/aAAgBAQAAPwDz+v/Z")
	gifBytes  = b64("R0lGODlhAQABAIAAAAAAAP///ywAAAAAAQABAAACAkQBADs=")
	webpBytes = b64("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")
	svgBytes  = []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><rect width="1" height="1"/></svg>`)
	wavBytes  = wav()
	// One ADTS frame header (AAC LC, 44.1 kHz, mono) and a silent payload.
	aacBytes = []byte{0xFF, 0xF1, 0x50, 0x40, 0x01, 0x7F, 0xFC, 0x01, 0x18, 0x20, 0x07}
	pdfBytes = []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")
)

func b64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// wav is a valid RIFF/WAVE file: 8 kHz, 16-bit mono, two silent samples.
func wav() []byte {
	const rate, samples = 8000, 2
	b := make([]byte, 0, 44+2*samples)
	b = append(b, "RIFF"...)
	b = binary.LittleEndian.AppendUint32(b, 36+2*samples)
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1) // PCM
	b = binary.LittleEndian.AppendUint16(b, 1) // mono
	b = binary.LittleEndian.AppendUint32(b, rate)
	b = binary.LittleEndian.AppendUint32(b, rate*2)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, 2*samples)
	return append(b, make([]byte, 2*samples)...)
}

// A description a hostile server might write: invisible characters hide
// words from a reviewer (zero width space, right-to-left override, tag
// characters spelling "IGNORE", a variation selector, a soft hyphen, a
// BOM), with ordinary whitespace that must stay.
const hostileDescription = "Echoes\u200b the\u202e message\U000E0049\U000E0047\U000E004E\U000E004F\U000E0052\U000E0045 back.\uFE0F\n\tIt is\u00ad safe\uFEFF to call."

// longDescription is over 4 KiB of two-byte characters, so the cap must
// fall on a character boundary.
var longDescription = "x" + strings.Repeat("é", 3000)

// lab is an in-process MCP server whose tools return every kind of
// content and every kind of failure, and which counts what it is sent.
type lab struct {
	srv *mcp.Server

	mu       sync.Mutex
	calls    []string // tool names, in arrival order
	args     map[string][]map[string]any
	finished []string // tool names, in completion order

	inflight, maxInflight atomic.Int64
	countStarted          atomic.Int64
	// requests counts every tools/call request that reached the server,
	// whether or not it names one of its tools.
	requests atomic.Int64
	// reads counts resources/read requests: a resource link must never be
	// fetched.
	reads     atomic.Int64
	cancelled chan string // tools whose handler saw its context end
	// progressSeen is sent to by a test whose client has seen the
	// progress tool's notifications, which the tool waits for.
	progressSeen chan struct{}
	release      chan struct{}
	releaseOnce  sync.Once
}

type toolDef struct {
	name, desc string
	schema     map[string]any
	handle     func(ctx context.Context, req *mcp.CallToolRequest, args map[string]any) *mcp.CallToolResult
}

func obj(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

var str = map[string]any{"type": "string"}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func content(cs ...mcp.Content) *mcp.CallToolResult { return &mcp.CallToolResult{Content: cs} }

func canon(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// newLab builds the lab server. Its tools:
//
//	echo, search, pick, nodesc, long: listing shapes (descriptions,
//	  strict-mode conversions, fallbacks) and plain results
//	text, png, jpeg, gif, webp, svg, wav, aac, link, embedded_text,
//	  embedded_png, embedded_pdf, mixed, structured, structured_only,
//	  fail_structured: one content kind each
//	fail, fail_empty: isError results
//	secret, deploy: for policy denials and approvals
//	sleep: blocks until its context ends (or release), for timeouts
//	slow: sleeps args.ms milliseconds, for completion order
//	count: holds until args.hold calls are in flight, for concurrency
//	progress: sends progress notifications, then waits for progressSeen
//	meta: answers with the request's _meta
func newLab() *lab {
	l := &lab{args: map[string][]map[string]any{}, cancelled: make(chan string, 100), release: make(chan struct{}),
		progressSeen: make(chan struct{}, 1)}
	l.srv = mcp.NewServer(&mcp.Implementation{Name: "lab", Version: "1.0.0"}, nil)
	empty := obj(map[string]any{})
	fixed := func(r *mcp.CallToolResult) func(context.Context, *mcp.CallToolRequest, map[string]any) *mcp.CallToolResult {
		// A copy per call: the SDK's server sets a field of the result it
		// answers, which concurrent calls would race on.
		return func(context.Context, *mcp.CallToolRequest, map[string]any) *mcp.CallToolResult { c := *r; return &c }
	}
	defs := []toolDef{
		{"echo", hostileDescription, obj(map[string]any{"message": str}, "message"),
			func(_ context.Context, _ *mcp.CallToolRequest, a map[string]any) *mcp.CallToolResult {
				return text(fmt.Sprint("Echo: ", a["message"]))
			}},
		{"search", "Searches the notes.", obj(map[string]any{"q": str, "limit": map[string]any{"type": "integer"}}, "q"),
			func(_ context.Context, _ *mcp.CallToolRequest, a map[string]any) *mcp.CallToolResult {
				return text("search " + canon(a))
			}},
		{"pick", "Picks an item by id or by name.", map[string]any{
			"type": "object",
			"anyOf": []any{
				obj(map[string]any{"id": str}, "id"),
				obj(map[string]any{"name": str}, "name"),
			}},
			func(_ context.Context, _ *mcp.CallToolRequest, a map[string]any) *mcp.CallToolResult {
				return text("picked " + canon(a))
			}},
		{"nodesc", "", empty, fixed(text("ok"))},
		{"long", longDescription, empty, fixed(text("ok"))},

		{"text", "Text content.", empty, fixed(text("plain text"))},
		{"png", "A PNG image.", empty, fixed(content(&mcp.ImageContent{MIMEType: "image/png", Data: pngBytes}))},
		{"jpeg", "A JPEG image.", empty, fixed(content(&mcp.ImageContent{MIMEType: "image/jpeg", Data: jpegBytes}))},
		{"gif", "A GIF image.", empty, fixed(content(&mcp.ImageContent{MIMEType: "image/gif", Data: gifBytes}))},
		// The server declares the WebP image as a PNG: the bytes decide.
		{"webp", "A WebP image.", empty, fixed(content(&mcp.ImageContent{MIMEType: "image/png", Data: webpBytes}))},
		{"svg", "An SVG image.", empty, fixed(content(&mcp.ImageContent{MIMEType: "image/svg+xml", Data: svgBytes}))},
		{"wav", "A WAV clip.", empty, fixed(content(&mcp.AudioContent{MIMEType: "audio/wav", Data: wavBytes}))},
		{"aac", "An AAC clip.", empty, fixed(content(&mcp.AudioContent{MIMEType: "audio/aac", Data: aacBytes}))},
		{"link", "A resource link.", empty, fixed(content(&mcp.ResourceLink{URI: "file:///reports/q3.pdf", Name: "q3.pdf", MIMEType: "application/pdf"}))},
		{"embedded_text", "An embedded text resource.", empty, fixed(content(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "file:///notes/todo.md", MIMEType: "text/markdown", Text: "- buy milk\n- call Ada"}}))},
		{"embedded_png", "An embedded PNG.", empty, fixed(content(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "file:///img/pixel.png", MIMEType: "image/png", Blob: pngBytes}}))},
		{"embedded_pdf", "An embedded PDF.", empty, fixed(content(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
			URI: "file:///docs/empty.pdf", MIMEType: "application/pdf", Blob: pdfBytes}}))},
		{"mixed", "Text, a PNG, an SVG and a WAV clip.", empty, fixed(content(
			&mcp.TextContent{Text: "Here is the chart:"},
			&mcp.ImageContent{MIMEType: "image/png", Data: pngBytes},
			&mcp.ImageContent{MIMEType: "image/svg+xml", Data: svgBytes},
			&mcp.AudioContent{MIMEType: "audio/wav", Data: wavBytes}))},
		{"structured", "Structured content with text content.", empty, fixed(&mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: "22°C and sunny"}},
			StructuredContent: map[string]any{"temperature": 22, "conditions": "sunny"}})},
		{"structured_only", "Structured content without content.", empty, fixed(&mcp.CallToolResult{
			Content:           []mcp.Content{},
			StructuredContent: map[string]any{"temperature": 22, "conditions": "sunny"}})},
		{"fail_structured", "An isError result with structured content.", empty, fixed(&mcp.CallToolResult{
			IsError:           true,
			Content:           []mcp.Content{&mcp.TextContent{Text: "quota exceeded"}},
			StructuredContent: map[string]any{"code": 429}})},

		{"fail", "Always fails.", empty, fixed(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}})},
		{"fail_empty", "Fails without saying why.", empty, fixed(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{}})},
		{"secret", "Reads the secret.", empty, fixed(text("the secret"))},
		{"deploy", "Deploys the service.", empty, fixed(text("deployed"))},
		{"sleep", "Sleeps until cancelled.", empty, func(ctx context.Context, _ *mcp.CallToolRequest, _ map[string]any) *mcp.CallToolResult {
			select {
			case <-ctx.Done():
				l.cancelled <- "sleep"
				return text("cancelled")
			case <-l.release:
				return text("released")
			}
		}},
		{"slow", "Sleeps ms milliseconds.", obj(map[string]any{"ms": map[string]any{"type": "integer"}}),
			func(ctx context.Context, _ *mcp.CallToolRequest, a map[string]any) *mcp.CallToolResult {
				ms, _ := a["ms"].(float64)
				select {
				case <-time.After(time.Duration(ms) * time.Millisecond):
				case <-ctx.Done():
				}
				return text(fmt.Sprintf("slept %vms", ms))
			}},
		{"count", "Waits until hold calls are in flight, or total calls have started.", obj(map[string]any{
			"hold": map[string]any{"type": "integer"}, "total": map[string]any{"type": "integer"}}),
			func(ctx context.Context, _ *mcp.CallToolRequest, a map[string]any) *mcp.CallToolResult {
				hold, _ := a["hold"].(float64)
				total, _ := a["total"].(float64)
				l.countStarted.Add(1)
				// The deadline only ends a test that went wrong.
				deadline := time.Now().Add(30 * time.Second)
				for l.inflight.Load() < int64(hold) && l.countStarted.Load() < int64(total) && time.Now().Before(deadline) && ctx.Err() == nil {
					time.Sleep(time.Millisecond)
				}
				time.Sleep(5 * time.Millisecond)
				return text("counted")
			}},
		{"progress", "Reports progress three times.", empty, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) *mcp.CallToolResult {
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i := 1; i <= 3; i++ {
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: float64(i), Total: 3, Message: fmt.Sprintf("step %d", i)})
				}
			}
			// The client may handle notifications after the result, and
			// drop them then: wait until it says it has seen them.
			select {
			case <-l.progressSeen:
			case <-ctx.Done():
			}
			return text("done")
		}},
		{"meta", "Answers with the request's _meta.", empty, func(_ context.Context, req *mcp.CallToolRequest, _ map[string]any) *mcp.CallToolResult {
			m := maps.Clone(req.Params.Meta)
			for k := range m {
				if k == "progressToken" || strings.HasPrefix(k, "io.modelcontextprotocol/") {
					delete(m, k)
				}
			}
			return text(canon(m))
		}},
	}
	l.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/call":
				l.requests.Add(1)
			case "resources/read":
				l.reads.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	for _, d := range defs {
		l.srv.AddTool(&mcp.Tool{Name: d.name, Description: d.desc, InputSchema: d.schema}, l.handler(d))
	}
	return l
}

func (l *lab) handler(d toolDef) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
		}
		n := l.inflight.Add(1)
		for {
			m := l.maxInflight.Load()
			if n <= m || l.maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		l.mu.Lock()
		l.calls = append(l.calls, d.name)
		l.args[d.name] = append(l.args[d.name], args)
		l.mu.Unlock()
		res := d.handle(ctx, req, args)
		l.inflight.Add(-1)
		l.mu.Lock()
		l.finished = append(l.finished, d.name)
		l.mu.Unlock()
		return res, nil
	}
}

// sent returns the tool calls the server received, in arrival order.
func (l *lab) sent() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

func (l *lab) argsOf(tool string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.args[tool])
}

func (l *lab) completed() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.finished)
}

// connect serves srv over an in-memory transport and returns the client's
// end, and the server session (to end it, making the server unavailable).
func connect(t testing.TB, srv *mcp.Server) (mcp.Transport, *mcp.ServerSession) {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return ct, ss
}

// connectKillable serves srv over an in-memory pipe that kill breaks, as
// when a server process dies. (Ending the server session instead can
// deadlock in the SDK v1.8.0: ServerSession.Close waits for a
// subscriptions/listen handler that registered after Close looked.)
func connectKillable(t testing.TB, srv *mcp.Server) (mcp.Transport, func()) {
	t.Helper()
	cc, sc := net.Pipe()
	if _, err := srv.Connect(context.Background(), &mcp.IOTransport{Reader: sc, Writer: sc}, nil); err != nil {
		t.Fatal(err)
	}
	kill := func() { sc.Close() }
	t.Cleanup(kill)
	return &mcp.IOTransport{Reader: cc, Writer: cc}, kill
}

// ping is a second server, "gone", which the tests take down after
// listing to make a call find its server unavailable.
func newPing() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "gone", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ping", Description: "Pings.", InputSchema: obj(map[string]any{})},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("pong"), nil })
	return srv
}

// labPolicy denies lab/secret once web output is in context, asks about
// lab/deploy, and allows the rest. No server of the lab is "web": its
// tests give that taint by hand, so the lab's hub opts out of the strict
// check (LaxPolicy).
func labPolicy() *conduit.Policy {
	return conduit.NewPolicy(
		conduit.Deny("lab/secret").When(conduit.Tainted("web")),
		conduit.Ask("lab/deploy"),
		conduit.Allow("*"),
	)
}

// rejectDeploys is the approver of the lab hub: it denies with a reason.
func rejectDeploys(context.Context, conduit.ApprovalRequest) conduit.Approval {
	return conduit.Reject("deploys need a human on call")
}

type hubOpts struct {
	approver conduit.Approver
	hooks    []conduit.Hook
	policy   *conduit.Policy
	noGone   bool
	noStore  bool // no Options.Store: the hub makes its own
	filter   func(server string, tool *mcp.Tool) bool
}

// labHub starts a hub over a fresh lab ("lab") and ping ("gone") server,
// and returns the hub, the lab and what takes the gone server down.
func labHub(t testing.TB, o hubOpts) (*conduit.Hub, *lab, func()) {
	t.Helper()
	l := newLab()
	t.Cleanup(func() { l.releaseOnce.Do(func() { close(l.release) }) })
	lt, _ := connect(t, l.srv)
	servers := []conduit.Server{{ID: "lab", Transport: lt}}
	var gone func()
	if !o.noGone {
		var gt mcp.Transport
		gt, gone = connectKillable(t, newPing())
		servers = append(servers, conduit.Server{ID: "gone", Transport: gt})
	}
	if o.policy == nil {
		o.policy = labPolicy()
	}
	if o.approver == nil {
		o.approver = rejectDeploys
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The explicit store of one process: a resumed state needs one.
	var claims store.Store
	if !o.noStore {
		m := store.NewMemory()
		t.Cleanup(func() { m.Close() })
		claims = m
	}
	hub, err := conduit.NewHub(ctx, servers, &conduit.Options{Policy: o.policy,
		Store:     claims,
		LaxPolicy: true,
		Approver:  o.approver,
		Hooks:     o.hooks,
		Filter:    o.filter,
		Reconnect: conduit.Backoff{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	return hub, l, gone
}

// takeDown kills the gone server and waits until the hub sees it down.
func takeDown(t testing.TB, hub *conduit.Hub, kill func()) {
	t.Helper()
	kill()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, st := range hub.Status() {
			if st.ID == "gone" && st.State != conduit.StateUp {
				return
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("the gone server is still up")
}
