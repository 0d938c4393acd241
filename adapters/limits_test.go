package adapters_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoes returns n calls of lab__echo, each with its own message, and the
// messages.
func echoes(n int) ([]scripted, []string) {
	var msgs []string
	cs := calls(n, "lab__echo", func(i int) any {
		msgs = append(msgs, fmt.Sprintf("m%d", i))
		return map[string]any{"message": fmt.Sprintf("m%d", i)}
	})
	return cs, msgs
}

// received returns the messages the lab's echo tool received since it had
// received skip, sorted.
func received(l *lab, skip int) []string {
	var out []string
	for _, a := range l.argsOf("echo")[skip:] {
		out = append(out, fmt.Sprint(a["message"]))
	}
	slices.Sort(out)
	return out
}

// Past MaxToolCalls, the calls are answered with an error and never sent:
// the server receives exactly the first ones.
func TestMaxToolCalls(t *testing.T) {
	hub, l, _ := labHub(t, hubOpts{noGone: true})
	tests := []struct {
		name     string
		limits   adapters.ResponseLimits
		calls    int
		wantSent int
	}{
		{"explicit", adapters.ResponseLimits{MaxToolCalls: 4}, 10, 4},
		{"default", adapters.ResponseLimits{}, adapters.DefaultMaxToolCalls + 3, adapters.DefaultMaxToolCalls},
		{"none", adapters.ResponseLimits{MaxToolCalls: -1}, adapters.DefaultMaxToolCalls + 3, adapters.DefaultMaxToolCalls + 3},
		{"within", adapters.ResponseLimits{MaxToolCalls: 4}, 4, 4},
	}
	for _, p := range adapters.Providers() {
		listing := listFor(t, hub, p)
		for _, tt := range tests {
			t.Run(p.String()+"/"+tt.name, func(t *testing.T) {
				skip := len(l.argsOf("echo"))
				cs, msgs := echoes(tt.calls)
				exec := run(t, hub, p, script(p, cs...), &adapters.ExecOptions{
					ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{Limits: tt.limits, MaxConcurrency: 8}})
				want := slices.Clone(msgs[:tt.wantSent])
				slices.Sort(want)
				if got := received(l, skip); !slices.Equal(got, want) {
					t.Fatalf("the server received %d calls %v, want the first %d", len(got), got, tt.wantSent)
				}
				if len(exec.Results) != tt.calls {
					t.Fatalf("%d answers for %d calls", len(exec.Results), tt.calls)
				}
				if len(exec.Calls) != tt.wantSent {
					t.Errorf("%d calls in Calls, want %d", len(exec.Calls), tt.wantSent)
				}
				ids := answerIDs(p, exec.Results)
				for i, res := range exec.Results {
					if want := fmt.Sprintf("call_%d", i); ids[i] != want && p != adapters.Gemini {
						t.Errorf("answer %d keyed by %q, want %q", i, ids[i], want)
					}
					err := exec.Errors[i]
					txt := resultText(p, res)
					if i < tt.wantSent {
						if err != nil || !strings.Contains(txt, "Echo: m") {
							t.Errorf("call %d: %v, answered %q", i, err, txt)
						}
						continue
					}
					if !errors.Is(err, toolcall.ErrTooManyCalls) || !errors.Is(err, conduit.ErrLimit) {
						t.Errorf("call %d: error %v, want ErrTooManyCalls and ErrLimit", i, err)
					}
					want := fmt.Sprintf("The call to lab__echo was not made: the response has %d tool calls, over the limit of %d in one response", tt.calls, tt.wantSent)
					if !strings.Contains(txt, want) {
						t.Errorf("call %d answered %q", i, txt)
					}
				}
				if _, err := json.Marshal(exec.Results); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// A Conversation applies its Limits to every turn.
func TestConversationLimits(t *testing.T) {
	hub, l, _ := labHub(t, hubOpts{noGone: true})
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			conv := newConv(t, hub, p, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Limits: adapters.ResponseLimits{MaxToolCalls: 2, MaxResponseBytes: 64 << 10}}})
			skip := len(l.argsOf("echo"))
			cs, msgs := echoes(5)
			exec, err := conv.Execute(context.Background(), script(p, cs...))
			if err != nil {
				t.Fatal(err)
			}
			if got := received(l, skip); !slices.Equal(got, msgs[:2]) {
				t.Errorf("the server received %v, want %v", got, msgs[:2])
			}
			if n := len(exec.Results); n != 5 {
				t.Errorf("%d answers", n)
			}
			big := script(p, scripted{id: "call_0", name: "lab__echo", args: map[string]any{"message": strings.Repeat("x", 64<<10)}})
			if _, err := conv.Execute(context.Background(), big); !errors.Is(err, adapters.ErrResponseTooLarge) {
				t.Errorf("a response over the limit: %v", err)
			}
			if got := len(l.argsOf("echo")) - skip; got != 2 {
				t.Errorf("%d calls reached the server, want 2", got)
			}
		})
	}
}

