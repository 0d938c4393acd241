// OpenAI's strict mode for tool schemas: the conversion and its errors.
// Its text keeps the "openai:" prefix, since the mode is OpenAI's.

package driver

import (
	"errors"
	"fmt"
)

// ErrNotStrict is wrapped by every error [StrictSchema] returns. The
// schema cannot be expressed in OpenAI strict mode. So the tool must be
// sent with "strict": false and its original schema, or left out.
var ErrNotStrict = errors.New("openai: schema not supported in strict mode")

// StrictError says why a schema cannot be converted to strict mode. It
// unwraps to [ErrNotStrict].
type StrictError struct {
	// Pointer is the JSON pointer (RFC 6901) into the input schema of the
	// offending keyword or schema. "" is the root.
	Pointer string
	// Keyword is the offending keyword. It is "" when the schema as a whole
	// is at fault, for example an untyped schema.
	Keyword string
	// Reason says what is wrong, in words fit for a log line.
	Reason string
}

// Error returns ErrNotStrict's text, the reason and the pointer.
func (e *StrictError) Error() string {
	where := e.Pointer
	if where == "" {
		where = "the root"
	}
	return fmt.Sprintf("%v: %s (at %s)", ErrNotStrict, e.Reason, where)
}

// Unwrap returns ErrNotStrict.
func (e *StrictError) Unwrap() error { return ErrNotStrict }

// OpenAI's documented strict-mode limits.
const (
	maxProperties      = 5000
	maxObjectDepth     = 10
	maxStringChars     = 120000
	maxEnumValues      = 1000
	largeEnumThreshold = 250
	maxLargeEnumChars  = 15000
)

// Bounds of our own, so an untrusted schema cannot make the conversion
// recurse or allocate without limit.
const (
	// maxSchemaDepth bounds the nesting of schemas: properties, items, anyOf
	// branches and $ref hops. It is far beyond what the object-nesting
	// limit leaves useful.
	maxSchemaDepth = 128
	// maxValueDepth bounds the nesting of enum and const values.
	maxValueDepth = 128
	// maxNullPaths bounds the null paths of one schema. A $ref'd definition
	// used in many places multiplies its paths.
	maxNullPaths = 10000
	// maxPathWork bounds the path elements built while collecting null paths.
	maxPathWork = 4 << 20
	// maxWalkDepth bounds recursion of the analysis passes through $ref
	// chains.
	maxWalkDepth = 4096
	// maxConflictWork bounds the schema visits of the null-path conflict
	// check (anyOf branches times paths).
	maxConflictWork = 50_000_000
)

// unsupportedKeywords fail the conversion. Strict mode cannot express
// them. Dropping them would let the model send arguments the tool rejects.
var unsupportedKeywords = map[string]bool{
	"allOf": true, "not": true, "oneOf": true,
	"if": true, "then": true, "else": true,
	"dependentRequired": true, "dependentSchemas": true, "dependencies": true,
	"patternProperties": true, "unevaluatedProperties": true, "unevaluatedItems": true,
	"propertyNames": true, "prefixItems": true,
	"contains": true, "minContains": true, "maxContains": true,
	"$dynamicRef": true, "$recursiveRef": true,
}

// validatingKeywords are the kept keywords that constrain a value. A $ref
// or anyOf schema may not carry any other of them. Keeping them would need
// allOf semantics, which strict mode lacks.
var validatingKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true, "$ref": true,
	"pattern": true, "minLength": true, "maxLength": true,
	"multipleOf": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true,
	"minItems": true, "maxItems": true,
}

// Every keyword in neither list above is dropped, unless the converter
// handles it. The converter handles description, title, format, and $defs
// and definitions at the root. The dropped keywords are default, examples,
// uniqueItems, minProperties, maxProperties, contentMediaType,
// contentEncoding, contentSchema, $schema, $id, $comment, $anchor,
// $dynamicAnchor, $vocabulary, readOnly, writeOnly, deprecated,
// additionalItems, x-* and any unknown keyword. Tuple "items" fails, so
// additionalItems never applies. These keywords only narrow or annotate.
// The server still validates the arguments. Failing on them would send
// many tools without strict mode for nothing.

// strictFormats are the "format" values strict mode accepts; other formats
// are dropped.
var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

var validTypes = map[string]bool{
	"integer": true, "number": true, "string": true, "boolean": true,
	"null": true, "object": true, "array": true,
}

// StrictSchema converts an MCP tool input schema into an OpenAI strict-mode
// schema. It returns the paths of the properties it made nullable, to give
// to [StripNulls]. They are sorted, and nil when there are none.
//
// Every object gets "additionalProperties": false. It lists all its
// properties, sorted, in "required". An optional property becomes nullable
// and its path is returned. Only local $refs to the root's "$defs" or
// "definitions" are followed. The definitions they reach are converted and
// emitted under the same key. Unused ones are left out.
//
// These make it fail with a [*StrictError] that wraps [ErrNotStrict]:
//
//   - keywords strict mode cannot express: allOf, oneOf, not,
//     if/then/else, dependent*, patternProperties, unevaluated*,
//     propertyNames, prefixItems, contains, $dynamicRef, $recursiveRef;
//   - open maps, arrays without items, and untyped schemas;
//   - other $refs, including "#";
//   - recursion that reaches an optional property;
//   - schemas over OpenAI's limits.
//
// The limits are counted on the result:
//
//   - 5000 properties;
//   - 10 levels of objects. The root is the first. $refs count where they
//     are used, a recursion once.
//   - 120000 characters of property names, definition names and string
//     enum and const values;
//   - 1000 enum values, nulls it adds included;
//   - 15000 characters of strings in an enum of more than 250 values.
//
// It also fails when a null it would strip is one the schema requires
// elsewhere at the same location. That may be an anyOf branch where the
// property is required and nullable. It may be a null inside an enum
// value. It fails beyond 10000 null paths too.
//
// Keywords that only narrow or annotate are dropped. The server still
// validates the arguments. The dropped keywords are default, examples,
// uniqueItems, minProperties, maxProperties, contentMediaType,
// contentEncoding, contentSchema, $schema, $id, $comment, $anchor,
// $dynamicAnchor, $vocabulary, readOnly, writeOnly, deprecated and
// additionalItems. Also dropped are formats strict mode lacks, "$defs"
// below the root, x-* and every other unknown keyword. Type-specific
// keywords on a schema whose type cannot have them are dropped too. An
// example is "pattern" on an integer. They have no effect.
//
// Schemas may come from json.Unmarshal or be built in Go. Nested maps may
// be any map with string keys. Arrays may be any slice. Numbers may be any
// Go numeric type or json.Number. Other values are read through
// encoding/json. The result holds only map[string]any, []any, strings,
// bools and numbers. It shares nothing with schema, and is the same for
// the same input. schema is never modified.
func StrictSchema(schema map[string]any) (strict map[string]any, nullPaths []NullPath, err error) {
	c := &converter{root: schema, defs: map[string]*sdef{}, defMaps: map[string]map[string]any{}}
	root, err := c.convertRoot(schema)
	if err != nil {
		return nil, nil, err
	}
	if err := c.analyze(root); err != nil {
		return nil, nil, err
	}
	paths, err := c.nullPaths(root)
	if err != nil {
		return nil, nil, err
	}
	out := root.out
	for _, d := range c.order {
		cm, _ := out[d.container].(map[string]any)
		if cm == nil {
			cm = map[string]any{}
			out[d.container] = cm
		}
		cm[d.name] = d.node.out
	}
	return out, paths, nil
}
