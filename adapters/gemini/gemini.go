// Package gemini maps MCP tools and results to the Gemini API's
// generateContent: function declarations, functionCall parts into calls,
// and functionResponse parts. Its functions are pure, over the API's JSON
// as map[string]any.
//
// Experimental: the shapes come from the Gemini API reference, not from
// end-to-end runs against the API, and may change in a minor release.
package gemini

import (
	"fmt"
	"regexp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type defKey struct{}

// Tools returns the tool set as function declarations, in the tool set's
// order: {"name", "description", "parametersJsonSchema"}, the input schema
// unchanged. Wrap them as {"functionDeclarations": tools} in the request's
// "tools".
func Tools(ts *conduit.ToolSet) []map[string]any {
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
	schema, ok := t.InputSchema.(map[string]any)
	if !ok {
		schema = toolcall.SchemaMap(t.InputSchema)
	}
	return map[string]any{
		"name":                 t.Exposed,
		"description":          toolcall.Description(t.Description),
		"parametersJsonSchema": schema,
	}
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$`)

// Check reports names the Gemini API would refuse (exposed names are made
// to fit, so this finds only tool sets built by hand).
func Check(ts *conduit.ToolSet) []toolcall.Warning {
	var ws []toolcall.Warning
	for t := range ts.All() {
		if !nameRE.MatchString(t.Exposed) {
			ws = append(ws, toolcall.Warning{Tool: t.Exposed,
				Message: "Gemini function names must match " + nameRE.String()})
		}
	}
	return ws
}

// Parse returns the functionCall parts of a generateContent response's
// first candidate (or of a Content: anything with a "parts" list), in
// order.
func Parse(response any) ([]toolcall.Raw, error) {
	m, err := toolcall.Decode(response)
	if err != nil {
		return nil, err
	}
	content := m
	if cands, ok := m["candidates"].([]any); ok {
		if len(cands) == 0 {
			return nil, nil
		}
		content = toolcall.Object(toolcall.Object(cands[0])["content"])
		if content == nil {
			// A candidate stopped for safety or recitation has no content.
			return nil, nil
		}
	} else if _, ok := m["parts"]; !ok {
		if e := toolcall.Object(m["error"]); e != nil {
			return nil, fmt.Errorf("gemini: the API answered an error: %v: %v", e["status"], e["message"])
		}
		if _, ok := m["promptFeedback"]; ok {
			return nil, nil
		}
		return nil, fmt.Errorf("gemini: the response has no \"candidates\" or \"parts\"")
	}
	parts, ok := content["parts"].([]any)
	if !ok && content["parts"] != nil {
		return nil, fmt.Errorf("gemini: the content's \"parts\" is not a list")
	}
	var raws []toolcall.Raw
	for _, p := range parts {
		fc := toolcall.Object(toolcall.Object(p)["functionCall"])
		if fc == nil {
			continue
		}
		raws = append(raws, toolcall.Raw{ID: toolcall.String(fc["id"]), Name: toolcall.String(fc["name"]), Args: fc["args"]})
	}
	return raws, nil
}

// FunctionCalls resolves the response's function calls against ts: the
// calls to send, and the functionResponse parts of those that must not be
// sent (unknown names, non-object args).
func FunctionCalls(response any, ts *conduit.ToolSet) ([]toolcall.Call, []map[string]any, error) {
	raws, err := Parse(response)
	if err != nil {
		return nil, nil, err
	}
	ok, rejected := toolcall.Split(toolcall.Resolve(raws, ts), func(c toolcall.Call) map[string]any {
		return FunctionResponse(c, nil, c.Err, nil)
	})
	return ok, rejected, nil
}

// FunctionResponse answers one call with a functionResponse part: the
// exposed name, the call's id when Gemini sent one, and the result under
// response.output (by default the structuredContent when present, else the
// content as text) or a failure, and an isError result, under
// response.error. Images are placeholders.
func FunctionResponse(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) map[string]any {
	fr := map[string]any{"name": c.Name}
	if c.ID != "" {
		fr["id"] = c.ID
	}
	switch {
	case err != nil || res == nil:
		if err == nil {
			err = fmt.Errorf("no result")
		}
		fr["response"] = map[string]any{"error": toolcall.ErrorText(err)}
	default:
		mode := toolcall.StructuredPrefer
		if o != nil && o.Structured != toolcall.StructuredDefault {
			mode = o.Structured
		}
		r := toolcall.Render(res, toolcall.RenderOptions{Mode: mode, StructuredValue: !res.IsError})
		var out any = toolcall.Text(r.Parts)
		if r.Structured != nil {
			out = r.Structured
		}
		key := "output"
		if r.IsError {
			key = "error"
		}
		fr["response"] = map[string]any{key: out}
	}
	return map[string]any{"functionResponse": fr}
}
