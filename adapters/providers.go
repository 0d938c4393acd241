package adapters

import (
	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/anthropic"
	"github.com/conduitmcp/conduit/adapters/gemini"
	"github.com/conduitmcp/conduit/adapters/openai"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The one place that dispatches to the provider packages.

func (p Provider) list(ts *conduit.ToolSet, o *ToolsOptions) ([]map[string]any, openai.Report, []toolcall.Warning) {
	switch p {
	case Anthropic:
		return anthropic.Tools(ts, &anthropic.ToolsOptions{CacheLast: o.CacheLast, CacheTTL: o.CacheTTL}), openai.Report{}, anthropic.Check(ts)
	case OpenAIChat, OpenAIResponses:
		tools, rep := openai.Tools(p.openaiAPI(), ts, &openai.ToolsOptions{Strict: o.Strict})
		return tools, rep, openai.Check(len(tools))
	default:
		return gemini.Tools(ts), openai.Report{}, gemini.Check(ts)
	}
}

func (p Provider) parse(response any) ([]toolcall.Raw, error) {
	switch p {
	case Anthropic:
		return anthropic.Parse(response)
	case OpenAIChat, OpenAIResponses:
		return openai.Parse(p.openaiAPI(), response)
	default:
		return gemini.Parse(response)
	}
}

func (p Provider) answer(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) map[string]any {
	switch p {
	case Anthropic:
		return anthropic.ToolResult(c, res, err, o)
	case OpenAIChat, OpenAIResponses:
		return openai.ToolOutput(p.openaiAPI(), c, res, err, o)
	default:
		return gemini.FunctionResponse(c, res, err, o)
	}
}

func (p Provider) openaiAPI() openai.API {
	if p == OpenAIResponses {
		return openai.Responses
	}
	return openai.Chat
}
