package codemode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/evanw/esbuild/pkg/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// realTools are the tool definitions of real servers the benchmarks and
// the strict tests use (bench/testdata/servers).
func realTools(tb testing.TB) []*conduit.Tool {
	tb.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "bench", "testdata", "servers", "*.json"))
	if len(files) == 0 {
		tb.Fatal("no server definitions under bench/testdata/servers")
	}
	var out []*conduit.Tool
	for _, f := range files {
		if filepath.Base(f) == "index.json" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var doc struct {
			Tools []*mcp.Tool `json:"tools"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		server := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, t := range doc.Tools {
			out = append(out, &conduit.Tool{Tool: t, Server: server, Exposed: server + "__" + t.Name})
		}
	}
	return out
}

// checkTypeScript fails when decl is not TypeScript that parses.
func checkTypeScript(tb testing.TB, decl string) {
	tb.Helper()
	r := api.Transform(decl, api.TransformOptions{Loader: api.LoaderTS})
	if len(r.Errors) > 0 {
		tb.Fatalf("the declarations do not parse: %s at line %d\n%s", r.Errors[0].Text, r.Errors[0].Location.Line, decl)
	}
}

func TestDeclarationsOfRealServers(t *testing.T) {
	tools := realTools(t)
	decl := Declarations(tools)
	checkTypeScript(t, decl)
	by, _, skipped := bindings(tools)
	if len(by)+len(skipped) != len(tools) {
		t.Fatalf("%d bound, %d skipped of %d", len(by), len(skipped), len(tools))
	}
	for b := range by {
		if !strings.Contains(decl, "  "+b.method+"(args: ") {
			t.Fatalf("%s.%s is not declared", b.global, b.method)
		}
	}
	t.Logf("%d tools, %d bytes of declarations", len(tools), len(decl))
}

func TestMangle(t *testing.T) {
	for in, want := range map[string]string{"get-sum": "get_sum", "a.b/c": "a_b_c", "9lives": "_9lives", "Math": "_Math",
		"console": "_console", "": "_", "read_doc": "read_doc", "naïve": "na_ve", "constructor": "_constructor"} {
		if got := Mangle(in); got != want {
			t.Errorf("Mangle(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzDeclarations: whatever a server's schemas, names and descriptions,
// the declarations are TypeScript that parses, and nothing panics.
func FuzzDeclarations(f *testing.F) {
	for i, t := range realTools(f) {
		if i%3 != 0 {
			continue // a third of them keeps the seed corpus quick
		}
		in, _ := json.Marshal(t.InputSchema)
		out, _ := json.Marshal(t.OutputSchema)
		f.Add(t.Name, t.Description, in, out)
	}
	f.Add("x*/y", "*/ evil \n description", []byte(`{"type":"object","properties":{"a b":{"enum":["*/",1,null]},"c":{"anyOf":[{"type":"array","items":{"type":["string","null"]}}]}}}`), []byte(`{"const":"x"}`))
	f.Fuzz(func(t *testing.T, name, desc string, in, out []byte) {
		var is, os any
		if json.Unmarshal(in, &is) != nil {
			is = map[string]any{"type": "object"}
		}
		_ = json.Unmarshal(out, &os)
		tool := &mcp.Tool{Name: name, Description: desc, InputSchema: is}
		if os != nil {
			tool.OutputSchema = os
		}
		decl := Declarations([]*conduit.Tool{{Tool: tool, Server: "s", Exposed: "s__" + name}})
		checkTypeScript(t, decl)
	})
}
