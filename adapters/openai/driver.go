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

// Driver returns the API as a driver.Provider, for package adapters. It
// returns nil for an API that is neither Chat nor Responses.
func (api API) Driver() driver.Provider {
	switch api {
	case Chat:
		return functions{api: Chat, shapes: driver.Shapes{
			Tools:   `{"type": "function", "function": {name, description, parameters, strict}}`,
			Answers: `"role": "tool" messages, one per call`,
		}}
	case Responses:
		return searching{functions{api: Responses, shapes: driver.Shapes{
			Tools:   `{"type": "function", name, description, parameters, strict}`,
			Answers: "function_call_output input items",
		}}}
	}
	return nil
}

// functions is an API whose tools are functions, with a strict mode.
type functions struct {
	api    API
	shapes driver.Shapes
}

// searching is the Responses API, which has a tool search too.
type searching struct{ functions }

func (f functions) Name() string          { return "openai-" + f.api.String() }
func (f functions) Shapes() driver.Shapes { return f.shapes }

func (f functions) Tools(ts *conduit.ToolSet, o *driver.ListOptions) []map[string]any {
	return f.api.list(ts, o.Strict, nil)
}

func (functions) Check(ts *conduit.ToolSet) []toolcall.Warning { return Check(ts) }

func (f functions) Parse(response any) ([]toolcall.Raw, error) { return f.api.Parse(response) }

func (f functions) Prepare(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) driver.Pending {
	return f.api.prepare(c, res, err, o)
}

func (f functions) API() driver.API {
	return driver.API{BaseURL: BaseURL, KeyEnv: KeyEnv, Endpoint: f.api.Endpoint, Authorize: Authorize,
		Prompt: f.api.Prompt, Request: f.api.Request, Turn: f.api.Turn, Answers: f.api.Answers, Stream: streamRequest}
}

// StrictTool reads what Tools does from the tool's memoized definition.
func (f functions) StrictTool(t *conduit.Tool, o *driver.ListOptions) driver.StrictResult {
	d := f.api.definition(t, o.Strict)
	return driver.StrictResult{Excluded: d.def == nil, Fallback: d.fallback, NullPaths: d.nullPaths}
}

func (functions) StripNull(args map[string]any, path []string) {
	if len(path) > 0 {
		stripPath(args, path)
	}
}

// SearchTools lists for the tool search. Only the top-level tools count
// towards MaxTools, so only the loaded ones are checked.
func (s searching) SearchTools(loaded, all *conduit.ToolSet, o *driver.ListOptions) (*driver.SearchListing, error) {
	tools, _, err := s.api.SearchTools(loaded, all, &ToolsOptions{Strict: o.Strict})
	if err != nil {
		return nil, err
	}
	return &driver.SearchListing{Tools: tools, SearchTool: SearchToolName, Warnings: Check(loaded)}, nil
}