// marshaledOnly marshals to a response without being one of the types
// the adapters read directly.
type marshaledOnly struct{ M map[string]any }

func (m marshaledOnly) MarshalJSON() ([]byte, error) { return json.Marshal(m.M) }

// rawJSON is an SDK response struct's shape: it keeps its body.
type rawJSON string

func (r rawJSON) RawJSON() string { return string(r) }

// A response over MaxResponseBytes is refused before it is parsed, in
// every form a response comes in, and nothing is sent.
func TestMaxResponseBytes(t *testing.T) {
	hub, l, _ := labHub(t, hubOpts{noGone: true})
	for _, p := range adapters.Providers() {
		listing := listFor(t, hub, p)
		m := script(p, scripted{id: "call_0", name: "lab__echo", args: map[string]any{"message": strings.Repeat("é", 2000)}})
		data := []byte(canon(m))
		forms := map[string]any{
			"bytes": data, "raw": json.RawMessage(data), "rawptr": ptr(json.RawMessage(data)), "string": string(data),
			"map": m, "marshaler": marshaledOnly{m}, "sdk": rawJSON(data),
		}
		for name, resp := range forms {
			t.Run(p.String()+"/"+name, func(t *testing.T) {
				before := len(l.sent())
				o := &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{Limits: adapters.ResponseLimits{MaxResponseBytes: 2000}}}
				exec, err := adapters.ExecuteToolCalls(context.Background(), hub, p, resp, o)
				if !errors.Is(err, adapters.ErrResponseTooLarge) || exec != nil {
					t.Errorf("got %v, %v; want ErrResponseTooLarge", exec, err)
				}
				if n := len(l.sent()) - before; n != 0 {
					t.Errorf("%d calls sent", n)
				}
				// Within the limit, the same response runs.
				o.Limits.MaxResponseBytes = len(data) + 4096
				exec, err = adapters.ExecuteToolCalls(context.Background(), hub, p, resp, o)
				if err != nil || exec.Errors[0] != nil {
					t.Fatalf("within the limit: %v, %v", err, exec)
				}
				o.Limits.MaxResponseBytes = -1
				if _, err := adapters.ExecuteToolCalls(context.Background(), hub, p, resp, o); err != nil {
					t.Errorf("without a limit: %v", err)
				}
			})
		}
	}
}

func ptr[T any](v T) *T { return &v }

// The default limit refuses a response over 32 MiB before parsing it:
// an oversized body that is not even JSON gets ErrResponseTooLarge, not a
// parse error.
func TestMaxResponseBytesDefault(t *testing.T) {
	src := &recordingSource{}
	ts := conduit.NewToolSet(nil)
	huge := bytes.Repeat([]byte("{"), adapters.DefaultMaxResponseBytes+1)
	for _, p := range adapters.Providers() {
		_, err := adapters.ExecuteToolCalls(context.Background(), src, p, huge, &adapters.ExecOptions{ToolSet: ts})
		if !errors.Is(err, adapters.ErrResponseTooLarge) {
			t.Errorf("%v: %v", p, err)
		}
		_, err = adapters.ExecuteToolCalls(context.Background(), src, p, huge[:1000], &adapters.ExecOptions{ToolSet: ts})
		if err == nil || errors.Is(err, adapters.ErrResponseTooLarge) {
			t.Errorf("%v: a short invalid body: %v, want a parse error", p, err)
		}
	}
	if len(src.opts) != 0 {
		t.Errorf("%d calls sent", len(src.opts))
	}
}

