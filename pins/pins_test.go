package pins

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/internal/digest"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCanonicalNumbers(t *testing.T) {
	// RFC 8785, appendix B.
	for _, c := range []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	} {
		got, err := canonicalNumber(math.Float64frombits(c.bits))
		if err != nil || got != c.want {
			t.Errorf("%#016x: %q %v, want %q", c.bits, got, err, c.want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := canonicalNumber(f); err == nil {
			t.Errorf("%v: no error", f)
		}
	}
}

func TestCanonicalJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// RFC 8785, 3.2.2.2: strings.
		{`"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/"`, `"€$\u000f\nA'B\"\\\\\"/"`},
		// RFC 8785, 3.2.3: members sorted by UTF-16 code units.
		{`{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		// RFC 8785, 3.2.4 (whitespace removed, numbers and literals).
		{`{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}`,
			`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		// What encoding/json would escape, and the short escapes.
		{`"<&>\u2028\u2029\b\f\t\u007f\u001f"`, "\"<&>\u2028\u2029\\b\\f\\t\u007f\\u001f\""},
		{`[]`, `[]`},
		{`{}`, `{}`},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.in), &v); err != nil {
			t.Fatal(err)
		}
		got, err := CanonicalJSON(v)
		if err != nil || string(got) != c.want {
			t.Errorf("%s:\n got %s %v\nwant %s", c.in, got, err, c.want)
		}
	}
	deep := any("x")
	for range maxCanonicalDepth + 1 {
		deep = []any{deep}
	}
	if _, err := CanonicalJSON(deep); err == nil {
		t.Error("no error for a value nested too deeply")
	}
}

// A definition pins the same whatever form its schema takes, and a change
// to any field a model reads changes the digest.
func TestToolDigest(t *testing.T) {
	type args struct {
		Q     string `json:"q" jsonschema:"the query"`
		Limit int    `json:"limit,omitempty"`
	}
	schema, err := jsonschema.For[args](nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(schema)
	var decoded map[string]any
	json.Unmarshal(raw, &decoded)
	yes := true
	base := func(s any) *mcp.Tool {
		return &mcp.Tool{Name: "search", Title: "Search", Description: "Finds.", InputSchema: s,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &yes}}
	}
	want, err := ToolDigest(base(decoded))
	if err != nil {
		t.Fatal(err)
	}
	// Key order and spacing of raw JSON do not matter.
	reordered := strings.Replace(string(raw), "{", "{ ", 1)
	for name, s := range map[string]any{"struct": schema, "raw": json.RawMessage(raw), "bytes": []byte(reordered)} {
		if got, err := ToolDigest(base(s)); err != nil || got != want {
			t.Errorf("%s schema: %s %v, want %s", name, got, err, want)
		}
	}
	// _meta and icons are not pinned.
	tool := base(decoded)
	tool.Meta = mcp.Meta{"x": 1}
	tool.Icons = []mcp.Icon{{Source: "https://example.com/i.png"}}
	if got, _ := ToolDigest(tool); got != want {
		t.Error("_meta or icons changed the digest")
	}
	// Everything else is.
	no := false
	changes := map[string]func(*mcp.Tool){
		"name":            func(t *mcp.Tool) { t.Name = "search2" },
		"title":           func(t *mcp.Tool) { t.Title = "" },
		"description":     func(t *mcp.Tool) { t.Description += "\u200b" },
		"input schema":    func(t *mcp.Tool) { t.InputSchema = map[string]any{"type": "object"} },
		"output schema":   func(t *mcp.Tool) { t.OutputSchema = map[string]any{"type": "object"} },
		"annotations":     func(t *mcp.Tool) { t.Annotations = nil },
		"read only":       func(t *mcp.Tool) { t.Annotations.ReadOnlyHint = false },
		"open world":      func(t *mcp.Tool) { t.Annotations.OpenWorldHint = &no },
		"destructive":     func(t *mcp.Tool) { t.Annotations.DestructiveHint = &no },
		"annotation text": func(t *mcp.Tool) { t.Annotations.Title = "S" },
	}
	for name, change := range changes {
		tool := base(decoded)
		ann := *tool.Annotations
		tool.Annotations = &ann
		change(tool)
		if got, _ := ToolDigest(tool); got == want {
			t.Errorf("changing the %s keeps the digest", name)
		}
	}
	// The SDK's wire form of annotations, whatever its MCPGODEBUG, decodes
	// to the same: a false bare hint is the same as none.
	var a1, a2 mcp.ToolAnnotations
	json.Unmarshal([]byte(`{"readOnlyHint": false, "openWorldHint": true}`), &a1)
	json.Unmarshal([]byte(`{"openWorldHint": true}`), &a2)
	t1, t2 := base(decoded), base(decoded)
	t1.Annotations, t2.Annotations = &a1, &a2
	if d1, _ := ToolDigest(t1); d1 != mustDigest(t, t2) {
		t.Error("an absent false hint changes the digest")
	}
	canon, _ := CanonicalTool(base(decoded))
	if !strings.HasPrefix(string(canon), `{"annotations":{"idempotentHint":false,"openWorldHint":true,"readOnlyHint":true},"description":"Finds.","inputSchema":{`) {
		t.Errorf("canonical %s", canon)
	}
}

