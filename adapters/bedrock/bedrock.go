// Package bedrock maps MCP tools and results to Amazon Bedrock's Converse
// API. It maps toolSpec definitions, toolUse blocks into calls, and
// toolResult blocks in a user message. [Driver] is the API as package
// adapters drives it (adapters.Bedrock).
//
// It is built on the public driver contract alone, as a provider from
// outside this module would be. Nothing here reaches into conduit's
// internal packages.
//
// Choices. Converse has no strict mode and no tool search of its own. So
// conduit's search_tools serves past the search threshold. Exposed names
// already fit its rule, [a-zA-Z0-9_-]{1,64}. A failed call's toolResult
// carries "status": "error". A success carries no status, which means
// success. That is because Bedrock documents the field for some models
// only (Claude, Nova). Results are text and image blocks. A structuredContent value
// reaches the model as JSON text, as with Anthropic, not as a json block.
//
// The AWS SDK's bedrockruntime types are unions that encoding/json does
// not marshal to the wire shape. A ContentBlock is an interface. A
// document.Interface marshals only through the SDK's own serializer.
// Parse takes the wire JSON: the body as it came, or what the SDK's
// serializer writes. sdkcheck tests that form against the SDK.
package bedrock

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Driver returns the Converse API as a driver.Provider, for package
// adapters.
func Driver() driver.Provider { return converse{} }

type converse struct{}

func (converse) Name() string { return "bedrock" }

func (converse) Shapes() driver.Shapes {
	return driver.Shapes{
		Tools:   `{"toolSpec": {name, description, "inputSchema": {"json": schema}}} in toolConfig.tools`,
		Answers: `toolResult blocks {toolUseId, content, status} in the next {"role": "user"} message`,
	}
}

type (
	defKey   struct{}
	checkKey struct{}
)

// Tools lists each tool as a toolSpec, built once per tool. Every listing
// gets fresh outer maps.
func (converse) Tools(ts *conduit.ToolSet, _ *driver.ListOptions) []map[string]any {
	out := make([]map[string]any, 0, ts.Len())
	for t := range ts.All() {
		spec := t.Memo(defKey{}, func() any { return definition(t) }).(map[string]any)
		out = append(out, map[string]any{"toolSpec": spec})
	}
	return out
}

func definition(t *conduit.Tool) map[string]any {
	spec := map[string]any{"name": t.Exposed, "inputSchema": map[string]any{"json": toolcall.SchemaMap(t.InputSchema)}}
	if d := toolcall.Description(t.Description); d != "" {
		spec["description"] = d // the API refuses an empty one
	}
	return spec
}

// Check reports input schemas whose root is not an object, which Converse
// refuses for Claude and most other models.
func (converse) Check(ts *conduit.ToolSet) []toolcall.Warning {
	return toolcall.CheckEach(ts, checkKey{}, func(t *conduit.Tool) []toolcall.Warning {
		s := toolcall.SchemaMap(t.InputSchema)
		if typ, _ := s["type"].(string); typ != "object" {
			return []toolcall.Warning{{Tool: t.Exposed,
				Message: fmt.Sprintf("the input schema's type is %v, not \"object\", which Converse rejects", s["type"])}}
		}
		return nil
	})
}

// content is the content list of a Converse response (output.message) or
// of a message itself, and whether there is one.
func content(m map[string]any) ([]any, bool) {
	if out := object(m["output"]); out != nil {
		m = object(out["message"])
	}
	c, ok := m["content"].([]any)
	return c, ok
}

// Parse returns the toolUse blocks of a Converse response (or of an
// assistant message), in order. The API always sends "input", {} for a
// tool without parameters. So a block whose input is null or missing is
// answered as not an object, and not sent.
func (converse) Parse(response any) ([]toolcall.Raw, error) {
	m, err := driver.Decode(response)
	if err != nil {
		return nil, err
	}
	if why := driver.Mismatch("bedrock", m); why != "" {
		return nil, fmt.Errorf("bedrock: the response is not a Converse response%s", why)
	}
	blocks, ok := content(m)
	if !ok {
		return nil, fmt.Errorf("bedrock: the response has no output message%s", apiError(m))
	}
	var raws []toolcall.Raw
	for _, b := range blocks {
		use := object(object(b)["toolUse"])
		if use == nil {
			continue
		}
		r := toolcall.Raw{ID: str(use["toolUseId"]), Name: str(use["name"]), Args: driver.Args(use["input"], true)}
		if r.ID == "" {
			r.Err = fmt.Errorf("the toolUse block has no toolUseId")
		}
		raws = append(raws, r)
	}
	return raws, nil
}

// apiError describes an AWS error body ({"message": ...}), or is "".
func apiError(m map[string]any) string {
	if msg := str(m["message"]); msg != "" {
		return fmt.Sprintf(" (the API answered an error: %s)", msg)
	}
	if msg := str(m["Message"]); msg != "" {
		return fmt.Sprintf(" (the API answered an error: %s)", msg)
	}
	return ""
}

// Converse's documented limits on one image, from the API reference's
// Message type: 3.75 MB, 8000 px high and wide. The size is counted on
// the base64 text, so it errs on the safe side. The limit of 20 images a
// message depends on the whole turn and is not applied.
const (
	maxImageBytes     = 3932160 // 3.75 MB
	maxImageDimension = 8000
)

var imageLimit = driver.ImageLimit{Provider: "Bedrock", MaxBytes: maxImageBytes, MaxWidth: maxImageDimension, MaxHeight: maxImageDimension}

// Prepare renders the answer to c as a toolResult block. Images count by
// the conservative rule: Converse serves models that count them apart.
func (converse) Prepare(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) driver.Pending {
	var r driver.Rendered
	if err != nil || res == nil {
		r = driver.ErrorRendering(err)
	} else {
		mode := toolcall.StructuredAuto
		if o != nil && o.Structured != toolcall.StructuredDefault {
			mode = o.Structured
		}
		r = driver.Render(res, &driver.RenderOptions{Mode: mode, Images: true, Limit: driver.LimitOf(o, imageLimit)})
	}
	return driver.Pend(r, driver.ImageTokens, func(r driver.Rendered, _ string) map[string]any { return toolResult(c.ID, r) })
}

// emptyResult stands for a result without content: Converse requires a
// toolResult's content, and refuses empty text.
const emptyResult = "The tool returned no content."

// toolResult is the toolResult block of a rendered result.
func toolResult(id string, r driver.Rendered) map[string]any {
	blocks := make([]any, 0, len(r.Parts))
	for _, p := range r.Parts {
		switch {
		case p.Kind == driver.PartImage:
			blocks = append(blocks, map[string]any{"image": map[string]any{
				"format": strings.TrimPrefix(p.MediaType, "image/"),
				"source": map[string]any{"bytes": base64.StdEncoding.EncodeToString(p.Data)}}})
		case strings.TrimSpace(p.Text) != "":
			blocks = append(blocks, map[string]any{"text": p.Text})
		}
	}
	result := map[string]any{"toolUseId": id}
	switch {
	case r.IsError && len(blocks) == 0:
		blocks = append(blocks, map[string]any{"text": driver.EmptyError})
	case len(blocks) == 0:
		blocks = append(blocks, map[string]any{"text": emptyResult})
	}
	if r.IsError {
		result["status"] = "error"
	}
	result["content"] = blocks
	return map[string]any{"toolResult": result}
}

func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