type mediaArgs struct{ Big, Blob, Wide int }

func mediaResult(a mediaArgs) *mcp.CallToolResult {
	cs := []mcp.Content{&mcp.TextContent{Text: "before"}, &mcp.ImageContent{MIMEType: "image/png", Data: pngBytes}}
	if a.Big > 0 {
		cs = append(cs, &mcp.ImageContent{MIMEType: "image/png", Data: bigPNG(a.Big)})
	}
	if a.Blob > 0 {
		cs = append(cs, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///big.png", MIMEType: "image/png", Blob: bigPNG(a.Blob)}})
	}
	if a.Wide > 0 {
		cs = append(cs, &mcp.ImageContent{MIMEType: "image/png", Data: widePNG(a.Wide)})
	}
	return &mcp.CallToolResult{Content: append(cs, &mcp.TextContent{Text: "after"})}
}

// mediaSource answers media itself, for images larger than an MCP frame
// may carry (the Go SDK's transports cap one at 16 MiB by default, so an
// image over OpenAI's limit reaches an answer only from a local tool, a
// hook or a Source like this one).
type mediaSource struct{ conduit.Source }

func (s mediaSource) CallTool(_ context.Context, _ string, args any, _ *conduit.CallOptions) (*mcp.CallToolResult, error) {
	var a mediaArgs
	data, _ := json.Marshal(args)
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, err
	}
	return mediaResult(a), nil
}

// bigPNG is n bytes that read as a PNG: a real one, padded.
func bigPNG(n int) []byte {
	b := make([]byte, n)
	copy(b, pngBytes)
	return b
}