func mustDigest(t *testing.T, tool *mcp.Tool) string {
	t.Helper()
	d, err := ToolDigest(tool)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestPinsCheck(t *testing.T) {
	pinned := New()
	if err := pinned.Pin("s", []*mcp.Tool{defTool("a", "A."), defTool("b", "B."), defTool("dup", "1"), defTool("dup", "2"), nil}); err != nil {
		t.Fatal(err)
	}
	if _, ok := pinned.Digest("s", "dup"); ok {
		t.Error("a name listed twice was pinned")
	}
	drift := pinned.Check("s", []*mcp.Tool{defTool("a", "A."), defTool("b", "B!"), defTool("c", "C.")})
	var got []string
	for _, d := range drift {
		got = append(got, d.Tool+" "+d.Kind.String())
	}
	if !slices.Equal(got, []string{"b changed", "c new"}) {
		t.Errorf("drift %v", got)
	}
	drift = pinned.Check("s", []*mcp.Tool{defTool("a", "A.")})
	if len(drift) != 1 || drift[0].Kind != DriftRemoved || drift[0].Listed != "" || !strings.Contains(drift[0].Diff, `-  "description": "B.",`) {
		t.Errorf("removed: %+v", drift)
	}
	if d := pinned.Check("other", []*mcp.Tool{defTool("a", "A.")}); len(d) != 1 || d[0].Kind != DriftNew || !strings.HasPrefix(d[0].Diff, "--- pinned: none\n") {
		t.Errorf("an unpinned server: %+v", d)
	}
	if err := pinned.Pin("bad__id", nil); err == nil {
		t.Error("an invalid server id was pinned")
	}
	pinned.Forget("s")
	if pinned.Has("s") || len(pinned.Servers()) != 0 {
		t.Error("Forget kept the server")
	}
	var zero Pins // an empty set
	if len(zero.Check("s", []*mcp.Tool{defTool("a", "A.")})) != 1 || zero.Pin("s", []*mcp.Tool{defTool("a", "A.")}) != nil || !zero.Has("s") {
		t.Error("the zero Pins is not an empty set")
	}
}

func TestLockFile(t *testing.T) {
	pinned := New()
	pinned.Pin("web", []*mcp.Tool{
		{Name: "fetch", Description: "Fetches <a> & b\u202e.", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"url": map[string]any{"type": "string"}}}},
	})
	pinned.Pin("empty", nil)
	data, err := pinned.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// Readable: indented, nothing HTML-escaped, hidden characters escaped.
	text := string(data)
	if !strings.Contains(text, `"description": "Fetches <a> & b\u202e.",`) || !strings.Contains(text, "\n            \"type\": \"object\"") {
		t.Errorf("lock file:\n%s", text)
	}
	back, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := back.Marshal()
	if !bytes.Equal(again, data) {
		t.Errorf("round trip:\n%s\nvs\n%s", again, data)
	}
	if !back.Has("empty") || !slices.Equal(back.Servers(), []string{"empty", "web"}) {
		t.Errorf("servers %v", back.Servers())
	}
	d1, _ := pinned.Digest("web", "fetch")
	if d2, _ := back.Digest("web", "fetch"); d1 != d2 {
		t.Error("the digest changed in the round trip")
	}

	entry := func(def, digest string) string {
		return `{"version": 1, "servers": {"web": {"fetch": {"digest": "` + digest + `", "definition": ` + def + `}}}}`
	}
	good := `{"inputSchema": {"type": "object"}, "name": "fetch"}`
	var dv any
	json.Unmarshal([]byte(good), &dv)
	c, _ := CanonicalJSON(dv)
	d := digest.Of(c)
	if _, err := Parse([]byte(entry(good, d))); err != nil {
		t.Fatalf("a good entry: %v", err)
	}
	for _, bad := range []struct{ data, want string }{
		{``, "lock file"},
		{`[]`, "cannot unmarshal"},
		{`{"version": 2, "servers": {}}`, "version 2"},
		{`{"servers": {}}`, "version 0"},
		{`{"version": 1, "servers": {}, "extra": 1}`, "unknown field"},
		{`{"version": 1, "servers": {}} {}`, "after the top-level object"},
		{`{"version": 1, "version": 1, "servers": {}}`, `key "version" appears twice`},
		{`{"version": 1, "servers": {"a__b": {}}}`, "contains"},
		{entry(good, "sha256:"+strings.Repeat("0", 64)), "is not that of the definition"},
		{entry(good, "md5:x"), "lowercase hex"},
		{entry(good, strings.ToUpper(d)), "lowercase hex"},
		{entry(`{"inputSchema": {}, "name": "other"}`, d), `name is "other"`},
		{entry(`{"name": "fetch"}`, d), `no "inputSchema"`},
		{entry(`{"inputSchema": {}, "name": "fetch", "_meta": {}}`, d), `unknown member "_meta"`},
		{entry(`"x"`, d), "must be an object"},
		{entry(`null`, d), "must be an object"},
		{entry(`{"inputSchema": {"a": 1, "a": 2}, "name": "fetch"}`, d), `key "a" appears twice`},
		{`{"version": 1, "servers": {"web": {"fetch": {"digest": "` + d + `"}}}}`, `no "definition"`},
	} {
		_, err := Parse([]byte(bad.data))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.data, err, bad.want)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	path := filepath.Join(t.TempDir(), LockFile)
	os.WriteFile(path, []byte("{"), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a bad file: %v", err)
	}
	if got := LockPath("/etc/conduit/mcp.json"); got != "/etc/conduit/mcp.lock.json" {
		t.Errorf("LockPath = %s", got)
	}
}

