package sdkcheck

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The in-process MCP server "kit" and the hub over it that every test
// drives. Its tools cover each listing shape (plain, optional and nested
// arguments, a schema strict mode cannot express) and each kind of result
// content, and the hub's policy denies one of them and halts on another.

const serverID = "kit"

// exposed is the name a tool of kit has in the hub's listing.
func exposed(tool string) string { return serverID + "__" + tool }

// Real, tiny media bytes, which http.DetectContentType recognizes.
var (
	pngBytes = mustB64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAAEElEQVR4nGL6z8AACAAA//8DCQECWLbVUAAAAABJRU5ErkJggg==")
	svgBytes = []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"><rect width="1" height="1"/></svg>`)
	wavBytes = wav()
	pdfBytes = []byte("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")
)

func mustB64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// wav is a valid RIFF/WAVE file: 8 kHz, 16-bit mono, two silent samples.
func wav() []byte {
	const rate, samples = 8000, 2
	b := append([]byte(nil), "RIFF"...)
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

func obj(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

var (
	str   = map[string]any{"type": "string"}
	empty = obj(map[string]any{})
)

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func contentResult(cs ...mcp.Content) *mcp.CallToolResult { return &mcp.CallToolResult{Content: cs} }

// canon is v as compact JSON with sorted keys.
func canon(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

type kitTool struct {
	name, desc string
	schema     map[string]any
	result     func(args map[string]any) *mcp.CallToolResult
}

func fixed(r *mcp.CallToolResult) func(map[string]any) *mcp.CallToolResult {
	return func(map[string]any) *mcp.CallToolResult { return r }
}

// argsResult answers with the arguments the server received.
func argsResult(args map[string]any) *mcp.CallToolResult { return textResult("args " + canon(args)) }

func kitTools() []kitTool {
	return []kitTool{
		// Plain arguments.
		{"echo", "Echoes a message.", obj(map[string]any{"text": str}, "text"),
			func(a map[string]any) *mcp.CallToolResult { return textResult(fmt.Sprint("echo: ", a["text"])) }},
		// Optional arguments: strict mode makes limit, filter, filter.lang
		// and filter.since nullable, and their nulls are stripped.
		{"search", "Searches the notes.", obj(map[string]any{
			"q":     map[string]any{"type": "string", "description": "The query."},
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
			"filter": obj(map[string]any{
				"lang":  map[string]any{"type": "string", "enum": []any{"go", "rust"}},
				"since": map[string]any{"type": "string", "format": "date"},
			}),
		}, "q"), argsResult},
		// Nested objects, a local $ref and an array of objects.
		{"nested", "Files a record for a user.", map[string]any{
			"type": "object",
			"$defs": map[string]any{
				"address": obj(map[string]any{"city": str, "zip": str}, "city"),
			},
			"properties": map[string]any{
				"user": obj(map[string]any{
					"name":    str,
					"address": map[string]any{"$ref": "#/$defs/address"},
				}, "name", "address"),
				"tags": map[string]any{"type": "array", "items": obj(map[string]any{"label": str, "note": str}, "label")},
			},
			"required": []any{"user", "tags"},
		}, argsResult},
		// A schema strict mode cannot express (an open map and oneOf): sent
		// with "strict": false and unchanged.
		{"loose", "Sets labels.", obj(map[string]any{
			"labels": map[string]any{"type": "object", "additionalProperties": str},
			"mode":   map[string]any{"oneOf": []any{map[string]any{"const": "a"}, map[string]any{"const": "b"}}},
		}, "labels"), argsResult},

		// No description, and a schema without properties.
		{"png", "", map[string]any{"type": "object"},
			fixed(contentResult(&mcp.ImageContent{MIMEType: "image/png", Data: pngBytes}))},
		{"svg", "An SVG image.", empty,
			fixed(contentResult(&mcp.ImageContent{MIMEType: "image/svg+xml", Data: svgBytes}))},
		{"audio", "A WAV clip.", empty,
			fixed(contentResult(&mcp.AudioContent{MIMEType: "audio/wav", Data: wavBytes}))},
		{"link", "A resource link.", empty,
			fixed(contentResult(&mcp.ResourceLink{URI: "file:///reports/q3.pdf", Name: "q3.pdf", MIMEType: "application/pdf"}))},
		{"embedded_text", "An embedded text resource.", empty,
			fixed(contentResult(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "file:///notes/todo.md", MIMEType: "text/markdown", Text: "- buy milk\n- call Ada"}}))},
		{"embedded_png", "An embedded PNG.", empty,
			fixed(contentResult(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "file:///img/pixel.png", MIMEType: "image/png", Blob: pngBytes}}))},
		{"embedded_pdf", "An embedded PDF.", empty,
			fixed(contentResult(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "file:///docs/empty.pdf", MIMEType: "application/pdf", Blob: pdfBytes}}))},
		{"mixed", "Text, a PNG and an SVG.", empty, fixed(contentResult(
			&mcp.TextContent{Text: "Here is the chart:"},
			&mcp.ImageContent{MIMEType: "image/png", Data: pngBytes},
			&mcp.ImageContent{MIMEType: "image/svg+xml", Data: svgBytes}))},
		{"structured", "Structured content with text content.", empty, fixed(&mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: "22°C and sunny"}},
			StructuredContent: map[string]any{"temperature": 22, "conditions": "sunny"}})},
		{"structured_only", "Structured content without content.", empty, fixed(&mcp.CallToolResult{
			Content:           []mcp.Content{},
			StructuredContent: map[string]any{"temperature": 22, "conditions": "sunny"}})},
		{"fail", "Always fails.", empty, fixed(&mcp.CallToolResult{
			IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full"}}})},
		{"fail_image", "Fails, with a screenshot.", empty, fixed(&mcp.CallToolResult{
			IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "render failed"}, &mcp.ImageContent{MIMEType: "image/png", Data: pngBytes}}})},
		// Denied by the policy once the turn is tainted by "web".
		{"forbidden", "Reads the secret.", empty, fixed(textResult("the secret"))},
		// Asked about; the approver denies it and halts the loop.
		{"deploy", "Deploys the service.", empty, fixed(textResult("deployed"))},
	}
}

