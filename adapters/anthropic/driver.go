package anthropic

import (
	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Messages API as package adapters drives it (adapters.Anthropic). It
// is a driver.Provider with the tool search tool (a driver.Searcher).

// Driver returns the Messages API as a driver.Provider, for package
// adapters.
func Driver() driver.Provider { return messages{} }

type messages struct{}

func (messages) Name() string { return "anthropic" }

func (messages) Shapes() driver.Shapes {
	return driver.Shapes{
		Tools:   `{name, description, input_schema}, cache_control on the last tool`,
		Answers: "tool_result blocks; they go first in the next user message",
	}
}

func (messages) Tools(ts *conduit.ToolSet, o *driver.ListOptions) []map[string]any {
	return listTools(ts, o)
}

// Check's findings are computed once per tool.
func (messages) Check(ts *conduit.ToolSet) []toolcall.Warning {
	return toolcall.CheckEach(ts, checkKey{}, check)
}

func (messages) Parse(response any) ([]toolcall.Raw, error) { return parse(response) }

func (messages) Prepare(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) driver.Pending {
	return prepare(c, res, err, o)
}

func (messages) API() driver.API {
	return driver.API{BaseURL: baseURL, KeyEnv: keyEnv, Endpoint: endpoint, Authorize: authorize,
		Prompt: prompt, Request: request, Turn: turn, Answers: answers, Stream: streamRequest}
}

// SearchTools lists for the tool search tool. Every tool is checked, since
// the API reads the deferred definitions too.
func (m messages) SearchTools(loaded, all *conduit.ToolSet, o *driver.ListOptions) (*driver.SearchListing, error) {
	name := searchBM25Name
	if o.SearchRegex {
		name = searchRegexName
	}
	return &driver.SearchListing{Tools: searchTools(loaded, all, o), SearchTool: name, Warnings: m.Check(all)}, nil
}
