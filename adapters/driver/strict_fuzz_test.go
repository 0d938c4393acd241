package driver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/conduitmcp/conduit/adapters/driver"
)

// FuzzStrictSchema converts arbitrary schemas. A conversion must not panic,
// must leave its input alone, and when it succeeds must obey every strict
// rule; and any value the strict schema allows (one is generated from
// choices) must, once StripNulls has run, be allowed by the original schema.
func FuzzStrictSchema(f *testing.F) {
	for i, c := range strictCases {
		f.Add([]byte(c.in), []byte{byte(i), 1, 2, 3, 5, 8, 13, 21})
	}
	for _, in := range goldenInputs(f) {
		f.Add(in, []byte{0, 1, 0, 1, 2})
		f.Add(in, []byte{255, 7, 3, 128, 64, 9})
	}
	f.Fuzz(func(t *testing.T, schemaJSON, choices []byte) {
		checkRoundTrip(t, schemaJSON, choices)
	})
}

// TestStrictRoundTrip runs the fuzz property over the table cases and the
// golden inputs with a few generator seeds, and makes sure the generator
// does produce valid values for them, so the fuzz target checks something.
func TestStrictRoundTrip(t *testing.T) {
	inputs := map[string][]byte{}
	for _, c := range strictCases {
		if c.want != "" {
			inputs[c.name] = []byte(c.in)
		}
	}
	for i, in := range goldenInputs(t) {
		var m map[string]any
		_ = json.Unmarshal(in, &m)
		if _, _, err := driver.StrictSchema(m); err == nil {
			inputs[fmt.Sprint("golden ", i)] = in
		}
	}
	// Inputs whose original jsonschema-go cannot use: it rejects boolean
	// exclusive bounds, $vocabulary, and $defs next to definitions.
	unusable := map[string]bool{"draft 4 exclusive bounds": true, "dropped $vocabulary": true, "$ref to $ref": true}
	for _, name := range sortedMapKeys(inputs) {
		t.Run(name, func(t *testing.T) {
			checked := 0
			rt := prepareRoundTrip(t, inputs[name])
			for seed := range 64 {
				choices := []byte{byte(seed), byte(seed * 7), byte(seed * 13), byte(seed >> 1), byte(seed * 31), byte(seed * 3)}
				choices = append(choices, choices...)
				if rt != nil && rt.check(t, choices) {
					checked++
				}
			}
			if checked == 0 && !unusable[name] {
				t.Errorf("no generated value was checked")
			}
		})
	}
}

