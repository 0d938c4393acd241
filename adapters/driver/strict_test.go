package driver_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/adapters/driver"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/strict")

// strictCase is one conversion: in converts to want with paths, or fails at
// errPtr on errKw.
type strictCase struct {
	name   string
	in     string
	want   string
	paths  []driver.NullPath
	errPtr string
	errKw  string
}

// P is short for the null paths of a case.
func P(paths ...string) []driver.NullPath {
	var out []driver.NullPath
	for _, p := range paths {
		out = append(out, strings.Split(p, "."))
	}
	return out
}

// props wraps properties (JSON text) into a root object that requires
// every name in req.
func props(properties string, req ...string) string {
	r, _ := json.Marshal(req)
	if req == nil {
		r = []byte("[]")
	}
	return `{"type":"object","properties":{` + properties + `},"required":` + string(r) + `}`
}

// strictOut is the strict root object with properties (JSON text), all
// required.
func strictOut(properties string, names ...string) string {
	slices.Sort(names)
	r, _ := json.Marshal(names)
	if names == nil {
		r = []byte("[]")
	}
	return `{"type":"object","properties":{` + properties + `},"required":` + string(r) + `,"additionalProperties":false}`
}

var strictCases = []strictCase{
	// The root.
	{name: "spec example",
		in:    `{"type":"object","properties":{"q":{"type":"string"},"limit":{"type":"integer"}},"required":["q"]}`,
		want:  strictOut(`"q":{"type":"string"},"limit":{"type":["integer","null"]}`, "q", "limit"),
		paths: P("limit")},
	{name: "root without properties", in: `{"type":"object"}`, want: strictOut(``)},
	{name: "root with empty properties", in: `{"type":"object","properties":{}}`, want: strictOut(``)},
	{name: "root closed and empty", in: `{"type":"object","properties":{},"additionalProperties":false}`, want: strictOut(``)},
	{name: "root keeps title and description", in: `{"type":"object","title":"T","description":"D","$schema":"https://json-schema.org/draft/2020-12/schema"}`,
		want: `{"type":"object","title":"T","description":"D","properties":{},"required":[],"additionalProperties":false}`},
	{name: "root not an object", in: `{"type":"string"}`, errPtr: "/type", errKw: "type"},
	{name: "root type array", in: `{"type":["object","null"],"properties":{}}`, errPtr: "/type", errKw: "type"},
	{name: "root without type", in: `{"properties":{"a":{"type":"string"}}}`, errPtr: "", errKw: "type"},
	{name: "root anyOf", in: `{"anyOf":[{"type":"object","properties":{}}]}`, errPtr: "/anyOf", errKw: "anyOf"},
	{name: "root anyOf with type", in: `{"type":"object","anyOf":[{"type":"object","properties":{}}]}`, errPtr: "/anyOf", errKw: "anyOf"},
	{name: "root $ref", in: `{"type":"object","$ref":"#/$defs/A","$defs":{"A":{"type":"object"}}}`, errPtr: "/$ref", errKw: "$ref"},
	{name: "root open map", in: `{"type":"object","additionalProperties":true}`, errPtr: "/additionalProperties", errKw: "additionalProperties"},
	{name: "root map of strings", in: `{"type":"object","additionalProperties":{"type":"string"}}`, errPtr: "/additionalProperties", errKw: "additionalProperties"},
	{name: "root unsupported keyword", in: `{"type":"object","properties":{"a":{"type":"string"}},"oneOf":[{"required":["a"]}]}`, errPtr: "/oneOf", errKw: "oneOf"},

	// Each form of nullability.
	{name: "nullable type string", in: props(`"a":{"type":"string","description":"d"}`),
		want: strictOut(`"a":{"type":["string","null"],"description":"d"}`, "a"), paths: P("a")},
	{name: "nullable type array", in: props(`"a":{"type":["string","integer"]}`),
		want: strictOut(`"a":{"type":["string","integer","null"]}`, "a"), paths: P("a")},
	{name: "nullable type array with null", in: props(`"a":{"type":["null","string"]}`),
		want: strictOut(`"a":{"type":["null","string"]}`, "a"), paths: P("a")},
	{name: "nullable type null", in: props(`"a":{"type":"null"}`),
		want: strictOut(`"a":{"type":"null"}`, "a"), paths: P("a")},
	{name: "nullable enum", in: props(`"a":{"enum":["x","y"]}`),
		want: strictOut(`"a":{"enum":["x","y",null]}`, "a"), paths: P("a")},
	{name: "nullable typed enum", in: props(`"a":{"type":"string","enum":["x","y"]}`),
		want: strictOut(`"a":{"type":["string","null"],"enum":["x","y",null]}`, "a"), paths: P("a")},
	{name: "nullable enum with null", in: props(`"a":{"type":["string","null"],"enum":["x",null]}`),
		want: strictOut(`"a":{"type":["string","null"],"enum":["x",null]}`, "a"), paths: P("a")},
	{name: "nullable anyOf", in: props(`"a":{"anyOf":[{"type":"string"},{"type":"integer"}],"description":"d"}`),
		want: strictOut(`"a":{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}],"description":"d"}`, "a"), paths: P("a")},
	{name: "nullable anyOf with null branch", in: props(`"a":{"anyOf":[{"type":"string"},{"type":"null"}],"default":null,"title":"A"}`),
		want: strictOut(`"a":{"anyOf":[{"type":"string"},{"type":"null"}],"title":"A"}`, "a"), paths: P("a")},
	{name: "nullable $ref", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/S","description":"d","title":"t"}},"$defs":{"S":{"type":"string"}}}`,
		want:  `{"type":"object","properties":{"a":{"anyOf":[{"$ref":"#/$defs/S"},{"type":"null"}],"description":"d","title":"t"}},"required":["a"],"additionalProperties":false,"$defs":{"S":{"type":"string"}}}`,
		paths: P("a")},
	{name: "nullable const", in: props(`"a":{"const":"x","description":"d"}`),
		want: strictOut(`"a":{"anyOf":[{"const":"x"},{"type":"null"}],"description":"d"}`, "a"), paths: P("a")},
	{name: "nullable typed const", in: props(`"a":{"type":"string","const":"x"}`),
		want: strictOut(`"a":{"anyOf":[{"type":"string","const":"x"},{"type":"null"}]}`, "a"), paths: P("a")},
	{name: "nullable object keeps its children converted", in: props(`"o":{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"integer"}},"required":["x"]}`),
		want:  strictOut(`"o":{"type":["object","null"],"properties":{"x":{"type":"string"},"y":{"type":["integer","null"]}},"required":["x","y"],"additionalProperties":false}`, "o"),
		paths: P("o", "o.y")},
	{name: "nullable array keeps its items converted", in: props(`"t":{"type":"array","items":{"type":"object","properties":{"n":{"type":"string"}}},"minItems":1}`),
		want:  strictOut(`"t":{"type":["array","null"],"items":{"type":"object","properties":{"n":{"type":["string","null"]}},"required":["n"],"additionalProperties":false},"minItems":1}`, "t"),
		paths: P("t", "t.[].n")},
	{name: "required nullable keeps its null", in: props(`"a":{"type":["string","null"]}`, "a"),
		want: strictOut(`"a":{"type":["string","null"]}`, "a")},
	{name: "required names sorted", in: props(`"b":{"type":"string"},"a":{"type":"string"},"c":{"type":"string"}`, "c", "a", "b", "a"),
		want: strictOut(`"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"string"}`, "a", "b", "c")},

	// Nesting.
	{name: "nested objects", in: props(`"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"boolean"}},"required":["c"]},"d":{"type":"number"}},"required":["b"]}`, "a"),
		want:  strictOut(`"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"boolean"}},"required":["c"],"additionalProperties":false},"d":{"type":["number","null"]}},"required":["b","d"],"additionalProperties":false}`, "a"),
		paths: P("a.d")},
	{name: "arrays of objects", in: props(`"tags":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"note":{"type":"string"}},"required":["name"]}}`, "tags"),
		want:  strictOut(`"tags":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"note":{"type":["string","null"]}},"required":["name","note"],"additionalProperties":false}}`, "tags"),
		paths: P("tags.[].note")},
	{name: "arrays of arrays of objects", in: props(`"m":{"type":"array","items":{"type":"array","items":{"type":"object","properties":{"v":{"type":"integer"}}}}}`, "m"),
		want:  strictOut(`"m":{"type":"array","items":{"type":"array","items":{"type":"object","properties":{"v":{"type":["integer","null"]}},"required":["v"],"additionalProperties":false}}}`, "m"),
		paths: P("m.[].[].v")},
	{name: "nested empty closed object", in: props(`"o":{"type":"object","additionalProperties":false}`, "o"),
		want: strictOut(`"o":{"type":"object","properties":{},"required":[],"additionalProperties":false}`, "o")},
	{name: "property named like AnyItem", in: props(`"[]":{"type":"string"}`),
		want: strictOut(`"[]":{"type":["string","null"]}`, "[]"), paths: []driver.NullPath{{"[]"}}},
	{name: "odd property names", in: props(`"a/b":{"type":"string"},"~":{"type":"string"},"":{"type":"string"}`, ""),
		want:  strictOut(`"a/b":{"type":["string","null"]},"~":{"type":["string","null"]},"":{"type":"string"}`, "a/b", "~", ""),
		paths: []driver.NullPath{{"a/b"}, {"~"}}},

	// Definitions.
	{name: "$defs", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/Addr"},"b":{"$ref":"#/$defs/Addr"}},"required":["a"],"$defs":{"Addr":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string"}},"required":["city"]},"Unused":{"type":"string"}}}`,
		want:  `{"type":"object","properties":{"a":{"$ref":"#/$defs/Addr"},"b":{"anyOf":[{"$ref":"#/$defs/Addr"},{"type":"null"}]}},"required":["a","b"],"additionalProperties":false,"$defs":{"Addr":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":["string","null"]}},"required":["city","zip"],"additionalProperties":false}}}`,
		paths: P("a.zip", "b", "b.zip")},
	{name: "definitions", in: `{"type":"object","properties":{"a":{"type":"array","items":{"$ref":"#/definitions/It"}}},"required":["a"],"definitions":{"It":{"type":"object","properties":{"x":{"type":"integer"}}}}}`,
		want:  `{"type":"object","properties":{"a":{"type":"array","items":{"$ref":"#/definitions/It"}}},"required":["a"],"additionalProperties":false,"definitions":{"It":{"type":"object","properties":{"x":{"type":["integer","null"]}},"required":["x"],"additionalProperties":false}}}`,
		paths: P("a.[].x")},
	{name: "$ref to $ref", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"],"$defs":{"A":{"$ref":"#/definitions/B"}},"definitions":{"B":{"type":"object","properties":{"o":{"type":"string"}}}}}`,
		want:  `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"],"additionalProperties":false,"$defs":{"A":{"$ref":"#/definitions/B"}},"definitions":{"B":{"type":"object","properties":{"o":{"type":["string","null"]}},"required":["o"],"additionalProperties":false}}}`,
		paths: P("a.o")},
	{name: "escaped definition names", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/a~1b"},"b":{"$ref":"#/$defs/with%20space"}},"required":["a","b"],"$defs":{"a/b":{"type":"string"},"with space":{"type":"integer"}}}`,
		want: `{"type":"object","properties":{"a":{"$ref":"#/$defs/a~1b"},"b":{"$ref":"#/$defs/with%20space"}},"required":["a","b"],"additionalProperties":false,"$defs":{"a/b":{"type":"string"},"with space":{"type":"integer"}}}`},
	{name: "recursion without optional properties", in: `{"type":"object","properties":{"tree":{"$ref":"#/$defs/Node"}},"required":["tree"],"$defs":{"Node":{"type":"object","properties":{"label":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["label","children"]}}}`,
		want: `{"type":"object","properties":{"tree":{"$ref":"#/$defs/Node"}},"required":["tree"],"additionalProperties":false,"$defs":{"Node":{"type":"object","properties":{"label":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}},"required":["children","label"],"additionalProperties":false}}}`},
	{name: "mutual recursion without optional properties", in: `{"type":"object","properties":{"e":{"$ref":"#/$defs/Expr"}},"required":["e"],"$defs":{"Expr":{"anyOf":[{"type":"number"},{"$ref":"#/$defs/Sum"}]},"Sum":{"type":"object","properties":{"terms":{"type":"array","items":{"$ref":"#/$defs/Expr"}}},"required":["terms"]}}}`,
		want: `{"type":"object","properties":{"e":{"$ref":"#/$defs/Expr"}},"required":["e"],"additionalProperties":false,"$defs":{"Expr":{"anyOf":[{"type":"number"},{"$ref":"#/$defs/Sum"}]},"Sum":{"type":"object","properties":{"terms":{"type":"array","items":{"$ref":"#/$defs/Expr"}}},"required":["terms"],"additionalProperties":false}}}`},
	{name: "recursion through an optional property", in: `{"type":"object","properties":{"l":{"$ref":"#/$defs/List"}},"required":["l"],"$defs":{"List":{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#/$defs/List"}},"required":["v"]}}}`,
		errPtr: "/$defs/List", errKw: "$ref"},
	{name: "recursion reaching an optional property elsewhere", in: `{"type":"object","properties":{"t":{"$ref":"#/$defs/T"}},"required":["t"],"$defs":{"T":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/T"}},"meta":{"$ref":"#/$defs/Meta"}},"required":["kids","meta"]},"Meta":{"type":"object","properties":{"note":{"type":"string"}}}}}`,
		errPtr: "/$defs/T", errKw: "$ref"},
	{name: "$ref cycle at one location", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"],"$defs":{"A":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/A"}]}}}`,
		errPtr: "/$defs/A", errKw: "$ref"},
	{name: "$ref to itself", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"],"$defs":{"A":{"$ref":"#/$defs/A"}}}`,
		errPtr: "/$defs/A", errKw: "$ref"},
	{name: "$ref to root", in: props(`"a":{"$ref":"#"}`, "a"), errPtr: "/properties/a/$ref", errKw: "$ref"},
	{name: "$ref remote", in: props(`"a":{"$ref":"https://example.com/s.json#/$defs/A"}`, "a"), errPtr: "/properties/a/$ref", errKw: "$ref"},
	{name: "$ref into a definition", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A/properties/x"}},"required":["a"],"$defs":{"A":{"type":"object","properties":{"x":{"type":"string"}}}}}`,
		errPtr: "/properties/a/$ref", errKw: "$ref"},
	{name: "$ref unresolvable", in: props(`"a":{"$ref":"#/$defs/Nope"}`, "a"), errPtr: "/properties/a/$ref", errKw: "$ref"},
	{name: "$ref not a string", in: props(`"a":{"$ref":1}`, "a"), errPtr: "/properties/a/$ref", errKw: "$ref"},
	{name: "$ref with a sibling", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A","type":"string"}},"required":["a"],"$defs":{"A":{"type":"string"}}}`,
		errPtr: "/properties/a/type", errKw: "type"},
	{name: "bad definition", in: `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"],"$defs":{"A":{"type":"object","properties":{"x":{"not":{}}}}}}`,
		errPtr: "/$defs/A/properties/x/not", errKw: "not"},
	{name: "unused bad definition", in: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"$defs":{"A":{"allOf":[]}}}`,
		want: strictOut(`"a":{"type":"string"}`, "a")},

	// anyOf.
	{name: "anyOf object branches", in: props(`"f":{"anyOf":[{"type":"object","properties":{"name":{"type":"string"},"mode":{"type":"string"}},"required":["name"]},{"type":"object","properties":{"id":{"type":"integer"},"mode":{"type":"string"}},"required":["id"]}]}`, "f"),
		want:  strictOut(`"f":{"anyOf":[{"type":"object","properties":{"mode":{"type":["string","null"]},"name":{"type":"string"}},"required":["mode","name"],"additionalProperties":false},{"type":"object","properties":{"id":{"type":"integer"},"mode":{"type":["string","null"]}},"required":["id","mode"],"additionalProperties":false}]}`, "f"),
		paths: P("f.mode")},
	{name: "anyOf of arrays and objects", in: props(`"v":{"anyOf":[{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"}}}},{"type":"object","properties":{"x":{"type":"string"}}}]}`, "v"),
		want:  strictOut(`"v":{"anyOf":[{"type":"array","items":{"type":"object","properties":{"x":{"type":["string","null"]}},"required":["x"],"additionalProperties":false}},{"type":"object","properties":{"x":{"type":["string","null"]}},"required":["x"],"additionalProperties":false}]}`, "v"),
		paths: P("v.[].x", "v.x")},
	{name: "anyOf branch requires the null another strips", in: props(`"f":{"anyOf":[{"type":"object","properties":{"x":{"type":"string"}}},{"type":"object","properties":{"x":{"type":["string","null"]},"y":{"type":"integer"}},"required":["x","y"]}]}`, "f"),
		errPtr: "/properties/f/anyOf/1/required", errKw: "required"},
	{name: "anyOf branch required without null is fine", in: props(`"f":{"anyOf":[{"type":"object","properties":{"x":{"type":"string"}}},{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"integer"}},"required":["x","y"]}]}`, "f"),
		want:  strictOut(`"f":{"anyOf":[{"type":"object","properties":{"x":{"type":["string","null"]}},"required":["x"],"additionalProperties":false},{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"integer"}},"required":["x","y"],"additionalProperties":false}]}`, "f"),
		paths: P("f.x")},
	{name: "enum value holds a null strict mode strips", in: props(`"f":{"anyOf":[{"type":"object","properties":{"x":{"type":"string"}}},{"enum":[{"x":null}]}]}`, "f"),
		errPtr: "/properties/f/anyOf/1/enum/0", errKw: "enum"},
	{name: "const value holds a null strict mode strips", in: props(`"o":{"type":"object","properties":{"x":{"type":"string"}},"const":{"x":null}}`, "o"),
		errPtr: "/properties/o/const", errKw: "const"},
	{name: "anyOf with a sibling", in: props(`"a":{"type":"string","anyOf":[{"type":"string"}]}`, "a"), errPtr: "/properties/a/type", errKw: "type"},
	{name: "anyOf empty", in: props(`"a":{"anyOf":[]}`, "a"), errPtr: "/properties/a/anyOf", errKw: "anyOf"},
	{name: "anyOf untyped branch", in: props(`"a":{"anyOf":[{"type":"string"},{"minLength":1}]}`, "a"), errPtr: "/properties/a/anyOf/1", errKw: ""},

	// Open maps, arrays, untyped and invalid schemas.
	{name: "open map", in: props(`"m":{"type":"object","additionalProperties":{"type":"string"}}`, "m"), errPtr: "/properties/m/additionalProperties", errKw: "additionalProperties"},
	{name: "open map true", in: props(`"m":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`, "m"), errPtr: "/properties/m/additionalProperties", errKw: "additionalProperties"},
	{name: "object without properties", in: props(`"m":{"type":"object"}`, "m"), errPtr: "/properties/m", errKw: "properties"},
	{name: "object with empty properties", in: props(`"m":{"type":"object","properties":{}}`, "m"), errPtr: "/properties/m", errKw: "properties"},
	{name: "additionalProperties not a schema", in: props(`"m":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":"no"}`, "m"), errPtr: "/properties/m/additionalProperties", errKw: "additionalProperties"},
	{name: "array without items", in: props(`"a":{"type":"array"}`, "a"), errPtr: "/properties/a", errKw: "items"},
	{name: "tuple items", in: props(`"a":{"type":"array","items":[{"type":"string"}]}`, "a"), errPtr: "/properties/a/items", errKw: "items"},
	{name: "items true", in: props(`"a":{"type":"array","items":true}`, "a"), errPtr: "/properties/a/items", errKw: ""},
	{name: "untyped", in: props(`"a":{"description":"anything"}`, "a"), errPtr: "/properties/a", errKw: ""},
	{name: "empty schema", in: props(`"a":{}`, "a"), errPtr: "/properties/a", errKw: ""},
	{name: "boolean schema", in: props(`"a":true`, "a"), errPtr: "/properties/a", errKw: ""},
	{name: "schema not an object", in: props(`"a":"string"`, "a"), errPtr: "/properties/a", errKw: ""},
	{name: "unknown type", in: props(`"a":{"type":"date"}`, "a"), errPtr: "/properties/a/type", errKw: "type"},
	{name: "unknown type in array", in: props(`"a":{"type":["string","any"]}`, "a"), errPtr: "/properties/a/type/1", errKw: "type"},
	{name: "empty type array", in: props(`"a":{"type":[]}`, "a"), errPtr: "/properties/a/type", errKw: "type"},
	{name: "type not a string", in: props(`"a":{"type":1}`, "a"), errPtr: "/properties/a/type", errKw: "type"},
	{name: "properties without type", in: props(`"a":{"enum":[{}],"properties":{"x":{"type":"string"}}}`, "a"), errPtr: "/properties/a/properties", errKw: "properties"},
	{name: "items without type", in: props(`"a":{"enum":[[]],"items":{"type":"string"}}`, "a"), errPtr: "/properties/a/items", errKw: "items"},
	{name: "required not in properties", in: props(`"a":{"type":"string"}`, "a", "b"), errPtr: "/required/1", errKw: "required"},
	{name: "required not strings", in: `{"type":"object","properties":{"a":{"type":"string"}},"required":[1]}`, errPtr: "/required/0", errKw: "required"},
	{name: "properties not an object", in: `{"type":"object","properties":[]}`, errPtr: "/properties", errKw: "properties"},
	{name: "enum empty", in: props(`"a":{"enum":[]}`, "a"), errPtr: "/properties/a/enum", errKw: "enum"},
	{name: "enum not an array", in: props(`"a":{"enum":"x"}`, "a"), errPtr: "/properties/a/enum", errKw: "enum"},
	{name: "description not a string", in: props(`"a":{"type":"string","description":1}`, "a"), errPtr: "/properties/a/description", errKw: "description"},
	{name: "pattern not a string", in: props(`"a":{"type":"string","pattern":1}`, "a"), errPtr: "/properties/a/pattern", errKw: "pattern"},
	{name: "minLength negative", in: props(`"a":{"type":"string","minLength":-1}`, "a"), errPtr: "/properties/a/minLength", errKw: "minLength"},
	{name: "maxItems fractional", in: props(`"a":{"type":"array","items":{"type":"string"},"maxItems":1.5}`, "a"), errPtr: "/properties/a/maxItems", errKw: "maxItems"},
	{name: "multipleOf zero", in: props(`"a":{"type":"number","multipleOf":0}`, "a"), errPtr: "/properties/a/multipleOf", errKw: "multipleOf"},
	{name: "minimum not a number", in: props(`"a":{"type":"number","minimum":"1"}`, "a"), errPtr: "/properties/a/minimum", errKw: "minimum"},

	// Kept keywords.
	{name: "string keywords", in: props(`"s":{"type":"string","title":"S","description":"d","pattern":"^[a-z]+$","minLength":1,"maxLength":9,"format":"email"}`, "s"),
		want: strictOut(`"s":{"type":"string","title":"S","description":"d","pattern":"^[a-z]+$","minLength":1,"maxLength":9,"format":"email"}`, "s")},
	{name: "number keywords", in: props(`"n":{"type":"number","multipleOf":0.5,"minimum":0,"maximum":10,"exclusiveMinimum":-1,"exclusiveMaximum":11},"i":{"type":"integer","minimum":1}`, "n", "i"),
		want: strictOut(`"n":{"type":"number","multipleOf":0.5,"minimum":0,"maximum":10,"exclusiveMinimum":-1,"exclusiveMaximum":11},"i":{"type":"integer","minimum":1}`, "n", "i")},
	{name: "array keywords", in: props(`"a":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3}`, "a"),
		want: strictOut(`"a":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3}`, "a")},
	{name: "const and enum", in: props(`"c":{"type":"string","const":"x"},"e":{"type":"integer","enum":[1,2]},"o":{"enum":[{"k":[1,null]},"s",true,null]}`, "c", "e", "o"),
		want: strictOut(`"c":{"type":"string","const":"x"},"e":{"type":"integer","enum":[1,2]},"o":{"enum":[{"k":[1,null]},"s",true,null]}`, "c", "e", "o")},
	{name: "draft 4 exclusive bounds", in: props(`"n":{"type":"number","minimum":1,"exclusiveMinimum":true,"maximum":5,"exclusiveMaximum":false}`, "n"),
		want: strictOut(`"n":{"type":"number","exclusiveMinimum":1,"maximum":5}`, "n")},
	{name: "keywords of other types dropped", in: props(`"i":{"type":"integer","pattern":"x","minLength":1,"items":{"type":"string"},"properties":{"a":{"type":"string"}},"maxItems":2}`, "i"),
		want: strictOut(`"i":{"type":"integer"}`, "i")},
	{name: "keywords of an untyped enum kept", in: props(`"e":{"enum":["a",1],"maxLength":3,"maximum":4}`, "e"),
		want: strictOut(`"e":{"enum":["a",1],"maxLength":3,"maximum":4}`, "e")},
	{name: "type array dedupes", in: props(`"a":{"type":["string","string","integer"]}`, "a"),
		want: strictOut(`"a":{"type":["string","integer"]}`, "a")},
	{name: "nested $defs dropped", in: props(`"a":{"type":"string","$defs":{"X":{"type":"string"}}}`, "a"),
		want: strictOut(`"a":{"type":"string"}`, "a")},
}

func init() {
	for _, f := range []string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"} {
		strictCases = append(strictCases, strictCase{name: "format " + f,
			in:   props(`"s":{"type":"string","format":"`+f+`"}`, "s"),
			want: strictOut(`"s":{"type":"string","format":"`+f+`"}`, "s")})
	}
	for _, f := range []string{"uri", "uri-reference", "regex", "byte", "int64", "password"} {
		strictCases = append(strictCases, strictCase{name: "format " + f + " dropped",
			in:   props(`"s":{"type":"string","format":"`+f+`"}`, "s"),
			want: strictOut(`"s":{"type":"string"}`, "s")})
	}
	unsupported := map[string]string{
		"allOf": `[{"type":"string"}]`, "not": `{"type":"integer"}`, "oneOf": `[{"type":"string"}]`,
		"if": `{"minLength":1}`, "then": `{"maxLength":2}`, "else": `{"maxLength":3}`,
		"dependentRequired": `{"a":["b"]}`, "dependentSchemas": `{"a":{}}`, "dependencies": `{"a":["b"]}`,
		"patternProperties": `{"^x":{"type":"string"}}`, "unevaluatedProperties": `false`, "unevaluatedItems": `false`,
		"propertyNames": `{"maxLength":3}`, "prefixItems": `[{"type":"string"}]`,
		"contains": `{"type":"string"}`, "minContains": `1`, "maxContains": `2`,
		"$dynamicRef": `"#meta"`, "$recursiveRef": `"#"`,
	}
	for _, kw := range sortedMapKeys(unsupported) {
		strictCases = append(strictCases, strictCase{name: "unsupported " + kw,
			in:     props(`"a":{"type":"string",`+quote(kw)+`:`+unsupported[kw]+`}`, "a"),
			errPtr: "/properties/a/" + kw, errKw: kw})
	}
	dropped := map[string]string{
		"default": `"x"`, "examples": `["x"]`, "uniqueItems": `true`, "minProperties": `1`, "maxProperties": `2`,
		"contentMediaType": `"text/plain"`, "contentEncoding": `"base64"`, "contentSchema": `{"type":"object"}`,
		"$schema": `"https://json-schema.org/draft/2020-12/schema"`, "$id": `"https://example.com/a"`,
		"$comment": `"c"`, "$anchor": `"a"`, "$dynamicAnchor": `"a"`, "$vocabulary": `{}`,
		"readOnly": `true`, "writeOnly": `false`, "deprecated": `true`, "additionalItems": `false`,
		"x-google-enum": `["a"]`, "nullable": `true`, "example": `"x"`, "markdownDescription": `"m"`,
	}
	for _, kw := range sortedMapKeys(dropped) {
		strictCases = append(strictCases, strictCase{name: "dropped " + kw,
			in:   props(`"a":{"type":"string",`+quote(kw)+`:`+dropped[kw]+`}`, "a"),
			want: strictOut(`"a":{"type":"string"}`, "a")})
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return m
}

func canonical(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %v: %v", v, err)
	}
	var x any
	_ = json.Unmarshal(b, &x)
	b, _ = json.Marshal(x)
	return string(b)
}

