package driver_test

import (
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit/adapters/driver"
)

func TestStripNulls(t *testing.T) {
	paths := []driver.NullPath{
		{"limit"},
		{"o", "y"},
		{"tags", "[]", "note"},
		{"m", "[]", "[]", "v"},
		{"[]"},
		{"deep", "a", "b", "c"},
	}
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"introduced null removed", `{"q":"x","limit":null}`, `{"q":"x"}`},
		{"value kept", `{"q":"x","limit":5}`, `{"q":"x","limit":5}`},
		{"other nulls kept", `{"q":null,"limit":null,"o":{"x":null,"y":null}}`, `{"q":null,"o":{"x":null}}`},
		{"missing keys", `{}`, `{}`},
		{"null parent kept", `{"o":null,"tags":null,"deep":{"a":null}}`, `{"o":null,"tags":null,"deep":{"a":null}}`},
		{"arrays of objects", `{"tags":[{"name":"a","note":null},{"name":"b","note":"n"},null,"s",{"note":null}]}`, `{"tags":[{"name":"a"},{"name":"b","note":"n"},null,"s",{}]}`},
		{"arrays of arrays", `{"m":[[{"v":null,"w":null}],[],[{"v":1}],3]}`, `{"m":[[{"w":null}],[],[{"v":1}],3]}`},
		{"property named []", `{"[]":null}`, `{}`},
		{"wrong shapes", `{"o":"str","tags":{"[]":{"note":null}},"m":{"x":1},"deep":[1,2],"limit":[null]}`, `{"o":"str","tags":{"[]":{}},"m":{"x":1},"deep":[1,2],"limit":[null]}`},
		{"array where an object is expected", `{"o":[{"y":null}]}`, `{"o":[{"y":null}]}`},
		{"deep", `{"deep":{"a":{"b":{"c":null,"d":null}}}}`, `{"deep":{"a":{"b":{"d":null}}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := decode(t, c.in)
			got := driver.StripNulls(args, paths)
			if canonical(t, got) != canonical(t, decode(t, c.want)) {
				t.Errorf("StripNulls = %s, want %s", canonical(t, got), c.want)
			}
			if reflect.ValueOf(got).Pointer() != reflect.ValueOf(args).Pointer() {
				t.Errorf("StripNulls did not work in place")
			}
			got = driver.CompiledStrip(paths)(decode(t, c.in))
			if canonical(t, got) != canonical(t, decode(t, c.want)) {
				t.Errorf("the trie strips to %s, want %s", canonical(t, got), c.want)
			}
			// The conversion's conflict check relies on the trie knowing
			// what StripNulls strips.
			if would, changed := driver.WouldStrip(paths, decode(t, c.in)), canonical(t, decode(t, c.in)) != canonical(t, decode(t, c.want)); would != changed {
				t.Errorf("WouldStrip = %t, but StripNulls changed the value: %t", would, changed)
			}
		})
	}
	if driver.StripNulls(nil, paths) != nil || driver.CompiledStrip(paths)(nil) != nil {
		t.Error("nil args did not stay nil")
	}
	if driver.WouldStrip(paths, nil) {
		t.Error("WouldStrip says nil args would change")
	}
	if got := driver.CompiledStrip(nil)(map[string]any{"a": nil}); len(got) != 1 || driver.WouldStrip(nil, map[string]any{"a": nil}) {
		t.Error("a trie of no paths strips something")
	}
	if got := driver.StripNulls(map[string]any{"a": nil}, []driver.NullPath{{}, nil}); len(got) != 1 {
		t.Error("empty paths stripped something")
	}
	if got := driver.CompiledStrip([]driver.NullPath{{}})(map[string]any{"a": nil}); len(got) != 1 || driver.WouldStrip([]driver.NullPath{{}}, map[string]any{"a": nil}) {
		t.Error("compiled empty path stripped something")
	}
}

// TestStripNullsAfterStrictSchema is the round trip the adapters do: a
// model answer in strict mode, stripped, is what the original schema wants.
func TestStripNullsAfterStrictSchema(t *testing.T) {
	schema := decode(t, `{"type":"object","properties":{
		"q":{"type":"string"},
		"when":{"type":["string","null"]},
		"opt":{"type":["string","null"]},
		"tags":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"note":{"type":"string"}},"required":["name"]}}
	},"required":["q","when","tags"]}`)
	_, paths, err := driver.StrictSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	args := decode(t, `{"q":"x","when":null,"opt":null,"tags":[{"name":"a","note":null}]}`)
	got := canonical(t, driver.StripNulls(args, paths))
	if want := `{"q":"x","tags":[{"name":"a"}],"when":null}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