func goldenInputs(tb testing.TB) [][]byte {
	files, _ := filepath.Glob("testdata/strict/*.json")
	var out [][]byte
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// checkRoundTrip checks one schema and one generated value; it reports
// whether a value was generated and checked against the original schema.
func checkRoundTrip(t *testing.T, schemaJSON, choices []byte) bool {
	t.Helper()
	rt := prepareRoundTrip(t, schemaJSON)
	return rt != nil && rt.check(t, choices)
}

// roundTrip is a converted schema ready for checking values: both schemas
// resolved once, since resolving costs more than the rest.
type roundTrip struct {
	schemaJSON, strictJSON []byte
	strict                 map[string]any // decoded from strictJSON
	paths                  []driver.NullPath
	orig, strictRes        *jsonschema.Resolved
}

// prepareRoundTrip converts a schema and checks what holds for any
// conversion. It returns nil when no value can be checked: the conversion
// failed, or jsonschema-go cannot use the original schema.
func prepareRoundTrip(t *testing.T, schemaJSON []byte) *roundTrip {
	t.Helper()
	var schema map[string]any
	if json.Unmarshal(schemaJSON, &schema) != nil || schema == nil {
		return nil
	}
	before := deepCopy(schema)
	strict, paths, err := driver.StrictSchema(schema)
	if !reflect.DeepEqual(schema, before) {
		t.Fatalf("StrictSchema modified its input %s", schemaJSON)
	}
	if err != nil {
		var se *driver.StrictError
		if !errors.Is(err, driver.ErrNotStrict) || !errors.As(err, &se) || strict != nil || paths != nil {
			t.Fatalf("bad failure: %v, %v, %v", strict, paths, err)
		}
		return nil
	}
	if msg := checkStrictRules(strict); msg != "" {
		t.Fatalf("result breaks a strict-mode rule: %s\nschema %s\nstrict %s", msg, schemaJSON, canonical(t, strict))
	}
	for i, p := range paths {
		if len(p) == 0 || i > 0 && slices.Compare(paths[i-1], p) >= 0 {
			t.Fatalf("null paths not sorted, unique and non-empty: %q", paths)
		}
	}
	strictJSON, err := json.Marshal(strict)
	if err != nil {
		t.Fatalf("strict schema does not marshal: %v", err)
	}
	again, againPaths, err := driver.StrictSchema(schema)
	if err != nil || !reflect.DeepEqual(again, strict) || !reflect.DeepEqual(againPaths, paths) {
		t.Fatalf("StrictSchema is not deterministic")
	}
	vandalize(again)
	if !reflect.DeepEqual(schema, before) {
		t.Fatalf("the result shares maps or slices with the input %s", schemaJSON)
	}

	orig, ok := resolveSchema(relax(deepCopy(schema)))
	if !ok {
		return nil // jsonschema-go cannot use the original: nothing to compare with
	}
	strictRes, ok := resolveSchema(strict)
	if !ok {
		t.Fatalf("jsonschema-go cannot resolve the strict schema %s (the original resolves)", strictJSON)
	}
	rt := &roundTrip{schemaJSON: schemaJSON, strictJSON: strictJSON, paths: paths, orig: orig, strictRes: strictRes}
	_ = json.Unmarshal(strictJSON, &rt.strict)
	return rt
}

// check generates a value of the strict schema from choices and checks
// that, stripped, the original schema allows it. It reports whether a value
// was checked.
func (rt *roundTrip) check(t *testing.T, choices []byte) bool {
	t.Helper()
	g := &gen{choices: choices, root: rt.strict}
	v, ok := g.value(rt.strict, 0)
	if !ok || rt.strictRes.Validate(v) != nil {
		return false // the generator could not satisfy the strict schema
	}
	stripped := driver.StripNulls(deepCopy(v).(map[string]any), rt.paths)
	if err := rt.orig.Validate(stripped); err != nil {
		t.Fatalf("a value the strict schema allows, stripped, fails the original schema\nschema   %s\nstrict   %s\npaths    %q\nvalue    %s\nstripped %s\nerror    %v",
			rt.schemaJSON, rt.strictJSON, rt.paths, canonical(t, v), canonical(t, stripped), err)
	}
	if c := driver.CompiledStrip(rt.paths)(deepCopy(v).(map[string]any)); !reflect.DeepEqual(c, stripped) {
		t.Fatalf("the trie strips to %s, StripNulls to %s", canonical(t, c), canonical(t, stripped))
	}
	if would, changed := driver.WouldStrip(rt.paths, v), !reflect.DeepEqual(v, stripped); would != changed {
		t.Fatalf("WouldStrip = %t, but StripNulls changed the value: %t\npaths %q\nvalue %s", would, changed, rt.paths, canonical(t, v))
	}
	return true
}

func resolveSchema(v any) (rs *jsonschema.Resolved, ok bool) {
	defer func() {
		if recover() != nil {
			rs, ok = nil, false
		}
	}()
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, false
	}
	switch s.Schema {
	case "", "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2020-12/schema":
	default:
		return nil, false // Validate would refuse every value
	}
	rs, err = s.Resolve(nil)
	return rs, err == nil
}

// schemaKeywords are the keywords jsonschema-go reads.
var schemaKeywords = strings.Fields(`$id $schema $ref $comment $defs definitions dependencies $anchor
	$dynamicAnchor $dynamicRef $vocabulary title description default deprecated readOnly writeOnly
	examples type enum const multipleOf minimum maximum exclusiveMinimum exclusiveMaximum minLength
	maxLength pattern prefixItems items minItems maxItems additionalItems uniqueItems contains
	minContains maxContains unevaluatedItems minProperties maxProperties required dependentRequired
	properties patternProperties additionalProperties propertyNames unevaluatedProperties allOf anyOf
	oneOf not if then else dependentSchemas contentEncoding contentMediaType contentSchema format`)

