package adapters_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/internal/render"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares v, as indented JSON, with testdata/<provider>/<name>, or
// rewrites the file under -update.
func golden(t *testing.T, p adapters.Provider, name string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", p.String(), name)
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", path, diff(string(want), buf.String()))
	}
}

// diff shows the first differing lines.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, wl, gl)
		}
	}
	return "(same lines)"
}

func readJSON(t testing.TB, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// deepCopy copies a decoded JSON value through JSON.
func deepCopy(t testing.TB, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// outcome is what a golden file records of one Execution.
type outcome struct {
	Response any              `json:"response,omitempty"`
	Calls    []goldenCall     `json:"calls"`
	Results  []map[string]any `json:"results"`
	Errors   []string         `json:"errors"`
	Halted   bool             `json:"halted"`
	// Sent lists the tool calls the servers received, sorted (calls run
	// concurrently): what a rejected call must never add to.
	Sent []string `json:"sent"`
}

type goldenCall struct {
	Index  int            `json:"index"`
	ID     string         `json:"id"`
	Name   string         `json:"name"`
	Server string         `json:"server"`
	Tool   string         `json:"tool"`
	Args   map[string]any `json:"args"`
}

func record(exec *adapters.Execution) outcome {
	o := outcome{Results: exec.Results, Halted: exec.Halted, Calls: []goldenCall{}}
	for _, c := range exec.Calls {
		o.Calls = append(o.Calls, goldenCall{c.Index, c.ID, c.Name, c.Server, c.Tool, c.Args})
	}
	for _, err := range exec.Errors {
		s := ""
		if err != nil {
			var ce *conduit.Error
			errors.As(err, &ce)
			s = ce.String() + ": " + render.ErrorText(err)
		}
		o.Errors = append(o.Errors, s)
	}
	return o
}

// answerIDs returns the ids the answers are keyed by, read back from the
// conversation they join; an answer without one (Gemini) reads as its
// name.
func answerIDs(p adapters.Provider, results []map[string]any) []string {
	var ids []string
	for _, a := range adaptertest.FakeOf(p).Answered(p.Wire().Answers(results)) {
		ids = append(ids, a.ID)
	}
	return ids
}

// execute runs ExecuteToolCalls and checks what holds for every
// execution: the response is not modified, every call is answered in the
// model's order keyed by its id, the pure ToolCalls function agrees on
// what is rejected, and rejected calls reach no server.
func execute(t *testing.T, src conduit.Source, p adapters.Provider, response map[string]any, o *adapters.ExecOptions, sent func() []string) (*adapters.Execution, outcome) {
	t.Helper()
	before := deepCopy(t, response)
	var sentBefore []string
	if sent != nil {
		sentBefore = sent()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	exec, err := adapters.ExecuteToolCalls(ctx, src, p, response, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(any(response), before) {
		t.Errorf("ExecuteToolCalls modified the response")
	}
	ts := o.ToolSet
	calls, rejected, err := p.ToolCalls(response, ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(exec.Results) != len(calls)+len(rejected) {
		t.Fatalf("%d results for %d calls and %d rejected", len(exec.Results), len(calls), len(rejected))
	}
	// The ids, in order, as the model wrote them.
	raws, _ := p.Parse(response)
	ids := answerIDs(p, exec.Results)
	if len(ids) != len(raws) {
		t.Fatalf("%d answers read back for %d calls", len(ids), len(raws))
	}
	for i, r := range raws {
		want := r.ID
		if want == "" {
			want = r.Name
		}
		if ids[i] != want {
			t.Errorf("result %d is keyed by %q, want %q", i, ids[i], want)
		}
	}
	j := 0
	for i, res := range exec.Results {
		e := exec.Errors[i]
		if ce := (*conduit.Error)(nil); errors.As(e, &ce) && (ce.Kind == conduit.ErrUnknownTool || (ce.Kind == conduit.ErrInvalidArguments && isRejected(exec, i))) {
			if j >= len(rejected) || !reflect.DeepEqual(res, rejected[j]) {
				t.Errorf("result %d: ToolCalls rejected it differently", i)
			}
			j++
		}
	}
	if _, err := json.Marshal(exec.Results); err != nil {
		t.Errorf("results do not marshal: %v", err)
	}
	out := record(exec)
	if sent != nil {
		out.Sent = sent()[len(sentBefore):]
		sortStrings(out.Sent)
	}
	return exec, out
}

// isRejected reports whether call i never resolved (it is not in Calls).
func isRejected(exec *adapters.Execution, i int) bool {
	for _, c := range exec.Calls {
		if c.Index == i {
			return false
		}
	}
	return true
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// A scripted call, as a model would write it, in no provider's shape.
type scripted struct {
	id, name string
	args     any
	// raw, for OpenAI, is the arguments string as sent (invalid JSON);
	// otherwise args is encoded.
	raw *string
}

func rawArgs(s string) *string { return &s }

// script writes calls as a response of provider p, as the provider's fake
// writes it and json.Unmarshal would have decoded it.
func script(p adapters.Provider, calls ...scripted) map[string]any {
	raws := make([]toolcall.Raw, len(calls))
	for i, c := range calls {
		raws[i] = toolcall.Raw{ID: c.id, Name: c.name, Args: c.args}
		if c.raw != nil {
			raws[i].Args = *c.raw
		}
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(canon(adaptertest.FakeOf(p).Response("I'll run these.", raws...))), &out); err != nil {
		panic(err)
	}
	return out
}

// docsServer offers the functions of the providers' documented examples,
// each answering with its name and the arguments it received.
func docsServer(t testing.TB) (*conduit.Client, func() []string) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1.0.0"}, nil)
	var l lab
	l.args = map[string][]map[string]any{}
	tools := map[string]map[string]any{
		"get_weather":         obj(map[string]any{"location": str, "unit": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}}}, "location"),
		"get_time":            obj(map[string]any{"timezone": str}, "timezone"),
		"get_current_weather": obj(map[string]any{"location": str, "unit": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}}}, "location"),
		"send_email":          obj(map[string]any{"to": str, "body": str}, "to", "body"),
		"set_light_values":    obj(map[string]any{"brightness": map[string]any{"type": "integer"}, "color_temp": map[string]any{"type": "string", "enum": []any{"daylight", "cool", "warm"}}}, "brightness", "color_temp"),
		"power_disco_ball":    obj(map[string]any{"power": map[string]any{"type": "boolean"}}, "power"),
		"start_music":         obj(map[string]any{"energetic": map[string]any{"type": "boolean"}, "loud": map[string]any{"type": "boolean"}}, "energetic", "loud"),
		"dim_lights":          obj(map[string]any{"brightness": map[string]any{"type": "number"}}, "brightness"),
		"get_temp_data":       obj(map[string]any{"location": str, "unit": map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}}}, "location"),
		"top_song":            obj(map[string]any{"sign": str}, "sign"),
	}
	for name, schema := range tools {
		srv.AddTool(&mcp.Tool{Name: name, Description: "The documentation's " + name + ".", InputSchema: schema},
			l.handler(toolDef{name: name, handle: func(_ context.Context, _ *mcp.CallToolRequest, a map[string]any) *mcp.CallToolResult {
				return text(name + " " + canon(a))
			}}))
	}
	tr, _ := connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := conduit.NewClient(ctx, conduit.Server{ID: "docs", Transport: tr}, &conduit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl, l.sent
}

