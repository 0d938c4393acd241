package agent

import (
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// dialect is what differs between the providers' loops: the request body,
// how a response joins the conversation, and how answers do.
type dialect interface {
	first(prompt string) []any
	body(o Options, tools []map[string]any, history []any) map[string]any
	// absorb appends the response to the conversation and reports the
	// model's text and whether it asked for tools.
	absorb(history []any, resp map[string]any) (next []any, text string, wantsTools bool, err error)
	answer(history []any, results []map[string]any) []any
}

func dialectFor(p adapters.Provider) (dialect, error) {
	switch p {
	case adapters.Anthropic:
		return anthropicDialect{}, nil
	case adapters.OpenAIChat:
		return chatDialect{}, nil
	case adapters.OpenAIResponses:
		return responsesDialect{}, nil
	case adapters.Gemini:
		return geminiDialect{}, nil
	}
	return nil, fmt.Errorf("agent: unknown provider %v", p)
}

func anys(results []map[string]any) []any {
	out := make([]any, len(results))
	for i, r := range results {
		out[i] = r
	}
	return out
}

// Anthropic Messages: tool_result blocks go first in the next user message.
type anthropicDialect struct{}

func (anthropicDialect) first(prompt string) []any {
	return []any{map[string]any{"role": "user", "content": prompt}}
}

func (anthropicDialect) body(o Options, tools []map[string]any, history []any) map[string]any {
	b := map[string]any{"model": o.Model, "max_tokens": o.MaxTokens, "messages": history}
	if len(tools) > 0 {
		b["tools"] = tools
	}
	return b
}

func (anthropicDialect) absorb(history []any, resp map[string]any) ([]any, string, bool, error) {
	content, ok := resp["content"].([]any)
	if !ok {
		return history, "", false, fmt.Errorf("anthropic: the response has no content list")
	}
	var text []string
	for _, b := range content {
		if blk := toolcall.Object(b); blk["type"] == "text" {
			text = append(text, toolcall.String(blk["text"]))
		}
	}
	history = append(history, map[string]any{"role": "assistant", "content": content})
	return history, strings.Join(text, "\n"), resp["stop_reason"] == "tool_use", nil
}

func (anthropicDialect) answer(history []any, results []map[string]any) []any {
	return append(history, map[string]any{"role": "user", "content": anys(results)})
}

// OpenAI Chat Completions: the assistant message, then one tool message per
// call.
type chatDialect struct{}

func (chatDialect) first(prompt string) []any {
	return []any{map[string]any{"role": "user", "content": prompt}}
}

func (chatDialect) body(o Options, tools []map[string]any, history []any) map[string]any {
	b := map[string]any{"model": o.Model, "messages": history}
	// OpenAI rejects an empty tools list.
	if len(tools) > 0 {
		b["tools"] = tools
	}
	return b
}

func (chatDialect) absorb(history []any, resp map[string]any) ([]any, string, bool, error) {
	choices := toolcall.List(resp["choices"])
	if len(choices) == 0 {
		return history, "", false, fmt.Errorf("openai-chat: the response has no choices")
	}
	msg := toolcall.Object(toolcall.Object(choices[0])["message"])
	if msg == nil {
		return history, "", false, fmt.Errorf("openai-chat: the first choice has no message")
	}
	history = append(history, msg)
	return history, toolcall.String(msg["content"]), len(toolcall.List(msg["tool_calls"])) > 0, nil
}

func (chatDialect) answer(history []any, results []map[string]any) []any {
	return append(history, anys(results)...)
}

// OpenAI Responses: the output items join the input, then one
// function_call_output item per call.
type responsesDialect struct{}

func (responsesDialect) first(prompt string) []any {
	return []any{map[string]any{"role": "user", "content": prompt}}
}

func (responsesDialect) body(o Options, tools []map[string]any, history []any) map[string]any {
	b := map[string]any{"model": o.Model, "input": history}
	if len(tools) > 0 {
		b["tools"] = tools
	}
	return b
}

func (responsesDialect) absorb(history []any, resp map[string]any) ([]any, string, bool, error) {
	output, ok := resp["output"].([]any)
	if !ok {
		return history, "", false, fmt.Errorf("openai-responses: the response has no output list")
	}
	var text []string
	calls := false
	for _, it := range output {
		item := toolcall.Object(it)
		switch item["type"] {
		case "function_call":
			calls = true
		case "message":
			for _, c := range toolcall.List(item["content"]) {
				if part := toolcall.Object(c); part["type"] == "output_text" {
					text = append(text, toolcall.String(part["text"]))
				}
			}
		}
	}
	return append(history, output...), strings.Join(text, "\n"), calls, nil
}

func (responsesDialect) answer(history []any, results []map[string]any) []any {
	return append(history, anys(results)...)
}

// Gemini generateContent: the model's content, then a user content of
// functionResponse parts.
type geminiDialect struct{}

func (geminiDialect) first(prompt string) []any {
	return []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}}}
}

func (geminiDialect) body(o Options, tools []map[string]any, history []any) map[string]any {
	b := map[string]any{"contents": history}
	if len(tools) > 0 {
		b["tools"] = []any{map[string]any{"functionDeclarations": tools}}
	}
	return b
}

func (geminiDialect) absorb(history []any, resp map[string]any) ([]any, string, bool, error) {
	cands := toolcall.List(resp["candidates"])
	if len(cands) == 0 {
		if fb := toolcall.Object(resp["promptFeedback"]); fb != nil {
			return history, "", false, fmt.Errorf("gemini: the prompt was blocked: %v", fb["blockReason"])
		}
		return history, "", false, fmt.Errorf("gemini: the response has no candidates")
	}
	cand := toolcall.Object(cands[0])
	content := toolcall.Object(cand["content"])
	if content == nil {
		return history, "", false, fmt.Errorf("gemini: the candidate has no content (finishReason %v)", cand["finishReason"])
	}
	var text []string
	calls := false
	for _, p := range toolcall.List(content["parts"]) {
		part := toolcall.Object(p)
		if part["functionCall"] != nil {
			calls = true
		} else if t, ok := part["text"].(string); ok && part["thought"] != true {
			text = append(text, t)
		}
	}
	return append(history, content), strings.Join(text, ""), calls, nil
}

func (geminiDialect) answer(history []any, results []map[string]any) []any {
	return append(history, map[string]any{"role": "user", "parts": anys(results)})
}