// relax removes from a schema the keywords StrictSchema drops although they
// narrow (the server still checks them): a strict value need not obey them.
// It also removes keys that differ from a keyword only in case: to JSON
// Schema they are unknown keywords, but encoding/json, under jsonschema-go,
// matches them to the keyword.
func relax(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range []string{"uniqueItems", "minProperties", "maxProperties"} {
			delete(x, k)
		}
		for k := range x {
			for _, kw := range schemaKeywords {
				if k != kw && strings.EqualFold(k, kw) {
					delete(x, k)
				}
			}
		}
		for k, e := range x {
			switch k {
			case "properties", "$defs", "definitions", "patternProperties", "dependentSchemas":
				if m, ok := e.(map[string]any); ok {
					for _, s := range m {
						relax(s)
					}
				}
			case "items", "additionalProperties", "not", "if", "then", "else", "contains",
				"anyOf", "allOf", "oneOf", "prefixItems", "propertyNames", "unevaluatedItems", "unevaluatedProperties":
				relax(e)
			}
		}
	case []any:
		for _, e := range x {
			relax(e)
		}
	}
	return v
}

// gen generates a value of a strict schema, each choice taken from choices.
type gen struct {
	choices []byte
	i       int
	root    map[string]any
	steps   int
}

func (g *gen) next() int {
	if len(g.choices) == 0 {
		return 0
	}
	b := g.choices[g.i%len(g.choices)]
	g.i++
	return int(b) + g.i/len(g.choices)
}

func (g *gen) pick(n int) int { return g.next() % n }

func (g *gen) value(s any, depth int) (any, bool) {
	g.steps++
	m, ok := s.(map[string]any)
	if !ok || depth > 40 || g.steps > 20000 {
		return nil, false
	}
	if r, ok := m["$ref"].(string); ok {
		return g.value(g.resolve(r), depth+1)
	}
	if a, ok := m["anyOf"].([]any); ok {
		start := g.pick(len(a))
		for k := range a {
			if v, ok := g.value(a[(start+k)%len(a)], depth+1); ok {
				return v, true
			}
		}
		return nil, false
	}
	if c, ok := m["const"]; ok {
		return deepCopy(c), true
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return deepCopy(e[g.pick(len(e))]), true
	}
	var types []string
	switch t := m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			types = append(types, e.(string))
		}
	}
	if len(types) == 0 {
		return nil, false
	}
	switch t := types[g.pick(len(types))]; t {
	case "null":
		return nil, true
	case "boolean":
		return g.pick(2) == 1, true
	case "integer", "number":
		return g.number(m, t == "integer")
	case "string":
		return g.str(m)
	case "array":
		lo, hi := intKw(m, "minItems", 0), intKw(m, "maxItems", -1)
		if lo > 20 {
			return nil, false
		}
		if hi < 0 || hi > lo+3 {
			hi = lo + 3
		}
		if hi < lo {
			return nil, false
		}
		n := lo + g.pick(hi-lo+1)
		out := make([]any, 0, n)
		for range n {
			v, ok := g.value(m["items"], depth+1)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case "object":
		props, _ := m["properties"].(map[string]any)
		out := map[string]any{}
		for _, name := range sortedMapKeys(props) {
			v, ok := g.value(props[name], depth+1)
			if !ok {
				return nil, false
			}
			out[name] = v
		}
		return out, true
	}
	return nil, false
}

func (g *gen) resolve(ref string) any {
	frag, err := url.PathUnescape(strings.TrimPrefix(ref, "#"))
	if err != nil {
		return nil
	}
	var cur any = g.root
	for _, seg := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		m, _ := cur.(map[string]any)
		cur = m[seg]
	}
	return cur
}

func intKw(m map[string]any, k string, def int) int {
	if f, ok := m[k].(float64); ok && f < 1e6 {
		return int(f)
	}
	return def
}