// TestGoldenDocs runs the providers' own documented responses against a
// server offering the documented functions.
func TestGoldenDocs(t *testing.T) {
	cl, sent := docsServer(t)
	for _, p := range adapters.Providers() {
		files, _ := filepath.Glob(filepath.Join("testdata", p.String(), "doc_*.json"))
		if len(files) == 0 {
			t.Fatalf("no documented examples for %v", p)
		}
		for _, f := range files {
			if strings.HasSuffix(f, ".golden.json") {
				continue
			}
			name := strings.TrimSuffix(filepath.Base(f), ".json")
			t.Run(p.String()+"/"+name, func(t *testing.T) {
				listing, err := adapters.Tools(context.Background(), cl, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				response := readJSON(t, f)
				exec, out := execute(t, cl, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, NullPaths: listing.NullPaths}, sent)
				for i, e := range exec.Errors {
					if e != nil {
						t.Errorf("documented call %d failed: %v", i, e)
					}
				}
				// The same response as bytes, as the SDK's raw body, gives
				// the same answers.
				data, _ := os.ReadFile(f)
				exec2, err := adapters.ExecuteToolCalls(context.Background(), cl, p, data, &adapters.ExecOptions{ToolSet: listing.ToolSet, NullPaths: listing.NullPaths})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(deepCopy(t, exec.Results), deepCopy(t, exec2.Results)) {
					t.Errorf("the response as []byte is answered differently")
				}
				golden(t, p, name+".golden.json", out)
			})
		}
	}
}