func FuzzParsePins(f *testing.F) {
	pinned := New()
	pinned.Pin("web", []*mcp.Tool{defTool("fetch", "Fetches \u200b."), {Name: "n", InputSchema: map[string]any{"type": "object", "x": []any{1.5, true, nil}}}})
	data, _ := pinned.Marshal()
	f.Add(data)
	f.Add([]byte(`{"version": 1, "servers": {}}`))
	f.Add([]byte(`{"version": 1, "servers": {"a": {"b": {"digest": "sha256:00", "definition": {"name": "b", "inputSchema": null}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		// What parses writes a file that parses to the same pins.
		out, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		q, err := Parse(out)
		if err != nil {
			t.Fatalf("the written file does not parse: %v\n%s", err, out)
		}
		again, _ := q.Marshal()
		if !bytes.Equal(out, again) {
			t.Fatalf("not stable:\n%s\n%s", out, again)
		}
	})
}

func TestLineDiff(t *testing.T) {
	a := "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4,\n  \"e\": 5,\n  \"f\": 6,\n  \"g\": 7,\n  \"h\": 8,\n  \"i\": 9\n}"
	b := strings.Replace(strings.Replace(a, `"a": 1`, `"a": 10`, 1), `"i": 9`, `"i": 9,`+"\n  \"j\": 10", 1)
	got := lineDiff("old", "new", a, b)
	want := `--- old
+++ new
@@ -1,5 +1,5 @@
 {
-  "a": 1,
+  "a": 10,
   "b": 2,
   "c": 3,
   "d": 4,
@@ -7,5 +7,6 @@
   "f": 6,
   "g": 7,
   "h": 8,
-  "i": 9
+  "i": 9,
+  "j": 10
 }
`
	if got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	// Changes six lines apart share one hunk.
	if got := lineDiff("old", "new", a, strings.Replace(strings.Replace(b, `"a": 10`, `"a": 1`, 1), `"b": 2,`, `"b": 20,`, 1)); strings.Count(got, "@@ -") != 1 {
		t.Errorf("one hunk:\n%s", got)
	}
	if lineDiff("a", "b", a, a) != "" {
		t.Error("equal texts differ")
	}
	if got := lineDiff("a", "b", "", "x\ny"); got != "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n" {
		t.Errorf("all added:\n%s", got)
	}
}

// A tool whose definition cannot be encoded is left unpinned, and so never
// offered, while the rest of its server's tools are pinned.
func TestPinsUnencodableTool(t *testing.T) {
	bad := &mcp.Tool{Name: "bad", InputSchema: map[string]any{"type": "object", "default": math.NaN()}}
	pinned := New()
	err := pinned.Pin("s", []*mcp.Tool{defTool("a", "A."), bad, defTool("b", "B.")})
	var te *ToolError
	if !errors.As(err, &te) || te.Server != "s" || te.Tool != "bad" || err.Error() != `server s: tool "bad" not pinned: its definition cannot be encoded: number NaN is not JSON` {
		t.Fatalf("Pin: %v", err)
	}
	for _, name := range []string{"a", "b"} {
		if _, ok := pinned.Digest("s", name); !ok {
			t.Errorf("%s is not pinned", name)
		}
	}
	if _, ok := pinned.Digest("s", "bad"); ok {
		t.Error("bad is pinned")
	}
	drift := pinned.Check("s", []*mcp.Tool{defTool("a", "A."), bad, defTool("b", "B.")})
	if len(drift) != 1 || drift[0].Tool != "bad" || drift[0].Kind != DriftNew || !strings.Contains(drift[0].Diff, "cannot be encoded") {
		t.Errorf("drift %+v", drift)
	}
	dg, derr := ToolDigest(bad)
	if d := pinned.Compare("s", bad, dg, derr); d == nil {
		t.Error("the unpinned tool would be offered")
	}
	// Two such tools: both reported.
	err = pinned.Pin("s", []*mcp.Tool{bad, {Name: "worse", InputSchema: map[string]any{"x": math.Inf(1)}}})
	if n := len(unwrapAll(err)); n != 2 || !pinned.Has("s") {
		t.Errorf("two unencodable tools: %d errors, %v", n, err)
	}
}

func unwrapAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return nil
}

func defTool(name, desc string) *mcp.Tool {
	return &mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}
}
