package openai

import (
	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two APIs as package adapters drives them (adapters.OpenAIChat and
// adapters.OpenAIResponses). They are driver.Providers with a strict mode
// (a driver.Strict). Responses also has the tool search (a
// driver.Searcher).

// ChatDriver returns the Chat Completions API as a driver.Provider, for
// package adapters (adapters.OpenAIChat). It has a strict mode.
func ChatDriver() driver.Provider { return chatAPI.provider() }

// ResponsesDriver returns the Responses API as a driver.Provider, for
// package adapters (adapters.OpenAIResponses). It has a strict mode and
// the tool search.
func ResponsesDriver() driver.Provider { return responsesAPI.provider() }

// provider returns the API as a driver.Provider, nil for an API that is
// neither Chat nor Responses.
func (api apiKind) provider() driver.Provider {
	switch api {
	case chatAPI:
		return functions{api: chatAPI, shapes: driver.Shapes{
			Tools:   `{"type": "function", "function": {name, description, parameters, strict}}`,
			Answers: `"role": "tool" messages, one per call`,
		}}
	case responsesAPI:
		return searching{functions{api: responsesAPI, shapes: driver.Shapes{
			Tools:   `{"type": "function", name, description, parameters, strict}`,
			Answers: "function_call_output input items",
		}}}
	}
	return nil
}

// functions is an API whose tools are functions, with a strict mode.
type functions struct {
	api    apiKind
	shapes driver.Shapes
}

// searching is the Responses API, which has a tool search too.
type searching struct{ functions }

func (f functions) Name() string          { return "openai-" + f.api.String() }
func (f functions) Shapes() driver.Shapes { return f.shapes }

func (f functions) Tools(ts *conduit.ToolSet, o *driver.ListOptions) []map[string]any {
	return f.api.list(ts, o.Strict)
}

func (functions) Check(ts *conduit.ToolSet) []toolcall.Warning { return check(ts) }

func (f functions) Parse(response any) ([]toolcall.Raw, error) { return f.api.parse(response) }

func (f functions) Prepare(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) driver.Pending {
	return f.api.prepare(c, res, err, o)
}

func (f functions) API() driver.API {
	return driver.API{BaseURL: baseURL, KeyEnv: keyEnv, Endpoint: f.api.endpoint, Authorize: authorize,
		Prompt: f.api.prompt, Request: f.api.request, Turn: f.api.turn, Answers: f.api.answers, Stream: streamRequest}
}

// StrictTool reads what Tools does from the tool's memoized definition.
func (f functions) StrictTool(t *conduit.Tool, o *driver.ListOptions) driver.StrictResult {
	d := f.api.definition(t, o.Strict)
	return driver.StrictResult{Excluded: d.def == nil, Fallback: d.fallback, NullPaths: d.nullPaths}
}

func (functions) StripNull(args map[string]any, path []string) {
	driver.StripNulls(args, []driver.NullPath{path})
}

// SearchTools lists for the tool search. Only the top-level tools count
// towards maxTools, so only the loaded ones are checked.
func (s searching) SearchTools(loaded, all *conduit.ToolSet, o *driver.ListOptions) (*driver.SearchListing, error) {
	tools, err := s.api.searchTools(loaded, all, o.Strict)
	if err != nil {
		return nil, err
	}
	return &driver.SearchListing{Tools: tools, SearchTool: searchToolName, Warnings: check(loaded)}, nil
}