// widePNG is a real PNG of w x 1 pixels.
func widePNG(w int) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, 1))); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// mediaServer offers media, whose result has text, a small image, an
// image of args.big bytes, a blob of args.blob bytes and an image
// args.wide pixels wide (when set), and more text.
func mediaServer(t testing.TB) *conduit.Client {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "media", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "media", Description: "Media of given sizes.", InputSchema: obj(map[string]any{
		"big": map[string]any{"type": "integer"}, "blob": map[string]any{"type": "integer"}, "wide": map[string]any{"type": "integer"}})},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a mediaArgs
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			return mediaResult(a), nil
		})
	tr, _ := connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := conduit.NewClient(ctx, conduit.Server{ID: "media", Transport: tr}, &conduit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// imagesIn counts the image blocks of an answer, whatever the provider.
func imagesIn(p adapters.Provider, answer map[string]any) int {
	s := canon(answer)
	switch p {
	case adapters.Anthropic:
		return strings.Count(s, `"type":"image"`)
	case adapters.OpenAIResponses:
		return strings.Count(s, `"type":"input_image"`)
	case adapters.Bedrock:
		return strings.Count(s, `"image":{"format"`)
	}
	return strings.Count(s, "base64")
}

// An image over the provider's documented limit becomes a placeholder
// that says so; the small image and the text around it stay. Providers
// whose answers carry no images (OpenAI Chat, Gemini) have every image as
// a placeholder anyway.
func TestImageOverProviderLimit(t *testing.T) {
	cl := mediaServer(t)
	tests := []struct {
		p       adapters.Provider
		limit   int // bytes of base64; 0: the answers carry no images
		name    string
		maxDims int
		src     conduit.Source
	}{
		{adapters.Anthropic, 5 << 20, "Anthropic", 8000, cl},               // 5 MB, 8000 px
		{adapters.OpenAIResponses, 20 << 20, "OpenAI", 0, mediaSource{cl}}, // 20 MB
		{adapters.OpenAIChat, 0, "", 0, cl},
		{adapters.Gemini, 0, "", 0, cl},
		{adapters.Bedrock, 3932160, "Bedrock", 8000, cl}, // 3.75 MB, 8000 px
	}
	if len(tests) != len(adapters.Providers()) {
		t.Fatal("a provider is missing from the table")
	}
	for _, tt := range tests {
		t.Run(tt.p.String(), func(t *testing.T) {
			listing := listFor(t, cl, tt.p)
			// Just over the limit in base64: 3 bytes are 4 in base64.
			big := tt.limit/4*3 + 3
			if tt.limit == 0 {
				big = 1 << 20
			}
			args := map[string]any{"big": big}
			if tt.maxDims > 0 {
				args["wide"] = tt.maxDims + 1
			}
			exec := run(t, tt.src, tt.p, script(tt.p, scripted{id: "call_0", name: "media", args: args}), &adapters.ExecOptions{ToolSet: listing.ToolSet})
			if err := exec.Errors[0]; err != nil {
				t.Fatal(err)
			}
			ans := exec.Results[0]
			s := canon(ans)
			for _, want := range []string{"before", "after"} {
				if !strings.Contains(s, want) {
					t.Errorf("the text %q is lost", want)
				}
			}
			if tt.limit == 0 {
				if n := imagesIn(tt.p, ans); n != 0 || !strings.Contains(s, "[image: image/png, 1048576 bytes]") {
					t.Errorf("%d images; answered %.300s", n, s)
				}
				return
			}
			if n := imagesIn(tt.p, ans); n != 1 {
				t.Errorf("%d images in the answer, want the small one", n)
			}
			want := modeltext.Omitted("image", "image/png", big, fmt.Sprintf("%s in base64, over %s's %s limit per image",
				modeltext.Size(tt.limit+4), tt.name, modeltext.Size(tt.limit)))
			if !strings.Contains(s, want) {
				t.Errorf("no placeholder %q in %.300s", want, s)
			}
			if !strings.Contains(want, "over "+tt.name+"'s") || len(s) > 1<<16 {
				t.Errorf("placeholder %q, answer of %d bytes", want, len(s))
			}
			if tt.maxDims > 0 {
				want := fmt.Sprintf("px, over %s's %dx%d px limit per image", tt.name, tt.maxDims, tt.maxDims)
				if !strings.Contains(s, fmt.Sprintf("%dx1 ", tt.maxDims+1)) || !strings.Contains(s, want) {
					t.Errorf("no dimension placeholder %q in %.300s", want, s)
				}
			}
			// Exactly at the limit, the image is sent.
			exec = run(t, tt.src, tt.p, script(tt.p, scripted{id: "call_0", name: "media", args: map[string]any{"big": tt.limit / 4 * 3}}), &adapters.ExecOptions{ToolSet: listing.ToolSet})
			if n := imagesIn(tt.p, exec.Results[0]); n != 2 {
				t.Errorf("at the limit: %d images, want 2", n)
			}
		})
	}
}

// AnswerOptions.MaxImageBytes overrides the provider's limit, for images
// and image blobs alike; negative is no limit.
func TestMaxImageBytesOption(t *testing.T) {
	cl := mediaServer(t)
	for _, p := range []adapters.Provider{adapters.Anthropic, adapters.OpenAIResponses} {
		t.Run(p.String(), func(t *testing.T) {
			listing := listFor(t, cl, p)
			resp := script(p, scripted{id: "call_0", name: "media", args: map[string]any{"big": 3000, "blob": 3000}})
			o := &adapters.ExecOptions{ToolSet: listing.ToolSet}
			o.Answers.MaxImageBytes = 1000
			s := canon(run(t, cl, p, resp, o).Results[0])
			for _, kind := range []string{"image", "resource: file:///big.png"} {
				want := "[" + kind + " omitted: image/png, 2.9 KB, 3.9 KB in base64, over "
				if !strings.Contains(s, want) || !strings.Contains(s, "limit per image]") {
					t.Errorf("no placeholder %q in %.400s", want, s)
				}
			}
			o.Answers.MaxImageBytes = -1
			if n := imagesIn(p, run(t, cl, p, resp, o).Results[0]); n != 3 {
				t.Errorf("without a limit: %d images, want 3", n)
			}
		})
	}
}

// invalid is not UTF-8.
const invalid = "bad \xff\xfe bytes \xc3"

// utf8Source answers every call with invalid UTF-8 in each place a result
// carries text, and fails the call named "fail" with an invalid message.
type utf8Source struct{ conduit.Source }

func (s utf8Source) CallTool(_ context.Context, name string, _ any, _ *conduit.CallOptions) (*mcp.CallToolResult, error) {
	switch name {
	case "lab__fail":
		return nil, &conduit.Error{Kind: conduit.ErrServerError, Server: "lab", Tool: "fail", Message: "The server said: " + invalid}
	case "lab__fail_empty":
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: invalid}}}, nil
	case "lab__structured":
		return &mcp.CallToolResult{StructuredContent: map[string]any{"k" + invalid: []any{invalid, 1.0, map[string]any{"v": invalid}}}}, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: invalid},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///" + invalid, MIMEType: "text/plain", Text: invalid}},
		&mcp.ResourceLink{URI: "file:///" + invalid, Name: invalid, MIMEType: "text/" + invalid},
		&mcp.ImageContent{MIMEType: "image/" + invalid, Data: []byte("not an image")},
		&mcp.AudioContent{MIMEType: "audio/" + invalid, Data: []byte{1}},
	}}, nil
}