// deepCopy copies a decoded JSON value.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
}

// vandalize changes every map and slice reachable from v, to prove the
// result shares nothing with the input.
func vandalize(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			vandalize(e)
		}
		x["x-vandal"] = true
	case []any:
		for i, e := range x {
			vandalize(e)
			x[i] = "vandal"
		}
	}
}

// checkStrict runs one conversion and checks the result against c and the
// invariants every conversion keeps.
func checkStrict(t *testing.T, c strictCase, schema map[string]any) {
	t.Helper()
	before := deepCopy(schema)
	strict, paths, err := driver.StrictSchema(schema)
	if !reflect.DeepEqual(schema, before) {
		t.Fatalf("StrictSchema modified its input")
	}
	if c.want == "" {
		if err == nil {
			t.Fatalf("StrictSchema = %s, want an error at %q", canonical(t, strict), c.errPtr)
		}
		var se *driver.StrictError
		if !errors.Is(err, driver.ErrNotStrict) || !errors.As(err, &se) {
			t.Fatalf("error %v is not a *StrictError wrapping ErrNotStrict", err)
		}
		if se.Pointer != c.errPtr || se.Keyword != c.errKw {
			t.Fatalf("error at %q on %q, want at %q on %q: %v", se.Pointer, se.Keyword, c.errPtr, c.errKw, err)
		}
		if strict != nil || paths != nil {
			t.Fatalf("failed conversion returned %v, %v", strict, paths)
		}
		return
	}
	if err != nil {
		t.Fatalf("StrictSchema: %v", err)
	}
	if got, want := canonical(t, strict), canonical(t, decode(t, c.want)); got != want {
		t.Errorf("strict schema\n got %s\nwant %s", got, want)
	}
	if !reflect.DeepEqual(paths, c.paths) {
		t.Errorf("null paths = %q, want %q", paths, c.paths)
	}
	if msg := checkStrictRules(strict); msg != "" {
		t.Errorf("result breaks a strict-mode rule: %s", msg)
	}
	again, againPaths, _ := driver.StrictSchema(schema)
	if !reflect.DeepEqual(strict, again) || !reflect.DeepEqual(paths, againPaths) {
		t.Errorf("StrictSchema is not deterministic")
	}
	vandalize(strict)
	if !reflect.DeepEqual(schema, before) {
		t.Errorf("the result shares maps or slices with the input")
	}
}

