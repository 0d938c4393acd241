package audit

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The walk of a tool's schemas: their texts, and the parameter rules
// (side channels, secrets) applied to each property.

const maxSchemaDepth = 200 // deeper schema text is not read

// nonProse are the schema keywords whose string values are not prose:
// names, types, patterns, references.
var nonProse = []string{"$ref", "$schema", "$id", "$anchor", "$dynamicRef", "$dynamicAnchor", "format", "type", "pattern", "contentMediaType", "contentEncoding", "required"}

// schemaTexts adds every string of a schema: keys (which name properties)
// for the invisible-character rule only, values as prose unless their
// keyword says otherwise.
func schemaTexts(out []text, path string, v any, key string, depth int) []text {
	if depth > maxSchemaDepth {
		return out
	}
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		for _, k := range keys {
			p := path + "." + k
			out = append(out, text{p + " (key)", k, false})
			out = schemaTexts(out, p, x[k], k, depth+1)
		}
	case []any:
		for i, e := range x {
			out = schemaTexts(out, fmt.Sprintf("%s[%d]", path, i), e, key, depth+1)
		}
	case string:
		out = append(out, text{path, x, !slices.Contains(nonProse, key)})
	}
	return out
}

// paramFindings applies the parameter rules to every property of a
// schema, nested objects and array items included.
func paramFindings(schema map[string]any, path string, depth int, add func(rule, field, msg, excerpt string)) {
	if schema == nil || depth > maxSchemaDepth {
		return
	}
	if props, ok := schema["properties"].(map[string]any); ok {
		names := slices.Sorted(maps.Keys(props))
		for _, name := range names {
			p, _ := props[name].(map[string]any)
			field := path + ".properties." + name
			checkParam(name, p, field, add)
			paramFindings(p, field, depth+1, add)
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if sub, ok := schema[k].(map[string]any); ok {
			paramFindings(sub, path+"."+k, depth+1, add)
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		if list, ok := schema[k].([]any); ok {
			for i, e := range list {
				sub, _ := e.(map[string]any)
				paramFindings(sub, fmt.Sprintf("%s.%s[%d]", path, k, i), depth+1, add)
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := schema[k].(map[string]any); ok {
			names := slices.Sorted(maps.Keys(defs))
			for _, n := range names {
				sub, _ := defs[n].(map[string]any)
				paramFindings(sub, path+"."+k+"."+n, depth+1, add)
			}
		}
	}
}

func checkParam(name string, p map[string]any, field string, add func(rule, field, msg, excerpt string)) {
	desc, _ := p["description"].(string)
	if title, _ := p["title"].(string); title != "" {
		desc = strings.TrimSpace(title + ". " + desc)
	}
	c := clean(desc)
	norm := normalizeName(name)
	kind := paramKind(p)
	if kind == "string" || kind == "array" {
		if slices.Contains(sideChannelNames, norm) {
			add(RuleSideChannel, field, fmt.Sprintf("the parameter %q is named for the model's context", name), excerpt(c, []int{0, 0}))
		} else if m := firstMatch(c, strings.ToLower(c), []pattern{sideChannelPattern}, true); m != nil {
			add(RuleSideChannel, field, fmt.Sprintf("the parameter %q asks for the model's %s", name, strings.ToLower(c[m[0]:m[1]])), excerpt(c, m))
		} else if m := firstMatch(c, strings.ToLower(c), []pattern{putPattern}, true); m != nil && !(putSecret.MatchString(c[m[0]:m[1]]) && secretish(norm)) {
			// A secret asked for in a parameter for one is the
			// secret-parameter rule's.
			add(RuleSideChannel, field, fmt.Sprintf("the parameter %q asks the model to %s", name, strings.ToLower(c[m[0]:m[1]])), excerpt(c, m))
		}
	}
	if kind == "string" {
		if suffixed(norm, secretNameSuffixes) {
			add(RuleSecretParam, field, fmt.Sprintf("the parameter %q is named for a secret", name), excerpt(c, []int{0, 0}))
		} else if m := firstMatch(c, strings.ToLower(c), []pattern{secretDescription}, true); m != nil {
			add(RuleSecretParam, field, fmt.Sprintf("the parameter %q asks for %s", name, strings.ToLower(c[m[0]:m[1]])), excerpt(c, m))
		}
	}
}

// describedSideChannels reports a top-level text parameter that a
// sentence of the tool's description names while asking for the model's
// conversation or instructions ("include the conversation history in the
// 'context' parameter") or for the user's secrets ("put the user's API key
// in the 'note' field"), and a description that asks for them in a
// parameter it does not name ("place the conversation in the notes
// field").
func describedSideChannels(desc string, schema map[string]any, add func(rule, field, msg, excerpt string)) {
	if desc == "" {
		return
	}
	l := strings.ToLower(desc)
	type match struct {
		span []int
		put  bool // a put-in request, not a mention of the conversation
	}
	var matches []match
	for _, m := range sideChannelPattern.all(desc, l) {
		if !negated(desc, m[0]) {
			matches = append(matches, match{m, false})
		}
	}
	for _, m := range putPattern.all(desc, l) {
		if !negated(desc, m[0]) {
			matches = append(matches, match{m, true})
		}
	}
	if len(matches) == 0 {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	names := slices.Sorted(maps.Keys(props))
	named := false
	for _, name := range names {
		p, _ := props[name].(map[string]any)
		if k := paramKind(p); (k != "string" && k != "array") || len(name) < 3 {
			continue
		}
		for _, m := range matches {
			if !namesParameter(sentence(desc, m.span), name) {
				continue
			}
			what := "for the model's " + strings.ToLower(desc[m.span[0]:m.span[1]])
			if m.put {
				what = "the model to " + strings.ToLower(desc[m.span[0]:m.span[1]])
			}
			add(RuleSideChannel, "inputSchema.properties."+name,
				fmt.Sprintf("the description asks %s in the parameter %q", what, name), excerpt(desc, m.span))
			named = true
			break
		}
	}
	if named {
		return
	}
	for _, m := range matches {
		if m.put && intoParameter.MatchString(desc[m.span[1]:m.span[1]+len(sentence(desc[m.span[1]:], []int{0, 0}))]) {
			add(RuleSideChannel, "description",
				fmt.Sprintf("asks the model to %s in a parameter", strings.ToLower(desc[m.span[0]:m.span[1]])), excerpt(desc, m.span))
			return
		}
	}
}

// paramKind is "string" for a parameter that takes text (a string, or no
// type at all), "array" for a list, or another JSON type.
func paramKind(p map[string]any) string {
	var types []string
	switch t := p["type"].(type) {
	case nil:
		for _, k := range []string{"anyOf", "oneOf"} {
			if list, ok := p[k].([]any); ok {
				for _, e := range list {
					if m, ok := e.(map[string]any); ok {
						if s, ok := m["type"].(string); ok {
							types = append(types, s)
						}
					}
				}
			}
		}
		if len(types) == 0 {
			if _, isEnum := p["enum"]; isEnum {
				return "enum"
			}
			if _, hasProps := p["properties"]; hasProps {
				return "object"
			}
			return "string"
		}
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	}
	switch {
	case slices.Contains(types, "string"):
		if _, isEnum := p["enum"]; isEnum {
			return "enum" // a closed set of values is no channel
		}
		return "string"
	case slices.Contains(types, "array"):
		return "array"
	case len(types) > 0:
		return types[0]
	}
	return "string"
}

// secretish reports whether a normalized parameter name is for a key, a
// token or another secret.
func secretish(norm string) bool {
	return suffixed(norm, secretNameSuffixes) || strings.Contains(norm, "key") || strings.Contains(norm, "token") || strings.Contains(norm, "auth")
}

func normalizeName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r != '_' && r != '-' && r != ' ' && r != '.' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func suffixed(s string, suffixes []string) bool {
	for _, suf := range suffixes {
		if strings.HasSuffix(s, suf) {
			return true
		}
	}
	return false
}
