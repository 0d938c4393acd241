// Package anthropic maps MCP tools and results to the Anthropic Messages
// API. It maps:
//
//   - tool definitions, and the tool search tool's listing;
//   - tool_use blocks into calls;
//   - results into tool_result blocks.
//
// [Driver] is its one export: the API as package adapters drives it.
// Programs use adapters.Anthropic, its Wire for the HTTP API.
//
// The adapter never builds a tool_choice of type "any" or "tool". Current
// Claude models reject forced tool use with HTTP 400 in the configurations
// tools are offered in here. Leave tool_choice unset, or use "auto" or
// "none".
package anthropic

import (
	"encoding/base64"
	"fmt"
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

// listTools returns the tool set as Messages API tool definitions, in the
// tool set's order. Each is {"name", "description", "input_schema"}. A
// tool without a description has no "description". Each definition is
// built once per tool and kept in the tool's memo. Every listing gets
// fresh maps. Their nested values (the schema) are shared and must not be
// modified.
//
// CacheLast marks the last tool with cache_control, so the whole list is
// a cached prefix. CacheTool marks that tool instead: the end of the part
// that never changes, when conduit's search appends tools.
func listTools(ts *conduit.ToolSet, o *driver.ListOptions) []map[string]any {
	if o == nil {
		o = &driver.ListOptions{}
	}
	out := make([]map[string]any, 0, ts.Len())
	for t := range ts.All() {
		def := t.Memo(defKey{}, func() any { return definition(t) }).(map[string]any)
		cp := make(map[string]any, len(def)+1)
		for k, v := range def {
			cp[k] = v
		}
		out = append(out, cp)
	}
	if o.CacheLast && len(out) > 0 {
		at := len(out) - 1
		if o.CacheTool != "" {
			at = -1
			for i, def := range out {
				if def["name"] == o.CacheTool {
					at = i
				}
			}
		}
		if at >= 0 {
			out[at]["cache_control"] = cacheControl(o.CacheTTL)
		}
	}
	return out
}

func cacheControl(ttl string) map[string]any {
	cc := map[string]any{"type": "ephemeral"}
	if ttl != "" {
		cc["ttl"] = ttl
	}
	return cc
}

func definition(t *conduit.Tool) map[string]any {
	def := map[string]any{"name": t.Exposed, "input_schema": toolcall.SchemaMap(t.InputSchema)}
	if d := toolcall.Description(t.Description); d != "" {
		def["description"] = d
	}
	return def
}

// check reports what the Messages API is known to reject in one tool.
// That is input schemas with oneOf, allOf or anyOf at the top level, and
// roots that are not objects. Exposed names always fit the API's
// ^[A-Za-z0-9_-]{1,128}$.
func check(t *conduit.Tool) []toolcall.Warning {
	var ws []toolcall.Warning
	s := toolcall.SchemaMap(t.InputSchema)
	for _, k := range []string{"oneOf", "allOf", "anyOf"} {
		if _, ok := s[k]; ok {
			ws = append(ws, toolcall.Warning{Tool: t.Exposed,
				Message: "the input schema has " + k + " at the top level, which the Messages API rejects"})
		}
	}
	if typ, _ := s["type"].(string); typ != "object" {
		ws = append(ws, toolcall.Warning{Tool: t.Exposed,
			Message: fmt.Sprintf("the input schema's type is %v, not \"object\", which the Messages API rejects", s["type"])})
	}
	return ws
}

// parse returns the tool_use blocks of a Messages API response, in order.
// It also reads an assistant message: anything with a "content" list.
// Server tool blocks are the API's own and are ignored. Examples are
// server_tool_use, mcp_tool_use, web search results, and the tool search
// tool's tool_search_tool_result. The API ran them, and wants them back as
// they were. The API always sends "input", {} for a tool without
// parameters. So a block whose "input" is null or missing is malformed.
// Its call is answered as not an object, and not sent.
func parse(response any) ([]toolcall.Raw, error) {
	m, err := jsonv.Decode(response)
	if err != nil {
		return nil, err
	}
	content, ok := m["content"].([]any)
	if !ok {
		if _, has := m["content"]; has || m["type"] == "error" {
			return nil, fmt.Errorf("anthropic: the response has no content list%s", apiError(m))
		}
		return nil, fmt.Errorf("anthropic: the response has no \"content\"%s%s", apiError(m), driver.Mismatch("anthropic", m))
	}
	var raws []toolcall.Raw
	for _, b := range content {
		block := jsonv.Object(b)
		if block == nil || block["type"] != "tool_use" {
			continue
		}
		// Present or not, a nil "input" is JSON null: refused, never {}.
		r := toolcall.Raw{ID: jsonv.String(block["id"]), Name: jsonv.String(block["name"]), Args: render.DecodedArgs(block["input"], true)}
		if r.ID == "" {
			r.Err = fmt.Errorf("the tool_use block has no id")
		}
		raws = append(raws, r)
	}
	return raws, nil
}

func apiError(m map[string]any) string {
	if e := jsonv.Object(m["error"]); e != nil {
		return fmt.Sprintf(" (the API answered an error: %v: %v)", e["type"], e["message"])
	}
	return ""
}

// Anthropic's documented limits on one image are 5 MB and 8000x8000 px.
// The 5 MB are per image through the API, measured on the base64 text.
// The API answers "image exceeds 5 MB maximum: N bytes > 5242880 bytes".
// An answer's image over either becomes a placeholder (see
// toolcall.AnswerOptions.MaxImageBytes). Source:
// https://platform.claude.com/docs/en/build-with-claude/vision ("General
// limits" and the image size limit).
//
// The per-request limits depend on the whole conversation. An answer does
// not see it, so they are not applied. They are:
//
//   - 100 images for models with a 200k-token context, 600 for others;
//   - 2000x2000 px each when a request has more than 20;
//   - 32 MB a request.
const (
	maxImageBytes     = 5 << 20
	maxImageDimension = 8000
)

// imageLimit is an answer's image limit before options.
var imageLimit = render.ImageLimit{Provider: "Anthropic", MaxBytes: maxImageBytes, MaxWidth: maxImageDimension, MaxHeight: maxImageDimension}

// prepare renders the answer to one call, a tool_result block keyed by the
// call's id. It holds the result's content as text and image blocks. A
// failure (err) or an isError result has "is_error": true.
//
// Whitespace-only text is dropped, since the API refuses it. A result left
// with no content has none. An error is the exception: the API refuses it
// empty. It gets "The tool reported an error without details.".
//
// An image over 5 MB (or o.MaxImageBytes) or 8000 px becomes a text
// placeholder saying so. A result over its budget is cut, and a text
// block ends it with a notice. The budget is o.MaxResultTokens, default toolcall.DefaultMaxResultTokens. Images count
// by Anthropic's rule (tokens.AnthropicImage). The blocks of one turn go
// first in the next user message, in the model's order.
func prepare(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) *budget.Pending {
	var r render.Rendered
	if err != nil || res == nil {
		r = budget.ErrorText(err)
	} else {
		mode := toolcall.StructuredAuto
		if o != nil && o.Structured != toolcall.StructuredDefault {
			mode = o.Structured
		}
		r = render.Render(res, &render.RenderOptions{Mode: mode, Images: true, Limit: render.Limit(o, imageLimit)})
	}
	return budget.Pend(r, tokens.AnthropicImage, func(r render.Rendered, _ string) map[string]any { return toolResult(c.ID, r) })
}

// toolResult is the tool_result block of a rendered result.
func toolResult(id string, r render.Rendered) map[string]any {
	block := map[string]any{"type": "tool_result", "tool_use_id": id}
	content := make([]any, 0, len(r.Parts))
	for _, p := range r.Parts {
		switch {
		case p.Kind == render.PartImage:
			content = append(content, map[string]any{"type": "image", "source": map[string]any{
				"type": "base64", "media_type": p.MediaType, "data": base64.StdEncoding.EncodeToString(p.Data)}})
		case strings.TrimSpace(p.Text) != "":
			// The API refuses empty and whitespace-only text blocks.
			content = append(content, textBlock(p.Text))
		}
	}
	if r.IsError {
		block["is_error"] = true
		if len(content) == 0 {
			content = append(content, textBlock(modeltext.EmptyError))
		}
	}
	if len(content) > 0 {
		block["content"] = content
	}
	return block
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