var benchArgs = `{"owner":"o","repo":"r","title":"t","body":null,"assignees":null,"labels":["a","b"],"milestone":null,"type":"bug",
	"items":[{"name":"a","note":null},{"name":"b","note":"x"},{"name":"c","note":null},{"name":"d","note":null}],
	"meta":{"a":null,"b":{"c":null,"d":1}}}`

var benchPaths = []driver.NullPath{
	{"assignees"}, {"body"}, {"items"}, {"items", "[]", "note"}, {"labels"}, {"meta"}, {"meta", "a"},
	{"meta", "b"}, {"meta", "b", "c"}, {"meta", "b", "d"}, {"milestone"}, {"type"},
}

// BenchmarkStripNulls compares, on argument maps as a strict-mode model
// sends them (every property present, the optional ones often null), a walk
// per path ("walk"), a trie compiled on every call ("trie") and a trie
// compiled once ("precompiled"). Null paths in the corpus of real tools
// under bench/testdata number 3 at the median, 14 at the 99th percentile
// and 15 at most, at most 4 elements long.
func BenchmarkStripNulls(b *testing.B) {
	for _, bc := range stripBenchCases(b) {
		b.Run(fmt.Sprintf("%s/paths=%d", bc.name, len(bc.paths)), func(b *testing.B) {
			pre := driver.CompiledStrip(bc.paths)
			for _, s := range []struct {
				name  string
				strip func(map[string]any)
			}{
				{"walk", func(m map[string]any) { driver.StripNulls(m, bc.paths) }},
				{"trie", func(m map[string]any) { driver.CompiledStrip(bc.paths)(m) }},
				{"precompiled", func(m map[string]any) { pre(m) }},
			} {
				b.Run(s.name, func(b *testing.B) {
					// After the first call there is nothing left to delete,
					// but the walk, which is the cost, is the same.
					args := deepCopy(bc.args).(map[string]any)
					b.ReportAllocs()
					for b.Loop() {
						s.strip(args)
					}
				})
			}
		})
	}
}

type stripBenchCase struct {
	name  string
	paths []driver.NullPath
	args  map[string]any
}

// stripBenchCases converts schemas with StrictSchema and pairs their null
// paths with arguments the strict schema allows.
func stripBenchCases(tb testing.TB) []stripBenchCase {
	schemaCase := func(name string, schema, args map[string]any) stripBenchCase {
		_, paths, err := driver.StrictSchema(schema)
		if err != nil {
			tb.Fatal(err)
		}
		return stripBenchCase{name, paths, args}
	}
	issue, err := os.ReadFile("testdata/strict/github_create_issue.json")
	if err != nil {
		tb.Fatal(err)
	}
	cases := []stripBenchCase{
		schemaCase("github_create_issue", decode(tb, string(issue)),
			decode(tb, `{"owner":"o","repo":"r","title":"t","body":null,"assignees":null,"labels":["bug"],"milestone":null,"type":"bug"}`)),
		{"nested", benchPaths, decode(tb, benchArgs)},
	}

	// optional returns an object schema of n optional string properties
	// named prefix0..., and a value for it with every other one null.
	optional := func(prefix string, n int) (props, value map[string]any) {
		props, value = map[string]any{}, map[string]any{}
		for i := range n {
			k := fmt.Sprintf("%s%d", prefix, i)
			props[k] = map[string]any{"type": "string"}
			value[k] = nil
			if i%2 == 1 {
				value[k] = "v"
			}
		}
		return props, value
	}
	wideProps, wideArgs := optional("p", 200)
	cases = append(cases, schemaCase("wide",
		map[string]any{"type": "object", "properties": wideProps}, wideArgs))

	// items: 100 objects of 20 optional properties and a "meta" object of
	// 10 more.
	itemProps, _ := optional("p", 20)
	metaProps, _ := optional("m", 10)
	itemProps["meta"] = map[string]any{"type": "object", "properties": metaProps}
	items := make([]any, 100)
	for i := range items {
		_, item := optional("p", 20)
		_, item["meta"] = optional("m", 10)
		items[i] = item
	}
	cases = append(cases, schemaCase("array",
		map[string]any{"type": "object", "properties": map[string]any{
			"items": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": itemProps}},
		}},
		map[string]any{"items": items}))
	return cases
}