// resultsScript is the Results table of the spec, as one model turn.
func resultsScript() []scripted {
	calls := []scripted{
		{id: "call_unknown", name: "lab__nope", args: map[string]any{}},
		{id: "call_notobject", name: "lab__echo", args: []any{"not", "an", "object"}},
		{id: "call_ok", name: "lab__echo", args: map[string]any{"message": "hi"}},
		{id: "call_iserror", name: "lab__fail", args: map[string]any{}},
		{id: "call_iserror_empty", name: "lab__fail_empty", args: map[string]any{}},
		{id: "call_denied_policy", name: "lab__secret", args: map[string]any{}},
		{id: "call_denied_approver", name: "lab__deploy", args: map[string]any{}},
		{id: "call_timeout", name: "lab__sleep", args: map[string]any{}},
		{id: "call_unavailable", name: "gone__ping", args: map[string]any{}},
		// Arguments as text: OpenAI's arguments string (here, invalid
		// JSON); a JSON string in the others' input and args.
		{id: "call_badjson", name: "lab__echo", raw: rawArgs(`{"message": "hi`)},
		// JSON null in every provider's shape: not an object either.
		{id: "call_null", name: "lab__echo"},
	}
	return calls
}

// TestGoldenResults covers every row of the spec's Results table for every
// provider: unknown tool and non-object arguments (answered, nothing
// sent), completed calls (isError included), and failures (denied by the
// policy and by an approver, timed out, server unavailable).
func TestGoldenResults(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			hub, l, gone := labHub(t, hubOpts{})
			listing, err := adapters.Tools(context.Background(), hub, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			takeDown(t, hub, gone)
			response := script(p, resultsScript()...)
			exec, out := execute(t, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, NullPaths: listing.NullPaths,
				// Web output is in the model's context: lab/secret is denied.
				// The time limit is every call's: the sleep, which lasts
				// until the test ends, reaches it, and no other may.
				TurnOptions: adapters.TurnOptions{CallTimeout: 5 * time.Second, Taint: []string{"web"}}}, l.sent)
			out.Response = response
			wantKinds := map[string]*conduit.Error{
				"call_unknown": conduit.ErrUnknownTool, "call_notobject": conduit.ErrInvalidArguments,
				"call_denied_policy": conduit.ErrDenied, "call_denied_approver": conduit.ErrDenied,
				"call_timeout": conduit.ErrTimeout, "call_unavailable": conduit.ErrUnavailable,
				"call_badjson": conduit.ErrInvalidArguments, "call_null": conduit.ErrInvalidArguments,
			}
			for i, c := range resultsScript() {
				want := wantKinds[c.id]
				var ce *conduit.Error
				if isErr := errors.As(exec.Errors[i], &ce); isErr != (want != nil) || isErr && ce.Kind != want {
					t.Errorf("%s: error %v, want kind %v", c.id, exec.Errors[i], want.String())
				}
			}
			// Only the calls that resolved and were allowed reach the
			// server: echo, fail, fail_empty and sleep.
			if got := strings.Join(out.Sent, ","); got != "echo,fail,fail_empty,sleep" {
				t.Errorf("the lab server received %s", got)
			}
			select {
			case <-l.cancelled:
			case <-time.After(30 * time.Second):
				t.Error("the timed-out call's handler context was never cancelled")
			}
			golden(t, p, "results.golden.json", out)
		})
	}
}

