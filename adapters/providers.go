package adapters

import (
	"errors"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/anthropic"
	"github.com/conduitmcp/conduit/adapters/gemini"
	"github.com/conduitmcp/conduit/adapters/openai"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The provider table: the one place that tells providers apart. Adding a
// provider is a package under adapters/, a Provider constant, a row here,
// and its goldens.
var table = [...]driver{
	Anthropic: anthropicDriver{},
	OpenAIChat: openaiDriver{api: openai.Chat, shape: Shapes{
		Tools:   `{"type": "function", "function": {name, description, parameters, strict}}`,
		Answers: `"role": "tool" messages, one per call`,
	}},
	OpenAIResponses: openaiDriver{api: openai.Responses, shape: Shapes{
		Tools:   `{"type": "function", name, description, parameters, strict}`,
		Answers: "function_call_output input items",
	}},
	Gemini: geminiDriver{},
}

type anthropicDriver struct{}

func (anthropicDriver) name() string { return "anthropic" }

func (anthropicDriver) shapes() Shapes {
	return Shapes{
		Tools:   `{name, description, input_schema}, cache_control on the last tool`,
		Answers: "tool_result blocks; they go first in the next user message",
	}
}

func (anthropicDriver) tools(ts *conduit.ToolSet, o *ListingOptions) ([]map[string]any, openai.Report) {
	return anthropic.Tools(ts, &anthropic.ToolsOptions{CacheLast: o.CacheLast, CacheTTL: o.CacheTTL, CacheTool: o.cacheTool}), openai.Report{}
}

func (anthropicDriver) hasSearch() bool { return true }

func (anthropicDriver) search(loaded, all *conduit.ToolSet, o *ListingOptions, regex bool) (searchListing, error) {
	name := anthropic.SearchBM25Name
	if regex {
		name = anthropic.SearchRegexName
	}
	tools := anthropic.SearchTools(loaded, all, &anthropic.SearchOptions{
		ToolsOptions: anthropic.ToolsOptions{CacheLast: o.CacheLast, CacheTTL: o.CacheTTL}, Regex: regex})
	return searchListing{tools: tools, name: name, warnings: anthropic.Check(all)}, nil
}

func (anthropicDriver) check(ts *conduit.ToolSet) []toolcall.Warning { return anthropic.Check(ts) }
func (anthropicDriver) parse(r any) ([]toolcall.Raw, error)          { return anthropic.Parse(r) }

func (anthropicDriver) answer(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) map[string]any {
	return anthropic.ToolResult(c, res, err, o)
}

func (anthropicDriver) wire() Wire {
	return Wire{
		BaseURL: anthropic.BaseURL, KeyEnv: anthropic.KeyEnv,
		Endpoint: anthropic.Endpoint, Authorize: anthropic.Authorize,
		Prompt: anthropic.Prompt, Request: anthropic.Request, Turn: anthropic.Turn, Answers: anthropic.Answers,
		Conversation: anthropic.Conversation, Answered: anthropic.Answered, Response: anthropic.Response,
	}
}

type openaiDriver struct {
	api   openai.API
	shape Shapes
}

func (d openaiDriver) name() string   { return "openai-" + d.api.String() }
func (d openaiDriver) shapes() Shapes { return d.shape }

func (d openaiDriver) tools(ts *conduit.ToolSet, o *ListingOptions) ([]map[string]any, openai.Report) {
	return d.api.Tools(ts, &openai.ToolsOptions{Strict: o.Strict})
}

func (openaiDriver) check(ts *conduit.ToolSet) []toolcall.Warning { return openai.Check(ts) }

func (d openaiDriver) hasSearch() bool { return d.api == openai.Responses }

func (d openaiDriver) search(loaded, all *conduit.ToolSet, o *ListingOptions, _ bool) (searchListing, error) {
	tools, rep, err := d.api.SearchTools(loaded, all, &openai.ToolsOptions{Strict: o.Strict})
	if err != nil {
		return searchListing{}, err
	}
	return searchListing{tools: tools, rep: rep, name: openai.SearchToolName, warnings: openai.Check(loaded)}, nil
}
func (d openaiDriver) parse(r any) ([]toolcall.Raw, error) { return d.api.Parse(r) }

func (d openaiDriver) answer(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) map[string]any {
	return d.api.ToolOutput(c, res, err, o)
}

func (d openaiDriver) wire() Wire {
	return Wire{
		BaseURL: openai.BaseURL, KeyEnv: openai.KeyEnv,
		Endpoint: d.api.Endpoint, Authorize: openai.Authorize,
		Prompt: d.api.Prompt, Request: d.api.Request, Turn: d.api.Turn, Answers: d.api.Answers,
		Conversation: d.api.Conversation, Answered: d.api.Answered, Response: d.api.Response,
	}
}

type geminiDriver struct{}

func (geminiDriver) name() string { return "gemini" }

func (geminiDriver) shapes() Shapes {
	return Shapes{
		Tools:   "functionDeclarations {name, description, parametersJsonSchema}",
		Answers: `functionResponse parts of the next {"role": "user"} content`,
	}
}

func (geminiDriver) tools(ts *conduit.ToolSet, _ *ListingOptions) ([]map[string]any, openai.Report) {
	return gemini.Tools(ts, nil), openai.Report{}
}

func (geminiDriver) check(ts *conduit.ToolSet) []toolcall.Warning { return gemini.Check(ts) }

func (geminiDriver) hasSearch() bool { return false }

func (geminiDriver) search(_, _ *conduit.ToolSet, _ *ListingOptions, _ bool) (searchListing, error) {
	return searchListing{}, errors.New("gemini: the API has no tool search")
}
func (geminiDriver) parse(r any) ([]toolcall.Raw, error) { return gemini.Parse(r) }

func (geminiDriver) answer(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) map[string]any {
	return gemini.FunctionResponse(c, res, err, o)
}

func (geminiDriver) wire() Wire {
	return Wire{
		BaseURL: gemini.BaseURL, KeyEnv: gemini.KeyEnv,
		Endpoint: gemini.Endpoint, Authorize: gemini.Authorize,
		Prompt: gemini.Prompt, Request: gemini.Request, Turn: gemini.Turn, Answers: gemini.Answers,
		Conversation: gemini.Conversation, Answered: gemini.Answered, Response: gemini.Response,
	}
}