// kit is the hub over the in-process server, and what the server received.
type kit struct {
	hub *conduit.Hub

	mu       sync.Mutex
	received map[string][]string // canonical arguments, by tool
}

func newKit(t *testing.T) *kit {
	t.Helper()
	k := &kit{received: map[string][]string{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: serverID, Version: "1.0.0"}, nil)
	for _, d := range kitTools() {
		srv.AddTool(&mcp.Tool{Name: d.name, Description: d.desc, InputSchema: d.schema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				args := map[string]any{}
				if len(req.Params.Arguments) > 0 {
					if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
						return nil, err
					}
				}
				k.mu.Lock()
				k.received[d.name] = append(k.received[d.name], canon(args))
				k.mu.Unlock()
				return d.result(args), nil
			})
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: serverID, Transport: ct}}, &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Deny(serverID+"/forbidden").When(conduit.Tainted("web")),
		conduit.Ask(serverID+"/deploy"),
		conduit.Allow(serverID+"/*", "conduit/search_tools"),
	),
		Approver: func(context.Context, conduit.ApprovalRequest) conduit.Approval {
			return conduit.RejectAndHalt("deploys are frozen")
		},
		ConnectTimeout: 10 * time.Second,
		// The turn's taint "web" is set by hand: no server of that name
		// is configured, which a strict policy refuses.
		LaxPolicy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	k.hub = hub
	return k
}

func (k *kit) receivedBy(tool string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.received[tool])
}

