package toolcall_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestDescription(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "Gets the weather.", "Gets the weather."},
		{"whitespace kept", "Line one.\n\tLine two.\r\nLine  three.\u00a0Non-breaking.", "Line one.\n\tLine two.\r\nLine  three.\u00a0Non-breaking."},
		{"zero width", "a\u200bb\u200cc\u200dd\u2060e\ufeff", "abcde"},
		{"bidi controls", "safe\u202edangerous\u202c \u2066x\u2069 \u200e\u200f\u061c", "safedangerous x "},
		{"tag characters", "hi\U000E0001\U000E0049\U000E0047\U000E004E\U000E007F there", "hi there"},
		{"unassigned tags", "a\U000E0000\U000E0002b", "ab"},
		{"variation selectors", "star\ufe0f\ufe00 \U000E0100\U000E01EFend", "star end"},
		{"soft hyphen", "in\u00advisible", "invisible"},
		{"other format characters", "a\u180eb\u2064c\ufff9d\U0001D173e", "abcde"},
		{"controls", "a\x00b\x07c\x1bd\x7fe\u0085f", "abcdef"},
		{"line separators", "a\u2028b\u2029c", "abc"},
		{"hangul fillers and joiner", "a\u115fb\u3164c\u034fd", "abcd"},
		{"other default-ignorables", "a\u17b4b\u180bc\u180fd\ufff0e\U000E0080f\U000E0FFFg", "abcdefg"},
		{"invalid utf-8", "a\xffb", "a\ufffdb"},
		{"emoji kept", "ok 👍 ✓", "ok 👍 ✓"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		if got := toolcall.Description(tt.in); got != tt.want {
			t.Errorf("%s: Description(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestDescriptionCap(t *testing.T) {
	for _, s := range []string{
		strings.Repeat("a", 5000),
		"x" + strings.Repeat("é", 3000),       // 2-byte
		"xy" + strings.Repeat("€", 2000),      // 3-byte
		"xyz" + strings.Repeat("😀", 2000),     // 4-byte
		strings.Repeat("a\u200b", 3000),       // shrinks to 3000 bytes: no cut
		strings.Repeat("\u200b", 2000) + "ok", // long, but all invisible
	} {
		got := toolcall.Description(s)
		if len(got) > toolcall.MaxDescription {
			t.Errorf("%d bytes", len(got))
		}
		if !utf8.ValidString(got) {
			t.Errorf("cut inside a character")
		}
		if len(got) < toolcall.MaxDescription-3 && len(toolcall.Description(strings.ReplaceAll(s, "\u200b", ""))) != len(got) {
			t.Errorf("cut too short: %d bytes", len(got))
		}
	}
	if got := toolcall.Description(strings.Repeat("a\u200b", 3000)); got != strings.Repeat("a", 3000) {
		t.Errorf("got %d bytes", len(got))
	}
	if got := toolcall.Description(strings.Repeat("\u200b", 2000) + "ok"); got != "ok" {
		t.Errorf("got %q", got)
	}
}

func TestSchemaMap(t *testing.T) {
	if got := toolcall.SchemaMap(nil); !reflect.DeepEqual(got, map[string]any{"type": "object", "properties": map[string]any{}}) {
		t.Errorf("nil: %v", got)
	}
	in := map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string"}}}
	got := toolcall.SchemaMap(in)
	if got["type"] != "object" || in["type"] != nil {
		t.Errorf("got %v, input %v", got, in)
	}
	typed := struct {
		Type string `json:"type"`
	}{"object"}
	if got := toolcall.SchemaMap(typed); got["type"] != "object" {
		t.Errorf("typed: %v", got)
	}
}

func toolSet(names ...string) *conduit.ToolSet {
	var tools []*mcp.Tool
	for _, n := range names {
		tools = append(tools, &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}})
	}
	return conduit.NewToolSet(nil, conduit.ServerTools{Server: "s", Tools: tools})
}