func (g *gen) number(m map[string]any, integer bool) (any, bool) {
	lo, hi := math.Inf(-1), math.Inf(1)
	exLo, exHi := math.Inf(-1), math.Inf(1)
	if f, ok := m["minimum"].(float64); ok {
		lo = f
	}
	if f, ok := m["maximum"].(float64); ok {
		hi = f
	}
	if f, ok := m["exclusiveMinimum"].(float64); ok {
		exLo = f
		lo = math.Max(lo, math.Nextafter(f, math.Inf(1)))
	}
	if f, ok := m["exclusiveMaximum"].(float64); ok {
		exHi = f
		hi = math.Min(hi, math.Nextafter(f, math.Inf(-1)))
	}
	switch {
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		lo, hi = -50, 50
	case math.IsInf(lo, -1):
		lo = hi - 100
	case math.IsInf(hi, 1):
		hi = lo + 100
	}
	if lo > hi {
		return nil, false
	}
	var v float64
	if mo, ok := m["multipleOf"].(float64); ok && mo > 0 {
		kLo, kHi := math.Ceil(lo/mo), math.Floor(hi/mo)
		if kLo > kHi || math.IsInf(kLo, 0) || math.IsInf(kHi, 0) {
			return nil, false
		}
		v = (kLo + float64(g.pick(int(math.Min(kHi-kLo, 50))+1))) * mo
	} else if integer || g.pick(2) == 0 {
		iLo, iHi := math.Ceil(lo), math.Floor(hi)
		if iLo > iHi {
			if integer {
				return nil, false
			}
			v = lo + (hi-lo)/2
		} else {
			v = iLo + float64(g.pick(int(math.Min(iHi-iLo, 100))+1))
		}
	} else {
		v = lo + (hi-lo)*float64(g.pick(97))/96
	}
	if integer && v != math.Trunc(v) || v < lo || v > hi || v <= exLo || v >= exHi || math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, false
	}
	return v, true
}

var formatExamples = map[string]string{
	"date-time": "2024-01-02T03:04:05Z", "time": "03:04:05Z", "date": "2024-01-02", "duration": "P1D",
	"email": "a@example.com", "hostname": "example.com", "ipv4": "192.0.2.1", "ipv6": "2001:db8::1",
	"uuid": "123e4567-e89b-12d3-a456-426614174000",
}

func (g *gen) str(m map[string]any) (any, bool) {
	lo, hi := intKw(m, "minLength", 0), intKw(m, "maxLength", -1)
	if hi < 0 {
		hi = lo + 64
	}
	if lo > hi || lo > 2000 {
		return nil, false
	}
	var s string
	if p, ok := m["pattern"].(string); ok {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			return nil, false
		}
		var b strings.Builder
		if !g.regex(re.Simplify(), &b, 0) {
			return nil, false
		}
		s = b.String()
	} else if f, ok := formatExamples[fmt.Sprint(m["format"])]; ok {
		s = f
	} else {
		const alphabet = "abcXYZ09 é☃\u0000\"\\"
		runes := []rune(alphabet)
		n := lo + g.pick(min(hi-lo, 8)+1)
		var b strings.Builder
		for range n {
			b.WriteRune(runes[g.pick(len(runes))])
		}
		s = b.String()
	}
	if n := utf8.RuneCountInString(s); n < lo || n > hi {
		return nil, false
	}
	return s, true
}

func (g *gen) regex(re *syntax.Regexp, b *strings.Builder, depth int) bool {
	if depth > 60 || b.Len() > 2000 {
		return false
	}
	repeat := func(n int) bool {
		for range n {
			if !g.regex(re.Sub[0], b, depth+1) {
				return false
			}
		}
		return true
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
		return true
	case syntax.OpCharClass:
		if len(re.Rune) < 2 {
			return false
		}
		i := 2 * g.pick(len(re.Rune)/2)
		lo, hi := re.Rune[i], re.Rune[i+1]
		b.WriteRune(lo + rune(g.next()%int(hi-lo+1)))
		return true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
		return true
	case syntax.OpCapture:
		return g.regex(re.Sub[0], b, depth+1)
	case syntax.OpStar:
		return repeat(g.pick(3))
	case syntax.OpPlus:
		return repeat(1 + g.pick(3))
	case syntax.OpQuest:
		return repeat(g.pick(2))
	case syntax.OpRepeat:
		hi := re.Max
		if hi < 0 {
			hi = re.Min + 2
		}
		if re.Min > 100 {
			return false
		}
		return repeat(re.Min + g.pick(min(hi-re.Min, 4)+1))
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !g.regex(s, b, depth+1) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		return g.regex(re.Sub[g.pick(len(re.Sub))], b, depth+1)
	}
	return false
}