// mediaTools are the lab tools returning one kind of content each.
var mediaTools = []string{"text", "png", "jpeg", "gif", "webp", "svg", "wav", "aac", "link",
	"embedded_text", "embedded_png", "embedded_pdf", "mixed", "structured", "structured_only"}

// TestGoldenMedia covers every cell of the spec's Media table for every
// provider, with the default shaping for a model.
func TestGoldenMedia(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			hub, l, _ := labHub(t, hubOpts{noGone: true})
			listing, err := adapters.Tools(context.Background(), hub, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			var calls []scripted
			for _, name := range mediaTools {
				calls = append(calls, scripted{id: "call_" + name, name: "lab__" + name, args: map[string]any{}})
			}
			response := script(p, calls...)
			exec, out := execute(t, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet}, l.sent)
			for i, e := range exec.Errors {
				if e != nil {
					t.Errorf("%s: %v", mediaTools[i], e)
				}
			}
			// The link tool's file:///reports/q3.pdf is answered as a
			// link: the answers are made when the calls have returned.
			if n := l.reads.Load(); n != 0 {
				t.Errorf("a resource link was fetched %d times", n)
			}
			out.Response = response
			golden(t, p, "media.golden.json", out)
		})
	}
}

// TestGoldenStructured answers the structured-content tools under every
// structured mode, for every provider.
func TestGoldenStructured(t *testing.T) {
	modes := []struct {
		name string
		mode toolcall.Structured
	}{{"default", toolcall.StructuredDefault}, {"auto", toolcall.StructuredAuto}, {"prefer", toolcall.StructuredPrefer},
		{"append", toolcall.StructuredAppend}, {"ignore", toolcall.StructuredIgnore}}
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			hub, _, _ := labHub(t, hubOpts{noGone: true})
			listing, err := adapters.Tools(context.Background(), hub, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			response := script(p,
				scripted{id: "call_structured", name: "lab__structured", args: map[string]any{}},
				scripted{id: "call_structured_only", name: "lab__structured_only", args: map[string]any{}},
				scripted{id: "call_fail_structured", name: "lab__fail_structured", args: map[string]any{}},
			)
			byMode := map[string][]map[string]any{}
			for _, m := range modes {
				exec, _ := execute(t, hub, p, response, &adapters.ExecOptions{ToolSet: listing.ToolSet, TurnOptions: adapters.TurnOptions{Answers: toolcall.AnswerOptions{Structured: m.mode}}}, nil)
				byMode[m.name] = exec.Results
			}
			golden(t, p, "structured.golden.json", map[string]any{"response": response, "results": byMode})
		})
	}
}

// TestGoldenTools lists the lab server for every provider.
func TestGoldenTools(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			hub, _, _ := labHub(t, hubOpts{})
			type listed struct {
				Tools     []map[string]any             `json:"tools"`
				Fallbacks []string                     `json:"fallbacks,omitempty"`
				Excluded  []string                     `json:"excluded,omitempty"`
				NullPaths map[string][]driver.NullPath `json:"null_paths,omitempty"`
				Warnings  []toolcall.Warning           `json:"warnings,omitempty"`
			}
			list := func(o *adapters.ToolsOptions) listed {
				l, err := adapters.Tools(context.Background(), hub, p, o)
				if err != nil {
					t.Fatal(err)
				}
				if len(l.NullPaths) == 0 {
					l.NullPaths = nil
				}
				return listed{l.Tools, l.Fallbacks, l.Excluded, l.NullPaths, l.Warnings}
			}
			// Every listing option for every provider: one a provider
			// does not use leaves its listing as the default one.
			out := map[string]listed{}
			for name, o := range map[string]adapters.ListingOptions{
				"default":        {},
				"cache_last":     {CacheLast: true},
				"cache_last_ttl": {CacheLast: true, CacheTTL: "1h"},
				"strict_on":      {Strict: driver.StrictOn},
				"strict_off":     {Strict: driver.StrictOff},
			} {
				out[name] = list(&adapters.ToolsOptions{Listing: o})
			}
			golden(t, p, "tools.golden.json", out)
		})
	}
}