func TestResolve(t *testing.T) {
	ts := toolSet("echo")
	raws := []toolcall.Raw{
		{ID: "1", Name: "echo", Args: map[string]any{"a": 1.0}},
		{ID: "2", Name: "nope", Args: map[string]any{}},
		{ID: "3", Name: "echo", Args: []any{1.0}},
		{ID: "4", Name: "echo", Args: "str"},
		{ID: "5", Name: "echo"},
		{ID: "6", Name: "echo", Err: errors.New("the tool_use block has no id")},
		{ID: "7", Name: "echo", Args: json.RawMessage(`{"b":2}`)},
		{ID: "8", Name: "echo", Args: json.RawMessage(`[1]`)},
		{ID: "9", Name: "nope", Err: errors.New("bad")},
		// JSON null is not an object; an empty arguments string is none.
		{ID: "10", Name: "echo", Args: json.RawMessage(`null`)},
		{ID: "11", Name: "echo", Args: json.RawMessage(` `)},
		{ID: "12", Name: "echo", Args: json.RawMessage(`{"b":`)},
	}
	calls := toolcall.Resolve(raws, ts)
	want := []*conduit.Error{nil, conduit.ErrUnknownTool, conduit.ErrInvalidArguments, conduit.ErrInvalidArguments,
		nil, conduit.ErrInvalidArguments, nil, conduit.ErrInvalidArguments, conduit.ErrUnknownTool,
		conduit.ErrInvalidArguments, nil, conduit.ErrInvalidArguments}
	for i, c := range calls {
		if c.Index != i || c.ID != calls[i].ID {
			t.Errorf("call %d: index %d", i, c.Index)
		}
		if want[i] == nil {
			if c.Err != nil || c.Args == nil || c.Server != "s" || c.Tool != "echo" || c.Def == nil {
				t.Errorf("call %d: %+v", i, c)
			}
			continue
		}
		if c.Err == nil || c.Err.Kind != want[i] {
			t.Errorf("call %d: %v, want %v", i, c.Err, want[i])
		}
	}
	if calls[6].Args["b"] != 2.0 {
		t.Errorf("raw args: %v", calls[6].Args)
	}
	ok, rejected, err := toolcall.ToolCalls(raws, nil, ts, func(c toolcall.Call, res *mcp.CallToolResult, err error, _ *toolcall.AnswerOptions) map[string]any {
		if res != nil || err != c.Err {
			t.Errorf("answer of %s: %v, %v", c.ID, res, err)
		}
		return map[string]any{"id": c.ID}
	})
	if calls[9].Err.Message != "Invalid arguments for echo: the arguments must be a JSON object." {
		t.Errorf("null: %q", calls[9].Err.Message)
	}
	if len(ok) != 4 || len(rejected) != 8 || rejected[0]["id"] != "2" {
		t.Errorf("ToolCalls: %d ok, %v rejected, %v", len(ok), rejected, err)
	}
	if _, _, err := toolcall.ToolCalls(nil, errors.New("unreadable"), ts, nil); err == nil {
		t.Error("ToolCalls dropped the parse error")
	}
}

func TestParseStructured(t *testing.T) {
	for s, want := range map[string]toolcall.Structured{"": toolcall.StructuredDefault, "auto": toolcall.StructuredAuto,
		"prefer": toolcall.StructuredPrefer, "append": toolcall.StructuredAppend, "ignore": toolcall.StructuredIgnore} {
		if got, err := toolcall.ParseStructured(s); err != nil || got != want {
			t.Errorf("%q: %v %v", s, got, err)
		}
	}
	if _, err := toolcall.ParseStructured("always"); err == nil {
		t.Error("no error")
	}
}

func TestResolveNamespace(t *testing.T) {
	hub := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true},
		conduit.ServerTools{Server: "github", Tools: []*mcp.Tool{{Name: "create_issue"}}},
		conduit.ServerTools{Server: "slack", Tools: []*mcp.Tool{{Name: "post"}}})
	raws := []toolcall.Raw{
		{ID: "1", Namespace: "github", Name: "create_issue"},         // shortened in its namespace
		{ID: "2", Namespace: "github", Name: "github__create_issue"}, // or not
		{ID: "3", Namespace: "slack", Name: "create_issue"},          // another server's
		{ID: "4", Namespace: "slack", Name: "github__create_issue"},  // another server's, by its exposed name
		{ID: "5", Namespace: "nope", Name: "post"},
		{ID: "6", Name: "slack__post"},
	}
	calls := toolcall.Resolve(raws, hub)
	for i, want := range []string{"github__create_issue", "github__create_issue", "", "", "", "slack__post"} {
		c := calls[i]
		if want == "" {
			if c.Err == nil || c.Err.Kind != conduit.ErrUnknownTool || c.Def != nil {
				t.Errorf("call %s: %+v, want an unknown tool", c.ID, c)
			}
			continue
		}
		if c.Err != nil || c.Name != want || c.Def == nil {
			t.Errorf("call %s: %+v, want %s", c.ID, c, want)
		}
	}
}
