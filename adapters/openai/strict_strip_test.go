package openai_test

import (
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit/adapters/openai"
)

func TestStripNulls(t *testing.T) {
	paths := []openai.NullPath{
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
	compiled := openai.CompileNullPaths(paths)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := decode(t, c.in)
			got := openai.StripNulls(args, paths)
			if canonical(t, got) != canonical(t, decode(t, c.want)) {
				t.Errorf("StripNulls = %s, want %s", canonical(t, got), c.want)
			}
			if reflect.ValueOf(got).Pointer() != reflect.ValueOf(args).Pointer() {
				t.Errorf("StripNulls did not work in place")
			}
			got = compiled.Strip(decode(t, c.in))
			if canonical(t, got) != canonical(t, decode(t, c.want)) {
				t.Errorf("NullPaths.Strip = %s, want %s", canonical(t, got), c.want)
			}
		})
	}
	if openai.StripNulls(nil, paths) != nil || compiled.Strip(nil) != nil {
		t.Error("nil args did not stay nil")
	}
	var none *openai.NullPaths
	if got := none.Strip(map[string]any{"a": nil}); len(got) != 1 {
		t.Error("a nil *NullPaths stripped something")
	}
	if got := openai.StripNulls(map[string]any{"a": nil}, []openai.NullPath{{}, nil}); len(got) != 1 {
		t.Error("empty paths stripped something")
	}
	if got := openai.CompileNullPaths([]openai.NullPath{{}}).Strip(map[string]any{"a": nil}); len(got) != 1 {
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
	_, paths, err := openai.StrictSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	args := decode(t, `{"q":"x","when":null,"opt":null,"tags":[{"name":"a","note":null}]}`)
	got := canonical(t, openai.StripNulls(args, paths))
	if want := `{"q":"x","tags":[{"name":"a"}],"when":null}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

var benchArgs = `{"owner":"o","repo":"r","title":"t","body":null,"assignees":null,"labels":["a","b"],"milestone":null,"type":"bug",
	"items":[{"name":"a","note":null},{"name":"b","note":"x"},{"name":"c","note":null},{"name":"d","note":null}],
	"meta":{"a":null,"b":{"c":null,"d":1}}}`

var benchPaths = []openai.NullPath{
	{"assignees"}, {"body"}, {"items"}, {"items", "[]", "note"}, {"labels"}, {"meta"}, {"meta", "a"},
	{"meta", "b"}, {"meta", "b", "c"}, {"meta", "b", "d"}, {"milestone"}, {"type"},
}

func BenchmarkStripNulls(b *testing.B) {
	template := decode(b, benchArgs)
	compiled := openai.CompileNullPaths(benchPaths)
	for _, bc := range []struct {
		name  string
		strip func(map[string]any)
	}{
		{"func", func(m map[string]any) { openai.StripNulls(m, benchPaths) }},
		{"compiled", func(m map[string]any) { compiled.Strip(m) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			// After the first call there is nothing left to delete, but the
			// walk, which is the cost, is the same.
			args := deepCopy(template).(map[string]any)
			b.ReportAllocs()
			for b.Loop() {
				bc.strip(args)
			}
		})
	}
}