func TestStrictSchema(t *testing.T) {
	for _, c := range strictCases {
		t.Run(c.name, func(t *testing.T) {
			checkStrict(t, c, decode(t, c.in))
		})
	}
}

// TestStrictSchemaGoValues feeds schemas built in Go rather than decoded.
func TestStrictSchemaGoValues(t *testing.T) {
	type color string
	cases := []struct {
		name   string
		schema map[string]any
		want   string
		paths  []driver.NullPath
	}{
		{"typed maps and slices", map[string]any{
			"type": "object",
			"properties": map[string]map[string]any{
				"a": {"type": "string", "enum": []string{"x", "y"}, "maxLength": uint(3)},
				"b": {"type": []string{"integer"}, "minimum": int64(1), "maximum": uint8(9), "multipleOf": float32(0.5)},
				"c": {"type": color("number"), "minimum": json.Number("2.5")},
			},
			"required": []string{"a"},
		}, strictOut(`"a":{"type":"string","enum":["x","y"],"maxLength":3},"b":{"type":["integer","null"],"minimum":1,"maximum":9,"multipleOf":0.5},"c":{"type":["number","null"],"minimum":2.5}`, "a", "b", "c"),
			P("b", "c")},
		{"map with interface keys", map[string]any{
			"type":       "object",
			"properties": map[any]any{"a": map[any]any{"type": "boolean"}},
			"required":   []any{"a"},
		}, strictOut(`"a":{"type":"boolean"}`, "a"), nil},
		{"raw JSON and structs", map[string]any{
			"type": "object",
			"properties": map[string]any{
				"a": json.RawMessage(`{"type":"string"}`),
				"b": struct {
					Type string   `json:"type"`
					Enum []string `json:"enum"`
				}{"string", []string{"p", "q"}},
			},
			"required": []string{"a", "b"},
		}, strictOut(`"a":{"type":"string"},"b":{"type":"string","enum":["p","q"]}`, "a", "b"), nil},
		{"enum values of Go types", map[string]any{
			"type":       "object",
			"properties": map[string]any{"a": map[string]any{"enum": []any{color("red"), 1, int8(2), []string{"x"}, map[string]int{"k": 1}, json.Number("3")}}},
			"required":   []string{"a"},
		}, strictOut(`"a":{"enum":["red",1,2,["x"],{"k":1},3]}`, "a"), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			strict, paths, err := driver.StrictSchema(c.schema)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := canonical(t, strict), canonical(t, decode(t, c.want)); got != want {
				t.Errorf("strict schema\n got %s\nwant %s", got, want)
			}
			if !reflect.DeepEqual(paths, c.paths) {
				t.Errorf("null paths = %q, want %q", paths, c.paths)
			}
			if msg := checkStrictRules(strict); msg != "" {
				t.Errorf("result breaks a strict-mode rule: %s", msg)
			}
		})
	}
}