// TestStrictRoundTripRandomSchemas checks the fuzz property on schemas
// built from a grammar that favors what byte mutation seldom reaches:
// anyOf branches sharing property names, $refs used at several places,
// nulls inside enum and const values, the name "[]".
func TestStrictRoundTripRandomSchemas(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	rng := rand.New(rand.NewPCG(1, 2))
	converted, checked := 0, 0
	for i := range n {
		sg := &schemaGen{rng: rng}
		schema := sg.root()
		data, err := json.Marshal(schema)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := driver.StrictSchema(schema); err == nil {
			converted++
		}
		rt := prepareRoundTrip(t, data)
		for s := range 8 {
			choices := []byte{byte(i), byte(s), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))}
			if rt != nil && rt.check(t, choices) {
				checked++
			}
		}
	}
	t.Logf("%d schemas, %d converted, %d values checked", n, converted, checked)
	if checked < n/4 {
		t.Errorf("only %d values checked", checked)
	}
}

type schemaGen struct {
	rng  *rand.Rand
	defs []string
}

var genNames = []string{"a", "b", "c", "[]"}

func (g *schemaGen) root() map[string]any {
	nd := g.rng.IntN(3)
	for i := range nd {
		g.defs = append(g.defs, fmt.Sprint("D", i))
	}
	root := g.object(0)
	if nd > 0 {
		defs := map[string]any{}
		for _, d := range g.defs {
			defs[d] = g.schema(1)
		}
		root["$defs"] = defs
	}
	return root
}

func (g *schemaGen) object(depth int) map[string]any {
	props := map[string]any{}
	var req []any
	for _, name := range genNames {
		if g.rng.IntN(3) == 0 {
			continue
		}
		props[name] = g.schema(depth + 1)
		if g.rng.IntN(2) == 0 {
			req = append(req, name)
		}
	}
	o := map[string]any{"type": "object", "properties": props}
	if req != nil {
		o["required"] = req
	}
	if g.rng.IntN(4) == 0 {
		o["additionalProperties"] = false
	}
	return o
}

func (g *schemaGen) value(depth int) any {
	switch g.rng.IntN(6) {
	case 0:
		return nil
	case 1:
		return "x"
	case 2:
		return float64(g.rng.IntN(3))
	case 3:
		return true
	case 4:
		if depth < 3 {
			m := map[string]any{}
			for _, n := range genNames {
				if g.rng.IntN(2) == 0 {
					m[n] = g.value(depth + 1)
				}
			}
			return m
		}
	}
	if depth < 3 {
		return []any{g.value(depth + 1)}
	}
	return nil
}

func (g *schemaGen) schema(depth int) any {
	leaf := depth > 2
	switch k := g.rng.IntN(11); {
	case k == 0 && !leaf:
		return g.object(depth)
	case k == 1 && !leaf:
		return map[string]any{"type": "array", "items": g.schema(depth + 1)}
	case k == 2 && !leaf:
		var branches []any
		for range 1 + g.rng.IntN(3) {
			branches = append(branches, g.schema(depth+1))
		}
		return map[string]any{"anyOf": branches}
	case k == 3 && len(g.defs) > 0:
		return map[string]any{"$ref": "#/$defs/" + g.defs[g.rng.IntN(len(g.defs))]}
	case k == 4:
		var vals []any
		for range 1 + g.rng.IntN(3) {
			vals = append(vals, g.value(0))
		}
		return map[string]any{"enum": vals}
	case k == 5:
		return map[string]any{"const": g.value(0)}
	case k == 6 && !leaf:
		o := g.object(depth)
		o["type"] = []any{"object", "null"}
		return o
	case k == 7:
		return map[string]any{"type": []any{"string", "null"}}
	case k == 8:
		return map[string]any{"type": "null"}
	case k == 9 && !leaf:
		o := g.object(depth)
		if g.rng.IntN(2) == 0 {
			o["enum"] = []any{g.value(0), g.value(0)}
		} else {
			o["const"] = g.value(0)
		}
		return o
	}
	return map[string]any{"type": []string{"string", "integer", "boolean"}[g.rng.IntN(3)]}
}
