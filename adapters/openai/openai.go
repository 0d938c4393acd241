// Package openai maps MCP tools and results to OpenAI's Chat Completions
// and Responses APIs. It maps:
//
//   - function tools with strict-mode schemas (driver.StrictSchema);
//   - the Responses tool search's listing;
//   - tool calls into calls;
//   - results into tool answers.
//
// [ChatDriver] and [ResponsesDriver] are its exports: each API as package
// adapters drives it. Programs use adapters.OpenAIChat and
// adapters.OpenAIResponses, their Wire for the HTTP API.
//
// "strict" is always sent. When it is omitted, the Responses API tries
// strict mode and silently falls back. So the same list would behave
// differently per API.
//
// The methods of apiKind branch on Chat and Responses. This package is the
// one place that tells two providers apart. Only Responses' driver
// searches. It is kept so on purpose. The two APIs share the definitions,
// strict mode, arguments and error prefix. They differ in a line or two of
// each shape:
//
//   - where the function sits in a tool;
//   - calls in choices or in output items;
//   - answers as messages or as input items;
//   - images only in Responses.
//
// A table of two rows would repeat the shared code in both rows. Or it
// would split each method in halves that read worse than its branch.
package openai

import (
	"encoding/base64"
	"encoding/json"
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

// apiKind is one of OpenAI's two APIs with tool calling. The functions
// that differ between them are its methods.
type apiKind int

const (
	// chatAPI is the Chat Completions API.
	chatAPI apiKind = iota + 1
	// responsesAPI is the Responses API.
	responsesAPI
)

// String returns "chat" or "responses".
func (a apiKind) String() string {
	switch a {
	case chatAPI:
		return "chat"
	case responsesAPI:
		return "responses"
	}
	return fmt.Sprintf("API(%d)", int(a))
}

type (
	strictKey struct{}
	// defKey keys a tool's memoized definition for one API and strict
	// choice.
	defKey struct {
		api    apiKind
		strict driver.StrictMode
	}
)

type converted struct {
	schema    map[string]any
	nullPaths []driver.NullPath
	err       error
}

func convert(t *conduit.Tool) converted {
	return t.Memo(strictKey{}, func() any {
		s, np, err := driver.StrictSchema(toolcall.SchemaMap(t.InputSchema))
		return converted{s, np, err}
	}).(converted)
}

// toolDef is one tool's listing for an API and strict choice.
type toolDef struct {
	def       map[string]any // nil: excluded
	nullPaths []driver.NullPath
	fallback  error // set when strict mode fell back
}

func definition(api apiKind, strict driver.StrictMode, t *conduit.Tool) toolDef {
	schema, isStrict := toolcall.SchemaMap(t.InputSchema), false
	var d toolDef
	if strict != driver.StrictOff {
		c := convert(t)
		switch {
		case c.err == nil:
			schema, isStrict, d.nullPaths = c.schema, true, c.nullPaths
		case strict == driver.StrictOn:
			return d
		default:
			d.fallback = c.err
		}
	}
	fn := map[string]any{"name": t.Exposed, "parameters": schema, "strict": isStrict}
	if desc := toolcall.Description(t.Description); desc != "" {
		fn["description"] = desc
	}
	if api == responsesAPI {
		fn["type"] = "function"
		d.def = fn
	} else {
		d.def = map[string]any{"type": "function", "function": fn}
	}
	return d
}

// list returns the tool set as function tools of the API under strict,
// in the tool set's order. The shapes are:
//
//   - Chat: {"type": "function", "function": {"name", "description",
//     "parameters", "strict"}};
//   - Responses: {"type": "function", "name", "description",
//     "parameters", "strict"}.
//
// "strict" is always there. Each tool's definition is built once per tool
// set and kept in the tool's memo. Every listing gets fresh top-level
// maps. Their nested values are shared and must not be modified.
func (api apiKind) list(ts *conduit.ToolSet, strict driver.StrictMode) []map[string]any {
	out := make([]map[string]any, 0, ts.Len())
	for t := range ts.All() {
		d := api.definition(t, strict)
		if d.def == nil {
			continue
		}
		cp := make(map[string]any, len(d.def))
		for k, v := range d.def {
			cp[k] = v
		}
		out = append(out, cp)
	}
	return out
}

// defKeys are the memo keys of the definitions, boxed once. A key boxed
// at each lookup would cost an allocation per tool per listing.
var defKeys = func() (keys [2][driver.StrictOff + 1]any) {
	for _, api := range []apiKind{chatAPI, responsesAPI} {
		for s := driver.StrictAuto; s <= driver.StrictOff; s++ {
			keys[api-chatAPI][s] = defKey{api, s}
		}
	}
	return keys
}()

// definition is t's memoized listing for the API and strict choice.
func (api apiKind) definition(t *conduit.Tool, strict driver.StrictMode) toolDef {
	var key any
	if (api == chatAPI || api == responsesAPI) && strict >= driver.StrictAuto && strict <= driver.StrictOff {
		key = defKeys[api-chatAPI][strict]
	} else {
		key = defKey{api, strict}
	}
	return t.Memo(key, func() any { return definition(api, strict, t) }).(toolDef)
}

// maxTools is the most tools OpenAI accepts in one request.
const maxTools = 128

// check reports what OpenAI is known to reject in the tool set: more than
// maxTools. (Exposed names always fit OpenAI's ^[A-Za-z0-9_-]{1,64}$.)
func check(ts *conduit.ToolSet) []toolcall.Warning {
	if n := ts.Len(); n > maxTools {
		return []toolcall.Warning{{Message: fmt.Sprintf("%d tools are listed; OpenAI accepts at most %d in one request", n, maxTools)}}
	}
	return nil
}

// parse returns the function calls of a response of the API, in order:
//
//   - for Chat Completions, the first choice's message.tool_calls, or a
//     message's tool_calls;
//   - for Responses, the function_call output items. Functions of a
//     namespace carry their "namespace". Tool search's tool_search_call
//     and tool_search_output items are the API's own and are skipped.
//
// Arguments arrive as JSON strings, resolved by [conduit.ToolSet.Resolve].
// One that does not decode to an object ("null" among them) is a call to
// reject. It is not an error of the whole response. An empty string is a
// call without arguments.
func (api apiKind) parse(response any) ([]toolcall.Raw, error) {
	m, err := jsonv.Decode(response)
	if err != nil {
		return nil, err
	}
	if e := jsonv.Object(m["error"]); e != nil && (jsonv.String(e["message"]) != "" || jsonv.String(e["code"]) != "") {
		return nil, fmt.Errorf("openai: the API answered an error: %v", e["message"])
	}
	switch api {
	case chatAPI:
		return parseChat(m)
	case responsesAPI:
		return parseResponses(m)
	}
	return nil, fmt.Errorf("openai: unknown API %v", api)
}

func parseChat(m map[string]any) ([]toolcall.Raw, error) {
	msg := m
	if choices, ok := m["choices"].([]any); ok {
		if len(choices) == 0 {
			return nil, nil
		}
		msg = jsonv.Object(jsonv.Object(choices[0])["message"])
		if msg == nil {
			return nil, fmt.Errorf("openai: the first choice has no message")
		}
	} else if _, ok := m["tool_calls"]; !ok {
		// A message of another API's would read as one without calls.
		if why := driver.Mismatch("openai-chat", m); why != "" {
			return nil, fmt.Errorf("openai: the response has no \"choices\"%s", why)
		}
		if _, ok := m["role"]; !ok {
			return nil, fmt.Errorf("openai: the response has no \"choices\"")
		}
	}
	var raws []toolcall.Raw
	for _, v := range jsonv.List(msg["tool_calls"]) {
		tc := jsonv.Object(v)
		if tc == nil {
			continue
		}
		r := toolcall.Raw{ID: jsonv.String(tc["id"])}
		fn := jsonv.Object(tc["function"])
		custom := jsonv.Object(tc["custom"])
		switch {
		// "type" first: an SDK struct marshaled by encoding/json carries an
		// empty "function" on custom calls too.
		case tc["type"] == "custom" || (custom != nil && jsonv.String(custom["name"]) != ""):
			r.Name = jsonv.String(jsonv.Object(tc["custom"])["name"])
			r.Err = fmt.Errorf("a custom tool call cannot be answered; only function tools are offered")
		case fn != nil:
			r.Name = jsonv.String(fn["name"])
			r.Args = jsonArgs(fn["arguments"])
		default:
			r.Err = fmt.Errorf("the tool call has no function")
		}
		raws = append(raws, r)
	}
	return raws, nil
}

func parseResponses(m map[string]any) ([]toolcall.Raw, error) {
	output, ok := m["output"].([]any)
	if !ok {
		return nil, fmt.Errorf("openai: the response has no \"output\" list%s", driver.Mismatch("openai-responses", m))
	}
	var raws []toolcall.Raw
	for _, v := range output {
		item := jsonv.Object(v)
		if item == nil || item["type"] != "function_call" {
			continue
		}
		// A function of a namespace (tool search's) is named in it.
		r := toolcall.Raw{ID: jsonv.String(item["call_id"]), Name: jsonv.String(item["name"]), Namespace: jsonv.String(item["namespace"])}
		r.Args = jsonArgs(item["arguments"])
		raws = append(raws, r)
	}
	return raws, nil
}

// jsonArgs returns arguments sent as a JSON string as JSON text, for
// conduit.ToolSet.Resolve to decode. A decoded object, as some compatible
// servers send, is taken as it is. OpenAI always sends the string ("" or
// "{}" for a tool without parameters). So a null or missing "arguments"
// is malformed. It becomes JSON null, which Resolve refuses as not an
// object. Taking it for {} would send a call the model never wrote.
func jsonArgs(v any) any {
	switch a := v.(type) {
	case nil:
		return json.RawMessage("null")
	case string:
		return json.RawMessage(a)
	case map[string]any:
		// openai-go's union of the arguments string, marshaled by
		// encoding/json (an SDK output item outside its Response, which has
		// no RawJSON to read), shows as {"OfString": "..."}.
		if s, ok := a["OfString"].(string); ok && sdkUnion(a) {
			return json.RawMessage(s)
		}
		return a
	default:
		return a
	}
}

// sdkUnion reports whether every key is an openai-go union variant.
func sdkUnion(m map[string]any) bool {
	for k := range m {
		if !strings.HasPrefix(k, "Of") {
			return false
		}
	}
	return true
}

// maxImageBytes is the largest image a Responses answer carries, in bytes
// of its base64 text. OpenAI documents up to 20 MB per image. It also
// documents 50 MB of images and 500 images per request. Those depend on
// the whole conversation and are not applied. Source:
// https://platform.openai.com/docs/guides/images-vision ("Image input
// requirements"). Over it, an image becomes a placeholder (see
// toolcall.AnswerOptions.MaxImageBytes). Chat answers carry no images.
const maxImageBytes = 20 << 20

// imageLimit is an answer's image limit before options.
var imageLimit = render.ImageLimit{Provider: "OpenAI", MaxBytes: maxImageBytes}

// prepare renders the answer to one call, keyed by the call's id:
//
//   - For Chat it is a {"role": "tool", "tool_call_id", "content"}
//     message with the result as text.
//   - For Responses it is a {"type": "function_call_output", "call_id",
//     "output"} item. Its output is a string. When the result carries an
//     image, it is a list of input_text and input_image items (data URIs).
//
// OpenAI has no error flag. The text of a failure or an isError result
// starts with "Error: " (see [toolcall.AnswerOptions.ErrorPrefix]). An
// isError result with no content says
// "The tool reported an error without details.".
//
// An image over 20 MB (or o.MaxImageBytes) becomes a text
// placeholder saying so. A result over its budget is cut and ends with a
// notice. The budget is o.MaxResultTokens, default
// toolcall.DefaultMaxResultTokens. Images count by OpenAI's rule
// (tokens.OpenAIImage).
func (api apiKind) prepare(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) *budget.Pending {
	if o == nil {
		o = &toolcall.AnswerOptions{}
	}
	prefix := o.Prefix()
	var r render.Rendered
	if err != nil || res == nil {
		r = budget.ErrorText(err)
	} else {
		mode := o.Structured
		if mode == toolcall.StructuredDefault {
			mode = toolcall.StructuredAuto
		}
		r = render.Render(res, &render.RenderOptions{Mode: mode, Images: api == responsesAPI, Limit: render.Limit(o, imageLimit)})
	}
	return budget.Pend(r, tokens.OpenAIImage, func(r render.Rendered, _ string) map[string]any { return api.toolOutput(c.ID, r, prefix) })
}

// toolOutput is the answer of a rendered result.
func (api apiKind) toolOutput(id string, r render.Rendered, prefix string) map[string]any {
	if !r.IsError {
		prefix = ""
	} else if !hasContent(r.Parts) {
		r.Parts = []render.Part{{Kind: render.PartText, Text: modeltext.EmptyError}}
	}
	var output any
	if api == responsesAPI && hasImage(r.Parts) {
		output = inputItems(r.Parts, prefix)
	} else {
		output = prefix + render.Text(r.Parts)
	}
	if api == responsesAPI {
		return map[string]any{"type": "function_call_output", "call_id": id, "output": output}
	}
	return map[string]any{"role": "tool", "tool_call_id": id, "content": output}
}

func hasImage(parts []render.Part) bool {
	for _, p := range parts {
		if p.Kind == render.PartImage {
			return true
		}
	}
	return false
}

func hasContent(parts []render.Part) bool {
	for _, p := range parts {
		if p.Kind == render.PartImage || strings.TrimSpace(p.Text) != "" {
			return true
		}
	}
	return false
}

// inputItems is a Responses output list. Text goes in input_text items,
// the error prefix starting the first one. Images go in input_image items,
// as data URIs.
func inputItems(parts []render.Part, prefix string) []any {
	items := make([]any, 0, len(parts)+1)
	if prefix != "" && (len(parts) == 0 || parts[0].Kind != render.PartText) {
		items = append(items, map[string]any{"type": "input_text", "text": strings.TrimSpace(prefix)})
		prefix = ""
	}
	for _, p := range parts {
		switch {
		case p.Kind == render.PartImage:
			items = append(items, map[string]any{"type": "input_image", "detail": "auto",
				"image_url": "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)})
		case prefix != "":
			items = append(items, map[string]any{"type": "input_text", "text": prefix + p.Text})
			prefix = ""
		case p.Text != "":
			items = append(items, map[string]any{"type": "input_text", "text": p.Text})
		}
	}
	return items
}