// list lists the kit's tools for p and checks the listing's basics.
func (k *kit) list(t *testing.T, p adapters.Provider, o *adapters.ToolsOptions) *adapters.Listing {
	t.Helper()
	l, err := adapters.Tools(t.Context(), k.hub, p, o)
	if err != nil {
		t.Fatalf("adapters.Tools(%v): %v", p, err)
	}
	if got, want := len(l.Tools), len(kitTools()); got != want {
		t.Fatalf("adapters.Tools(%v) listed %d tools, want %d", p, got, want)
	}
	return l
}

// execOptions are the options every ExecuteToolCalls of the tests uses:
// the turn is tainted by "web" (so forbidden is denied), and calls run one
// at a time, so that the halt of deploy, the last call, cannot overtake
// another call and the answers are the same on every run.
func execOptions(l *adapters.Listing) *adapters.ExecOptions {
	return &adapters.ExecOptions{ToolSet: l.ToolSet, NullPaths: l.NullPaths, TurnOptions: adapters.TurnOptions{Taint: []string{"web"}, CallTimeout: 30 * time.Second, MaxConcurrency: 1}}
}

// part is one piece of an expected answer's content.
type part struct {
	text     string // a text part (exact)
	contains string // a text part that contains this
	image    string // an inline image of this media type, with data
	data     []byte
	// placeholder is the text an image part becomes where the provider
	// cannot take it inline.
	placeholder string
}

func textPart(s string) part { return part{text: s} }

func imagePart(kind, uri string) part {
	p := part{image: "image/png", data: pngBytes, placeholder: fmt.Sprintf("[image: image/png, %d bytes]", len(pngBytes))}
	if kind == "resource" {
		p.placeholder = fmt.Sprintf("[resource: %s, image/png, %d bytes]", uri, len(pngBytes))
	}
	return p
}

// want is what the answer to one call must say, provider-neutrally.
type want struct {
	parts   []part
	isError bool // an isError result
	// output is Gemini's response.output when structuredContent stands for
	// the whole result (StructuredPrefer); nil otherwise.
	output any
	// kind, when set, is the *conduit.Error the call failed with; its text
	// contains failText.
	kind     *conduit.Error
	failed   bool
	failText string
}

// modelCall is one tool call a model makes in the example responses.
type modelCall struct {
	id   string // unique suffix of the provider's call id
	name string // the exposed name the model uses
	tool string // the tool's own name on kit ("" when the name is unknown)
	// args are the arguments a model writes; strictArgs those an OpenAI
	// model writes under strict mode ("" means args).
	args, strictArgs string
	// received is what the server must be sent (canonical JSON; "" to not
	// check).
	received string
	// notGemini leaves the call out of the Gemini response, whose SDK
	// cannot represent it (non-object args).
	notGemini bool
	want      want
}

func (c modelCall) argsFor(strict bool) string {
	if strict && c.strictArgs != "" {
		return c.strictArgs
	}
	return c.args
}

