// Package gemini maps MCP tools and results to the Gemini API's
// generateContent. It maps function declarations, functionCall parts into
// calls, and functionResponse parts. [Driver] is its one export: the API
// as package adapters drives it. Programs use adapters.Gemini, its Wire
// for the HTTP API.
//
// Experimental: the shapes come from the Gemini API reference, not from
// end-to-end runs against the API. They may change in a minor release.
package gemini

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/internal/budget"
	"github.com/conduitmcp/conduit/adapters/internal/render"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/conduitmcp/conduit/internal/modeltext"
	"github.com/conduitmcp/conduit/internal/tokens"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type (
	defKey   struct{}
	checkKey struct{}
)

// listTools returns the tool set as function declarations, in the tool set's
// order. Each is {"name", "description", "parametersJsonSchema"}. The
// input schema is unchanged. A tool without a description has "". Wrap
// them as {"functionDeclarations": tools} in the request's "tools". Each
// declaration is built once per tool and kept in the tool's memo. Every
// listing gets fresh maps. Their nested values (the schema) are shared
// and must not be modified.
func listTools(ts *conduit.ToolSet) []map[string]any {
	out := make([]map[string]any, 0, ts.Len())
	for t := range ts.All() {
		def := t.Memo(defKey{}, func() any { return declaration(t) }).(map[string]any)
		cp := make(map[string]any, len(def))
		for k, v := range def {
			cp[k] = v
		}
		out = append(out, cp)
	}
	return out
}

func declaration(t *conduit.Tool) map[string]any {
	return map[string]any{
		"name":                 t.Exposed,
		"description":          toolcall.Description(t.Description),
		"parametersJsonSchema": schema(t.InputSchema),
	}
}

// schema is the input schema as a JSON object, unchanged. A decoded object
// is used as it is. Any other value is used as it marshals. That may be a
// *jsonschema.Schema of a hand-built tool set. Only a missing or
// unreadable schema becomes the empty object schema.
func schema(s any) map[string]any {
	switch v := s.(type) {
	case map[string]any:
		return v
	case nil:
	default:
		if data, err := json.Marshal(v); err == nil {
			var m map[string]any
			if json.Unmarshal(data, &m) == nil && m != nil {
				return m
			}
		}
	}
	return toolcall.SchemaMap(nil)
}

// nameRE is a function name the Gemini API accepts, 128 characters at
// most.
var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$`)

// check reports a name the Gemini API would refuse. Exposed names are
// made to fit, so this finds only tool sets built by hand.
func check(t *conduit.Tool) []toolcall.Warning {
	if nameRE.MatchString(t.Exposed) {
		return nil
	}
	return []toolcall.Warning{{Tool: t.Exposed,
		Message: "Gemini function names must match " + nameRE.String()}}
}

// parse returns the functionCall parts of a generateContent response's
// first candidate, in order. It also reads a Content: anything with a
// "parts" list. A call without "args" has none. Gemini leaves them out for
// a function without parameters. "args" of null is not an object, so its
// call is answered, not sent.
func parse(response any) ([]toolcall.Raw, error) {
	m, err := jsonv.Decode(response)
	if err != nil {
		return nil, err
	}
	content := m
	if cands, ok := m["candidates"].([]any); ok {
		if len(cands) == 0 {
			return nil, nil
		}
		content = jsonv.Object(jsonv.Object(cands[0])["content"])
		if content == nil {
			// A candidate stopped for safety or recitation has no content.
			return nil, nil
		}
	} else if _, ok := m["parts"]; !ok {
		if e := jsonv.Object(m["error"]); e != nil {
			return nil, fmt.Errorf("gemini: the API answered an error: %v: %v", e["status"], e["message"])
		}
		if _, ok := m["promptFeedback"]; ok {
			return nil, nil
		}
		return nil, fmt.Errorf("gemini: the response has no \"candidates\" or \"parts\"%s", driver.Mismatch("gemini", m))
	}
	parts, ok := content["parts"].([]any)
	if !ok && content["parts"] != nil {
		return nil, fmt.Errorf("gemini: the content's \"parts\" is not a list")
	}
	var raws []toolcall.Raw
	for _, p := range parts {
		fc := jsonv.Object(jsonv.Object(p)["functionCall"])
		if fc == nil {
			continue
		}
		args, has := fc["args"]
		raws = append(raws, toolcall.Raw{ID: jsonv.String(fc["id"]), Name: jsonv.String(fc["name"]), Args: render.DecodedArgs(args, has)})
	}
	return raws, nil
}

// prepare renders the answer to one call, a functionResponse part. It
// holds:
//
//   - the exposed name;
//   - the call's id, when Gemini sent one;
//   - the result under response.output;
//   - or a failure, and an isError result, under response.error.
//
// Under the default structured mode (prefer), the output is the
// structuredContent object itself when there is one. Else it is the
// content as text. An isError result always shows its content, which
// carries the error's words. It falls back to its structuredContent, as
// JSON text, only when it has none. Images are placeholders.
//
// A result over its budget is cut. The budget is o.MaxResultTokens,
// default toolcall.DefaultMaxResultTokens. A text ends with a notice. A
// structuredContent object is cut into a valid object. Its notice is
// response.notice. When nothing of the object fits, the notice is the
// output itself.
func prepare(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) *budget.Pending {
	var r render.Rendered
	switch {
	case err != nil || res == nil:
		r = budget.ErrorText(err)
	case res.IsError:
		mode := toolcall.StructuredAuto
		if o != nil && o.Structured != toolcall.StructuredDefault {
			mode = o.Structured
		}
		r = render.Render(res, &render.RenderOptions{Mode: mode})
	default:
		mode := toolcall.StructuredPrefer
		if o != nil && o.Structured != toolcall.StructuredDefault {
			mode = o.Structured
		}
		r = render.Render(res, &render.RenderOptions{Mode: mode, StructuredValue: true})
	}
	p := budget.Pend(r, tokens.GeminiImage, func(r render.Rendered, notice string) map[string]any {
		return functionResponse(c, r, notice)
	})
	if r.Structured != nil && len(res.Content) > 0 {
		// The read tool reads the content, which holds the same data as
		// text, by lines.
		p.ReadAs(render.Render(res, &render.RenderOptions{Mode: toolcall.StructuredIgnore}).Parts)
	}
	return p
}

// functionResponse is the functionResponse part of a rendered result.
// notice is the notice of a structured value that was cut.
func functionResponse(c toolcall.Call, r render.Rendered, notice string) map[string]any {
	fr := map[string]any{"name": c.Name}
	if c.ID != "" {
		fr["id"] = c.ID
	}
	switch {
	case r.IsError:
		text := render.Text(r.Parts)
		if strings.TrimSpace(text) == "" {
			text = modeltext.EmptyError
		}
		fr["response"] = map[string]any{"error": text}
	case r.Structured != nil && notice != "":
		fr["response"] = map[string]any{"output": r.Structured, "notice": notice}
	case r.Structured != nil:
		fr["response"] = map[string]any{"output": r.Structured}
	case notice != "":
		fr["response"] = map[string]any{"output": notice} // nothing of the value fits
	default:
		fr["response"] = map[string]any{"output": render.Text(r.Parts)}
	}
	return map[string]any{"functionResponse": fr}
}
