package gemini

import (
	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// generateContent as package adapters drives it (adapters.Gemini): a
// driver.Provider with no optional capability.

// Driver returns generateContent as a driver.Provider, for package
// adapters.
func Driver() driver.Provider { return generateContent{} }

type generateContent struct{}

func (generateContent) Name() string { return "gemini" }

func (generateContent) Shapes() driver.Shapes {
	return driver.Shapes{
		Tools:   "functionDeclarations {name, description, parametersJsonSchema}",
		Answers: `functionResponse parts of the next {"role": "user"} content`,
	}
}

func (generateContent) Tools(ts *conduit.ToolSet, _ *driver.ListOptions) []map[string]any {
	return listTools(ts)
}

func (generateContent) Prepare(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) driver.Pending {
	return prepare(c, res, err, o)
}

func (generateContent) Parse(response any) ([]toolcall.Raw, error) { return parse(response) }

// Check's findings are computed once per tool.
func (generateContent) Check(ts *conduit.ToolSet) []toolcall.Warning {
	return toolcall.CheckEach(ts, checkKey{}, check)
}

func (generateContent) API() driver.API {
	return driver.API{BaseURL: baseURL, KeyEnv: keyEnv, Endpoint: endpoint, Authorize: authorize,
		Prompt: prompt, Request: request, Turn: turn, Answers: answers, Stream: streamRequest}
}