func modelCalls() []modelCall {
	svgPlaceholder := fmt.Sprintf("[image: image/svg+xml, %d bytes]", len(svgBytes))
	weather := map[string]any{"conditions": "sunny", "temperature": float64(22)}
	return []modelCall{
		{id: "01", name: exposed("echo"), tool: "echo", args: `{"text":"hello"}`, received: `{"text":"hello"}`,
			want: want{parts: []part{textPart("echo: hello")}}},
		{id: "02", name: exposed("search"), tool: "search", args: `{"q":"mcp"}`,
			strictArgs: `{"q":"mcp","limit":null,"filter":null}`, received: `{"q":"mcp"}`,
			want: want{parts: []part{textPart(`args {"q":"mcp"}`)}}},
		{id: "03", name: exposed("search"), tool: "search", args: `{"q":"go sdk","limit":5,"filter":{"lang":"go"}}`,
			strictArgs: `{"q":"go sdk","limit":5,"filter":{"lang":"go","since":null}}`,
			received:   `{"filter":{"lang":"go"},"limit":5,"q":"go sdk"}`,
			want:       want{parts: []part{textPart(`args {"filter":{"lang":"go"},"limit":5,"q":"go sdk"}`)}}},
		{id: "04", name: exposed("nested"), tool: "nested",
			args:       `{"user":{"name":"Ada","address":{"city":"London"}},"tags":[{"label":"math"}]}`,
			strictArgs: `{"user":{"name":"Ada","address":{"city":"London","zip":null}},"tags":[{"label":"math","note":null}]}`,
			received:   `{"tags":[{"label":"math"}],"user":{"address":{"city":"London"},"name":"Ada"}}`,
			want:       want{parts: []part{textPart(`args {"tags":[{"label":"math"}],"user":{"address":{"city":"London"},"name":"Ada"}}`)}}},
		{id: "05", name: exposed("loose"), tool: "loose", args: `{"labels":{"env":"prod"},"mode":"a"}`,
			received: `{"labels":{"env":"prod"},"mode":"a"}`,
			want:     want{parts: []part{textPart(`args {"labels":{"env":"prod"},"mode":"a"}`)}}},
		{id: "06", name: exposed("png"), tool: "png", args: `{}`,
			want: want{parts: []part{imagePart("image", "")}}},
		{id: "07", name: exposed("svg"), tool: "svg", args: `{}`,
			want: want{parts: []part{textPart(svgPlaceholder)}}},
		{id: "08", name: exposed("audio"), tool: "audio", args: `{}`,
			want: want{parts: []part{textPart(fmt.Sprintf("[audio: audio/wav, %d bytes]", len(wavBytes)))}}},
		{id: "09", name: exposed("link"), tool: "link", args: `{}`,
			want: want{parts: []part{textPart("[resource] q3.pdf <file:///reports/q3.pdf> (application/pdf)")}}},
		{id: "10", name: exposed("embedded_text"), tool: "embedded_text", args: `{}`,
			want: want{parts: []part{textPart("[resource: file:///notes/todo.md]\n- buy milk\n- call Ada")}}},
		{id: "11", name: exposed("embedded_png"), tool: "embedded_png", args: `{}`,
			want: want{parts: []part{imagePart("resource", "file:///img/pixel.png")}}},
		{id: "12", name: exposed("embedded_pdf"), tool: "embedded_pdf", args: `{}`,
			want: want{parts: []part{textPart(fmt.Sprintf("[resource: file:///docs/empty.pdf, application/pdf, %d bytes]", len(pdfBytes)))}}},
		{id: "13", name: exposed("mixed"), tool: "mixed", args: `{}`,
			want: want{parts: []part{textPart("Here is the chart:"), imagePart("image", ""), textPart(svgPlaceholder)}}},
		{id: "14", name: exposed("structured"), tool: "structured", args: `{}`,
			want: want{parts: []part{textPart("22°C and sunny")}, output: weather}},
		{id: "15", name: exposed("structured_only"), tool: "structured_only", args: `{}`,
			want: want{parts: []part{textPart(`{"conditions":"sunny","temperature":22}`)}, output: weather}},
		{id: "16", name: exposed("fail"), tool: "fail", args: `{}`,
			want: want{parts: []part{textPart("disk full")}, isError: true}},
		{id: "21", name: exposed("fail_image"), tool: "fail_image", args: `{}`,
			want: want{parts: []part{textPart("render failed"), imagePart("image", "")}, isError: true}},
		{id: "17", name: exposed("forbidden"), tool: "forbidden", args: `{}`,
			want: want{failed: true, kind: conduit.ErrDenied, failText: "does not allow calling " + exposed("forbidden")}},
		{id: "18", name: exposed("nope"), args: `{}`,
			want: want{failed: true, kind: conduit.ErrUnknownTool, failText: exposed("nope")}},
		{id: "19", name: exposed("echo"), tool: "echo", args: `["hello"]`, notGemini: true,
			want: want{failed: true, kind: conduit.ErrInvalidArguments, failText: exposed("echo")}},
		// Last, so that its halt stops no other call.
		{id: "20", name: exposed("deploy"), tool: "deploy", args: `{}`,
			want: want{failed: true, kind: conduit.ErrDenied, failText: "deploys are frozen"}},
	}
}