func TestStrictSchemaBadGoValues(t *testing.T) {
	nan := 0.0
	nan /= nan
	cases := map[string]map[string]any{
		"nil":                 nil,
		"NaN minimum":         {"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number", "minimum": nan}}},
		"NaN enum":            {"type": "object", "properties": map[string]any{"a": map[string]any{"enum": []any{nan}}}},
		"channel enum":        {"type": "object", "properties": map[string]any{"a": map[string]any{"enum": []any{make(chan int)}}}},
		"func schema":         {"type": "object", "properties": map[string]any{"a": func() {}}},
		"int keys":            {"type": "object", "properties": map[int]any{1: map[string]any{"type": "string"}}},
		"mixed keys":          {"type": "object", "properties": map[any]any{"a": map[string]any{"type": "string"}, 2: map[string]any{"type": "string"}}},
		"nil map properties":  {"type": "object", "properties": map[string]any{"a": map[string]any(nil)}},
		"bad json.Number":     {"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number", "maximum": json.Number("x")}}},
		"huge json.Number":    {"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number", "maximum": json.Number("1e999")}}},
		"cyclic Go enum":      {"type": "object", "properties": map[string]any{"a": map[string]any{"enum": []any{cyclic()}}}},
		"type of a Go string": {"type": "object", "properties": map[string]any{"a": map[string]any{"type": []byte("string")}}},
	}
	for _, name := range sortedMapKeys(cases) {
		t.Run(name, func(t *testing.T) {
			_, _, err := driver.StrictSchema(cases[name])
			if !errors.Is(err, driver.ErrNotStrict) {
				t.Fatalf("err = %v, want ErrNotStrict", err)
			}
		})
	}
}

