package conduit

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestResolve(t *testing.T) {
	ts := NewToolSet(&ToolSetOptions{Namespace: true}, ServerTools{Server: "s", Tools: []*mcp.Tool{{Name: "t"}}})
	type typed struct {
		A int `json:"a"`
	}
	for _, tc := range []struct {
		name string
		args any
		want map[string]any // nil: invalid arguments
	}{
		{"nil is no arguments", nil, map[string]any{}},
		{"a map, as it is", map[string]any{"a": 1.0}, map[string]any{"a": 1.0}},
		{"JSON text", json.RawMessage(`{"a":1}`), map[string]any{"a": 1.0}},
		{"bytes", []byte(` {"a":1} `), map[string]any{"a": 1.0}},
		{"a string of JSON", `{"a":1}`, map[string]any{"a": 1.0}},
		{"a struct", typed{1}, map[string]any{"a": 1.0}},
		{"empty text is no arguments", json.RawMessage(""), map[string]any{}},
		{"blank text is no arguments", json.RawMessage(" \n"), map[string]any{}},
		{"JSON null", json.RawMessage("null"), nil},
		{"a JSON array", json.RawMessage("[1]"), nil},
		{"a JSON string", json.RawMessage(`"x"`), nil},
		{"invalid JSON", json.RawMessage(`{"a":`), nil},
		{"not JSON at all", "a=1", nil},
		{"a Go slice", []any{1}, nil},
		{"unmarshalable", make(chan int), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool, args, err := ts.Resolve("s__t", tc.args)
			if tool == nil || tool.Name != "t" {
				t.Fatalf("tool %v", tool)
			}
			if tc.want == nil {
				e := wantKind(t, err, ErrInvalidArguments)
				if e.Server != "s" || e.Tool != "t" || e.Message == "" || args != nil {
					t.Fatalf("%+v, args %v", e, args)
				}
				return
			}
			if err != nil || len(args) != len(tc.want) || (len(tc.want) > 0 && args["a"] != tc.want["a"]) {
				t.Fatalf("args %v, err %v", args, err)
			}
		})
	}
	_, _, err := ts.Resolve("s__nope", nil)
	if e := wantKind(t, err, ErrUnknownTool); e.Message != `Unknown tool "s__nope": it is not among the tools offered.` {
		t.Fatalf("%q", e.Message)
	}
	if !errors.Is(err, ErrUnknownTool) {
		t.Fatal("not ErrUnknownTool")
	}
}