func geminiCalls() []modelCall {
	var out []modelCall
	for _, c := range modelCalls() {
		if !c.notGemini {
			out = append(out, c)
		}
	}
	return out
}

// sent are the tools of calls that must reach the server.
func (c modelCall) sent() bool { return !c.want.failed }

// checkExecution checks what every provider's execution must show: one
// result per call, halted by deploy, the failures' kinds, and the
// arguments the server received.
func checkExecution(t *testing.T, k *kit, exec *adapters.Execution, calls []modelCall) {
	t.Helper()
	if len(exec.Results) != len(calls) || len(exec.Errors) != len(calls) {
		t.Fatalf("%d results and %d errors for %d calls", len(exec.Results), len(exec.Errors), len(calls))
	}
	if !exec.Halted {
		t.Errorf("Halted = false; the approver halted %s", exposed("deploy"))
	}
	for i, c := range calls {
		err := exec.Errors[i]
		switch {
		case c.want.failed:
			var ce *conduit.Error
			if !errors.As(err, &ce) || ce.Kind != c.want.kind {
				t.Errorf("call %s (%s): error %v (kind %v), want kind %v", c.id, c.name, err, ce.String(), c.want.kind.String())
			}
		case err != nil:
			t.Errorf("call %s (%s): unexpected error %v", c.id, c.name, err)
		}
	}
	// Each tool's received arguments, in the calls' order.
	wantRecv := map[string][]string{}
	for _, c := range calls {
		if c.sent() && c.received != "" {
			wantRecv[c.tool] = append(wantRecv[c.tool], c.received)
		}
	}
	for tool, want := range wantRecv {
		if got := k.receivedBy(tool); !slices.Equal(got, want) {
			t.Errorf("%s received %q, want %q", tool, got, want)
		}
	}
	for _, tool := range []string{"forbidden", "deploy"} {
		if got := k.receivedBy(tool); len(got) > 0 {
			t.Errorf("%s was sent %q; the policy stops it", tool, got)
		}
	}
}

// runAll runs ExecuteToolCalls on each form of one response, each on a
// fresh kit: the response body as []byte, the SDK struct's value, and
// more SDK values (a pointer to it, the message inside it). Every form
// must give the same results; it returns the results of the SDK value.
func runAll(t *testing.T, p adapters.Provider, o *adapters.ToolsOptions, calls []modelCall, body []byte, value any, more ...any) (*adapters.Listing, *adapters.Execution) {
	t.Helper()
	type form struct {
		name     string
		response any
	}
	forms := []form{{"[]byte body", body}}
	for _, v := range append([]any{value}, more...) {
		forms = append(forms, form{fmt.Sprintf("SDK %T", v), v})
	}
	var (
		listing *adapters.Listing
		base    string
		out     *adapters.Execution
	)
	for i, f := range forms {
		k := newKit(t)
		l := k.list(t, p, o)
		exec, err := adapters.ExecuteToolCalls(t.Context(), k.hub, p, f.response, execOptions(l))
		if err != nil {
			if i == 0 {
				t.Fatalf("ExecuteToolCalls(%s): %v", f.name, err)
			}
			t.Errorf("ExecuteToolCalls(%s): %v", f.name, err)
			continue
		}
		t.Run(f.name, func(t *testing.T) { checkExecution(t, k, exec, calls) })
		got := canon(exec.Results)
		switch i {
		case 0:
			base = got
			listing, out = l, exec
		default:
			if got != base {
				t.Errorf("ExecuteToolCalls(%s) answered differently from the JSON body:\n%s", f.name, diffJSON(base, got))
			}
		}
		if i == 1 {
			listing, out = l, exec
		}
	}
	// The answers checked next are those of the SDK value, or, when it
	// could not be read (reported above), those of the JSON body, so that
	// the SDK shapes of the answers are still checked.
	return listing, out
}