func cyclic() map[string]any {
	m := map[string]any{}
	m["self"] = m
	return m
}

func TestStrictSchemaDeepInput(t *testing.T) {
	for _, kw := range []string{"items", "anyOf", "properties"} {
		t.Run(kw, func(t *testing.T) {
			var inner any = map[string]any{"type": "string"}
			for range 100000 {
				switch kw {
				case "items":
					inner = map[string]any{"type": "array", "items": inner}
				case "anyOf":
					inner = map[string]any{"anyOf": []any{inner}}
				case "properties":
					inner = map[string]any{"type": "object", "properties": map[string]any{"p": inner}, "required": []any{"p"}}
				}
			}
			schema := map[string]any{"type": "object", "properties": map[string]any{"a": inner}, "required": []any{"a"}}
			if _, _, err := driver.StrictSchema(schema); !errors.Is(err, driver.ErrNotStrict) {
				t.Fatalf("err = %v, want ErrNotStrict", err)
			}
		})
	}
	t.Run("enum value", func(t *testing.T) {
		var v any = "x"
		for range 100000 {
			v = []any{v}
		}
		schema := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"enum": []any{v}}}, "required": []any{"a"}}
		if _, _, err := driver.StrictSchema(schema); !errors.Is(err, driver.ErrNotStrict) {
			t.Fatalf("err = %v, want ErrNotStrict", err)
		}
	})
	t.Run("long $ref chain", func(t *testing.T) {
		defs := map[string]any{}
		for i := range 100000 {
			defs[fmt.Sprint("D", i)] = map[string]any{"$ref": fmt.Sprint("#/$defs/D", i+1)}
		}
		defs["D100000"] = map[string]any{"type": "string"}
		schema := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/D0"}}, "required": []any{"a"}, "$defs": defs}
		if _, _, err := driver.StrictSchema(schema); !errors.Is(err, driver.ErrNotStrict) {
			t.Fatalf("err = %v, want ErrNotStrict", err)
		}
	})
}