// allValid reports whether every string of a decoded answer, keys
// included, is valid UTF-8, and counts the U+FFFD in them.
func allValid(v any) (ok bool, repl int) {
	ok = true
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			ok = ok && utf8.ValidString(x)
			repl += strings.Count(x, "\uFFFD")
		case map[string]any:
			for k, e := range x {
				walk(k)
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case []map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return ok, repl
}

// Invalid UTF-8 from a source is repaired before it is put in an answer,
// for every provider and structured mode: each string of the answer is
// valid, and U+FFFD stands where the invalid bytes were.
func TestInvalidUTF8Repaired(t *testing.T) {
	hub, _, _ := labHub(t, hubOpts{noGone: true})
	src := utf8Source{hub}
	for _, p := range adapters.Providers() {
		for _, mode := range []toolcall.Structured{toolcall.StructuredDefault, toolcall.StructuredAppend, toolcall.StructuredPrefer} {
			t.Run(fmt.Sprintf("%v/%d", p, mode), func(t *testing.T) {
				listing := listFor(t, hub, p)
				var cs []scripted
				for i, name := range []string{"lab__text", "lab__fail", "lab__fail_empty", "lab__structured"} {
					cs = append(cs, scripted{id: fmt.Sprintf("call_%d", i), name: name, args: map[string]any{}})
				}
				o := &adapters.ExecOptions{ToolSet: listing.ToolSet}
				o.Answers.Structured = mode
				exec := run(t, src, p, script(p, cs...), o)
				for i, ans := range exec.Results {
					ok, repl := allValid(ans)
					if !ok {
						t.Errorf("answer %d (%s) has invalid UTF-8: %q", i, cs[i].name, ans)
					}
					if repl == 0 {
						t.Errorf("answer %d (%s) has no U+FFFD: %v", i, cs[i].name, ans)
					}
					data, err := json.Marshal(ans)
					if err != nil || !json.Valid(data) || !utf8.Valid(data) {
						t.Errorf("answer %d does not marshal to valid JSON: %v", i, err)
					}
				}
				// The text result's every piece carries the repair.
				if _, repl := allValid(exec.Results[0]); repl < 5 {
					t.Errorf("the text result has %d U+FFFD, want one at least for each of its 5 texts: %v", repl, exec.Results[0])
				}
			})
		}
	}
}

// countingSource answers every call with invalid UTF-8 text, counting
// what it is sent.
type countingSource struct {
	conduit.Source
	n atomic.Int64
}

func (s *countingSource) CallTool(context.Context, string, any, *conduit.CallOptions) (*mcp.CallToolResult, error) {
	s.n.Add(1)
	return text("got " + invalid), nil
}

// FuzzExecuteLimits runs arbitrary responses of every provider through
// ExecuteToolCalls under small limits. Oracle: a response over
// MaxResponseBytes is refused and nothing is sent; otherwise every call
// Parse finds is answered, in order, no more than MaxToolCalls reach the
// source, the calls past it are answered with ErrTooManyCalls, and every
// string of the answers is valid UTF-8.
func FuzzExecuteLimits(f *testing.F) {
	for i, p := range adapters.Providers() {
		files, _ := filepath.Glob(filepath.Join("testdata", p.String(), "*.json"))
		for _, file := range files {
			var g struct {
				Response json.RawMessage `json:"response"`
			}
			if data, err := os.ReadFile(file); err == nil && json.Unmarshal(data, &g) == nil && len(g.Response) > 0 {
				f.Add([]byte(g.Response), uint8(i), uint8(1), uint16(4096))
			}
		}
		cs := calls(9, "weather__get_weather", func(i int) any { return map[string]any{"location": fmt.Sprint(i)} })
		f.Add([]byte(canon(script(p, cs...))), uint8(i), uint8(3), uint16(60000))
		f.Add([]byte(canon(script(p, cs...))), uint8(i), uint8(0), uint16(100))
	}
	ts := conduit.NewToolSet(nil, conduit.ServerTools{Server: "weather", Tools: []*mcp.Tool{
		{Name: "get_weather", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"location": map[string]any{"type": "string"}}}},
		{Name: "get_time", InputSchema: map[string]any{"type": "object"}},
	}})
	providers := adapters.Providers()
	f.Fuzz(func(t *testing.T, data []byte, pi, maxCalls uint8, maxBytes uint16) {
		p := providers[int(pi)%len(providers)]
		src := &countingSource{}
		lim := adapters.ResponseLimits{MaxToolCalls: int(maxCalls%8) + 1, MaxResponseBytes: int(maxBytes) + 1}
		exec, err := adapters.ExecuteToolCalls(context.Background(), src, p, data, &adapters.ExecOptions{
			ToolSet: ts, TurnOptions: adapters.TurnOptions{MaxConcurrency: 1, Limits: lim}})
		if len(data) > lim.MaxResponseBytes {
			if !errors.Is(err, adapters.ErrResponseTooLarge) || src.n.Load() != 0 {
				t.Fatalf("a response of %d bytes over %d: %v, %d sent", len(data), lim.MaxResponseBytes, err, src.n.Load())
			}
			return
		}
		if errors.Is(err, adapters.ErrResponseTooLarge) {
			t.Fatalf("a response of %d bytes within %d refused", len(data), lim.MaxResponseBytes)
		}
		if err != nil {
			return
		}
		raws, perr := p.Parse(data)
		if perr != nil || len(exec.Results) != len(raws) {
			t.Fatalf("%d answers for %d calls (%v)", len(exec.Results), len(raws), perr)
		}
		if sent := int(src.n.Load()); sent > lim.MaxToolCalls || sent != len(exec.Calls) {
			t.Fatalf("%d calls sent, %d in Calls, limit %d", sent, len(exec.Calls), lim.MaxToolCalls)
		}
		for i := lim.MaxToolCalls; i < len(raws); i++ {
			if !errors.Is(exec.Errors[i], toolcall.ErrTooManyCalls) {
				t.Fatalf("call %d past the limit: %v", i, exec.Errors[i])
			}
		}
		for i, ans := range exec.Results {
			if ok, _ := allValid(ans); !ok {
				t.Fatalf("answer %d has invalid UTF-8: %q", i, ans)
			}
		}
		if _, err := json.Marshal(exec.Results); err != nil {
			t.Fatal(err)
		}
	})
}
