package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStrict(t *testing.T) {
	schema := `{"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "default": 10}}, "required": ["q"]}`
	for _, from := range []string{"stdin", "file"} {
		var r result
		if from == "stdin" {
			r = conduit(t, runOpts{stdin: strings.NewReader(schema)}, "strict")
		} else {
			dir := writeFile(t, "schema.json", schema)
			r = conduit(t, runOpts{dir: dir}, "strict", filepath.Join(dir, "schema.json"))
		}
		expect(t, r, 0)
		var out struct {
			Schema    map[string]any `json:"schema"`
			NullPaths [][]string     `json:"null_paths"`
		}
		decode(t, r, &out)
		limit := out.Schema["properties"].(map[string]any)["limit"].(map[string]any)
		if len(out.NullPaths) != 1 || out.NullPaths[0][0] != "limit" || limit["default"] != nil || out.Schema["additionalProperties"] != false {
			t.Errorf("%s: %s", from, r.stdout)
		}
	}
	r := conduit(t, runOpts{stdin: strings.NewReader(`{"type": "object", "properties": {}}`)}, "strict")
	expect(t, r, 0)
	if !strings.Contains(r.stdout, `"null_paths": []`) {
		t.Errorf("want an empty null_paths list: %s", r.stdout)
	}
}

func TestStrictErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}`, "/properties/a"},
		{`{"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}`, "open map"},
		{`{"type": "string"}`, "not convertible"},
		{`not json`, "the schema is not a JSON object"},
		{`[]`, "the schema is not a JSON object"},
	} {
		r := conduit(t, runOpts{stdin: strings.NewReader(tc.schema)}, "strict")
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("%s: want exit 2 with %q, got %s", tc.schema, tc.want, r)
		}
	}
	r := conduit(t, runOpts{}, "strict", filepath.Join(os.TempDir(), "no-such-schema.json"))
	expect(t, r, 2, "reading the schema")
}