// nest returns n levels of objects, the innermost holding leaf.
func nest(n int, leaf string) string {
	s := leaf
	for range n - 1 {
		s = `{"type":"object","properties":{"o":` + s + `},"required":["o"]}`
	}
	return `{"type":"object","properties":{"o":` + s + `},"required":["o"]}`
}

func TestStrictSchemaLimits(t *testing.T) {
	manyProps := func(n int, schema string) string {
		var b strings.Builder
		var names []string
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			name := fmt.Sprintf("p%04d", i)
			names = append(names, name)
			fmt.Fprintf(&b, "%q:%s", name, schema)
		}
		return props(b.String(), names...)
	}
	enumOf := func(n, size int) string {
		vals := make([]string, n)
		for i := range vals {
			s := fmt.Sprintf("%0*d", size, i)
			vals[i] = s[len(s)-size:]
		}
		b, _ := json.Marshal(vals)
		return string(b)
	}
	longName := func(n int) string { return strings.Repeat("n", n) }
	cases := []struct {
		name string
		in   string
		ok   bool
		kw   string
	}{
		{"5000 properties", manyProps(5000, `{"type":"string"}`), true, ""},
		{"5001 properties", manyProps(5001, `{"type":"string"}`), false, "properties"},
		{"5000 properties with a definition's", `{"type":"object","properties":{"a":{"$ref":"#/$defs/D"}` + strings.Repeat(`,"b":{"type":"string"}`, 0) + `},"required":["a"],"$defs":{"D":` + manyProps(4999, `{"type":"string"}`) + `}}`, true, ""},
		{"5001 properties with a definition's", `{"type":"object","properties":{"a":{"$ref":"#/$defs/D"}},"required":["a"],"$defs":{"D":` + manyProps(5000, `{"type":"string"}`) + `}}`, false, "properties"},
		{"10 levels", nest(10, `{"type":"string"}`), true, ""},
		{"11 levels", nest(11, `{"type":"string"}`), false, ""},
		{"10 levels through $ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/D"}},"required":["a"],"$defs":{"D":` + nest(9, `{"type":"string"}`) + `}}`, true, ""},
		{"11 levels through $ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/D"}},"required":["a"],"$defs":{"D":` + nest(10, `{"type":"string"}`) + `}}`, false, ""},
		{"10 levels through a $ref chain", `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"],"$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}},"required":["b"]},"B":` + nest(8, `{"type":"string"}`) + `}}`, true, ""},
		{"11 levels through a $ref chain", `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"required":["a"],"$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}},"required":["b"]},"B":` + nest(9, `{"type":"string"}`) + `}}`, false, ""},
		{"11 levels through a $ref chain, used first deep", `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"},"b":{"$ref":"#/$defs/B"}},"required":["a","b"],"$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}},"required":["b"]},"B":` + nest(9, `{"type":"string"}`) + `}}`, false, ""},
		{"10 levels through arrays", nest(9, `{"type":"array","items":{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}}`), true, ""},
		{"11 levels through arrays", nest(10, `{"type":"array","items":{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}}`), false, ""},
		{"10 levels through recursion", `{"type":"object","properties":{"a":{"$ref":"#/$defs/T"}},"required":["a"],"$defs":{"T":` + nest(9, `{"type":"array","items":{"$ref":"#/$defs/T"}}`) + `}}`, true, ""},
		{"11 levels through recursion", `{"type":"object","properties":{"a":{"$ref":"#/$defs/T"}},"required":["a"],"$defs":{"T":` + nest(10, `{"type":"array","items":{"$ref":"#/$defs/T"}}`) + `}}`, false, ""},
		{"120000 characters of names", props(quote(longName(120000))+`:{"type":"string"}`, longName(120000)), true, ""},
		{"120001 characters of names", props(quote(longName(120001))+`:{"type":"string"}`, longName(120001)), false, "properties"},
		{"120000 characters of names, definitions and values", `{"type":"object","properties":{` + quote(longName(100000)) + `:{"$ref":"#/$defs/` + longName(10000) + `"},"e":{"enum":[` + quote(longName(4998)) + `]},"c":{"const":` + quote(longName(5000)) + `}},"required":["e","c",` + quote(longName(100000)) + `],"$defs":{` + quote(longName(10000)) + `:{"type":"string"}}}`, true, ""},
		{"120001 characters of names, definitions and values", `{"type":"object","properties":{` + quote(longName(100000)) + `:{"$ref":"#/$defs/` + longName(10000) + `"},"e":{"enum":[` + quote(longName(4999)) + `]},"c":{"const":` + quote(longName(5000)) + `}},"required":["e","c",` + quote(longName(100000)) + `],"$defs":{` + quote(longName(10000)) + `:{"type":"string"}}}`, false, "$defs"},
		{"1000 enum values", props(`"a":{"enum":`+enumOf(500, 3)+`},"b":{"enum":`+enumOf(500, 3)+`}`, "a", "b"), true, ""},
		{"1001 enum values", props(`"a":{"enum":`+enumOf(500, 3)+`},"b":{"enum":`+enumOf(501, 3)+`}`, "a", "b"), false, "enum"},
		{"1001 enum values with the added null", props(`"a":{"enum":` + enumOf(1000, 3) + `}`), false, "enum"},
		{"251 values of 15000 characters", props(`"a":{"enum":`+enumOf(250, 60)+`},"b":{"enum":["x"]}`, "a", "b"), true, ""},
		{"large enum at 15000 characters", props(`"a":{"type":"string","enum":`+enumOf(300, 50)+`}`, "a"), true, ""},
		{"large enum over 15000 characters", props(`"a":{"type":"string","enum":`+strings.Replace(enumOf(300, 50), `"`, `"x`, 1)+`}`, "a"), false, "enum"},
		{"250 values over 15000 characters", props(`"a":{"type":"string","enum":`+enumOf(250, 61)+`}`, "a"), true, ""},
		{"250 values over 15000 characters with the added null", props(`"a":{"type":"string","enum":` + enumOf(250, 61) + `}`), false, "enum"},
		{"10000 null paths", `{"type":"object","properties":{` + strings.TrimPrefix(strings.Repeat(`,"x":{"$ref":"#/$defs/D"}`, 1), ",") + `},"required":["x"],"$defs":{"D":` + manyProps(1, `{"type":"string"}`) + `}}`, true, ""},
	}
	// 100 uses of a definition with 100 optional properties: 10000 paths.
	useDef := func(uses int) string {
		var b strings.Builder
		var names []string
		for i := range uses {
			if i > 0 {
				b.WriteByte(',')
			}
			names = append(names, fmt.Sprint("u", i))
			fmt.Fprintf(&b, `"u%d":{"$ref":"#/$defs/D"}`, i)
		}
		var d strings.Builder
		for i := range 100 {
			if i > 0 {
				d.WriteByte(',')
			}
			fmt.Fprintf(&d, `"p%d":{"type":"string"}`, i)
		}
		r, _ := json.Marshal(names)
		return `{"type":"object","properties":{` + b.String() + `},"required":` + string(r) + `,"$defs":{"D":{"type":"object","properties":{` + d.String() + `}}}}`
	}
	cases = append(cases[:len(cases)-1],
		struct {
			name string
			in   string
			ok   bool
			kw   string
		}{"10000 null paths", useDef(100), true, ""},
		struct {
			name string
			in   string
			ok   bool
			kw   string
		}{"10100 null paths", useDef(101), false, ""})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, paths, err := driver.StrictSchema(decode(t, c.in))
			if c.ok {
				if err != nil {
					t.Fatalf("StrictSchema: %.300v", err)
				}
				if strings.HasPrefix(c.name, "10000 null paths") && len(paths) != 10000 {
					t.Fatalf("%d null paths, want 10000", len(paths))
				}
				return
			}
			var se *driver.StrictError
			if !errors.As(err, &se) || !errors.Is(err, driver.ErrNotStrict) {
				t.Fatalf("err = %.300v, want a *StrictError", err)
			}
			if se.Keyword != c.kw {
				t.Fatalf("error on keyword %q, want %q: %.300v", se.Keyword, c.kw, err)
			}
			t.Logf("%.300v", err)
		})
	}
}

func TestStrictErrorMessage(t *testing.T) {
	_, _, err := driver.StrictSchema(decode(t, props(`"a":{"type":"string","allOf":[]}`)))
	want := `openai: schema not supported in strict mode: keyword "allOf" is not supported (at /properties/a/allOf)`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
	_, _, err = driver.StrictSchema(decode(t, `{"type":"string"}`))
	if err == nil || !strings.Contains(err.Error(), `"type": "object"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestStrictSchemaGolden converts the realistic schemas under
// testdata/strict: NAME.json is the input, NAME.golden.json the expected
// {"strict": ..., "nullPaths": ...} or {"error": ...}. Run with -update to
// rewrite the golden files.
func TestStrictSchemaGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/strict/*.json")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			schema := decode(t, string(in))
			before := deepCopy(schema)
			strict, paths, err := driver.StrictSchema(schema)
			if !reflect.DeepEqual(schema, before) {
				t.Fatal("StrictSchema modified its input")
			}
			got := map[string]any{"strict": strict, "nullPaths": paths}
			if err != nil {
				got = map[string]any{"error": err.Error()}
			} else if msg := checkStrictRules(strict); msg != "" {
				t.Errorf("result breaks a strict-mode rule: %s", msg)
			}
			gotJSON, _ := json.MarshalIndent(got, "", "  ")
			gotJSON = append(gotJSON, '\n')
			golden := strings.TrimSuffix(f, ".json") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, gotJSON, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if string(want) != string(gotJSON) {
				t.Errorf("%s differs from the result:\n%s", golden, gotJSON)
			}
		})
	}
	if n == 0 {
		t.Fatal("no golden inputs under testdata/strict")
	}
}

// checkStrictRules returns what breaks OpenAI's strict-mode rules in a
// converted schema, or "".
func checkStrictRules(strict map[string]any) string {
	defs := map[string]any{}
	for _, k := range []string{"$defs", "definitions"} {
		if m, ok := strict[k].(map[string]any); ok {
			for name, d := range m {
				defs["#/"+k+"/"+name] = d
			}
		}
	}
	var check func(s any, ptr string, root bool) string
	allowed := map[string]bool{
		"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
		"enum": true, "const": true, "anyOf": true, "$ref": true, "description": true, "title": true,
		"pattern": true, "minLength": true, "maxLength": true, "multipleOf": true, "minimum": true,
		"maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "minItems": true,
		"maxItems": true, "format": true,
	}
	check = func(s any, ptr string, root bool) string {
		m, ok := s.(map[string]any)
		if !ok {
			return ptr + ": not a map[string]any"
		}
		for k, v := range m {
			if root && (k == "$defs" || k == "definitions") {
				continue
			}
			if !allowed[k] {
				return fmt.Sprintf("%s: keyword %q", ptr, k)
			}
			switch k {
			case "format":
				if !slices.Contains([]string{"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}, v.(string)) {
					return ptr + ": format " + v.(string)
				}
			case "$ref":
				if _, ok := defs[strings.ReplaceAll(v.(string), "%20", " ")]; !ok && !strings.Contains(v.(string), "~") {
					return ptr + ": dangling $ref " + v.(string)
				}
			case "type":
				var ts []any
				if t, ok := v.(string); ok {
					ts = []any{t}
				} else if ts, ok = v.([]any); !ok {
					return ptr + ": type is neither a string nor []any"
				}
				for _, t := range ts {
					if !slices.Contains([]any{"integer", "number", "string", "boolean", "null", "object", "array"}, t) {
						return fmt.Sprintf("%s: type %v", ptr, t)
					}
				}
			}
		}
		if _, ok := m["anyOf"]; ok && root {
			return ptr + ": anyOf at the root"
		}
		if p, ok := m["properties"]; ok {
			pm, ok := p.(map[string]any)
			if !ok {
				return ptr + ": properties is not a map"
			}
			if m["additionalProperties"] != false {
				return ptr + ": additionalProperties is not false"
			}
			req, _ := m["required"].([]any)
			names := sortedMapKeys(pm)
			if len(req) != len(names) {
				return ptr + ": not every property is required"
			}
			for i, n := range names {
				if req[i] != n {
					return ptr + ": required is not the sorted property names"
				}
				if msg := check(pm[n], ptr+"/properties/"+n, false); msg != "" {
					return msg
				}
			}
		} else if _, ok := m["additionalProperties"]; ok {
			return ptr + ": additionalProperties without properties"
		}
		if ts := fmt.Sprint(m["type"]); strings.Contains(ts, "object") {
			if _, ok := m["properties"]; !ok {
				return ptr + ": object without properties"
			}
		}
		if ts := fmt.Sprint(m["type"]); strings.Contains(ts, "array") {
			if _, ok := m["items"]; !ok {
				return ptr + ": array without items"
			}
		}
		if it, ok := m["items"]; ok {
			if msg := check(it, ptr+"/items", false); msg != "" {
				return msg
			}
		}
		if a, ok := m["anyOf"]; ok {
			for i, b := range a.([]any) {
				if msg := check(b, fmt.Sprintf("%s/anyOf/%d", ptr, i), false); msg != "" {
					return msg
				}
			}
		}
		return ""
	}
	if msg := check(strict, "", true); msg != "" {
		return msg
	}
	for _, name := range sortedMapKeys(defs) {
		if msg := check(defs[name], name, false); msg != "" {
			return msg
		}
	}
	return ""
}
