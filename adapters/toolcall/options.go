package toolcall

import "fmt"

// Structured says how a result's structuredContent is used.
type Structured int

const (
	// StructuredDefault is the provider's default: StructuredAuto for
	// Anthropic and OpenAI, StructuredPrefer for Gemini.
	StructuredDefault Structured = iota
	// StructuredAuto uses structuredContent, as JSON text, only when the
	// result has no content.
	StructuredAuto
	// StructuredPrefer uses structuredContent in place of the content when
	// there is one.
	StructuredPrefer
	// StructuredAppend adds structuredContent, as JSON text, after the
	// content.
	StructuredAppend
	// StructuredIgnore never uses structuredContent.
	StructuredIgnore
)

// ParseStructured parses "auto", "prefer", "append" or "ignore".
func ParseStructured(s string) (Structured, error) {
	switch s {
	case "", "default":
		return StructuredDefault, nil
	case "auto":
		return StructuredAuto, nil
	case "prefer":
		return StructuredPrefer, nil
	case "append":
		return StructuredAppend, nil
	case "ignore":
		return StructuredIgnore, nil
	}
	return 0, fmt.Errorf("unknown structured mode %q (auto, prefer, append or ignore)", s)
}

// AnswerOptions are the options of a provider's answer function.
type AnswerOptions struct {
	// Structured says how structuredContent is used.
	Structured Structured
	// ErrorPrefix starts the text of an error answer, for OpenAI, which has
	// no error flag. It is DefaultErrorPrefix when empty. It is nothing at
	// all with NoErrorPrefix.
	ErrorPrefix   string
	NoErrorPrefix bool
	// MaxImageBytes is the largest image an answer carries, in bytes of
	// its base64 text. 0 is the provider's documented limit (Anthropic
	// 5 MB, OpenAI Responses 20 MB, Bedrock 3.75 MB). Negative is none. An
	// image over it becomes a placeholder saying so. The rest of the
	// result is kept. Answers that carry no images (OpenAI Chat, Gemini)
	// ignore it.
	MaxImageBytes int
	// MaxResultTokens is the result budget: the most tokens of a result
	// the model reads, its notice aside. It is counted on what the answer
	// carries (see package adapters, "Result budget"). A result over it
	// is cut. Its beginning is kept, cut at a line break or a character. A
	// JSON text or structured value is cut into valid JSON. A notice says
	// what was kept and how to ask for less. 0 means
	// DefaultMaxResultTokens. Negative means no budget. In
	// adapters.ConversationOptions and ExecOptions it is every result's.
	// The exception is when its server's own budget is set
	// (conduit.Server.MaxResultTokens). Another is when the call's is set
	// (adapters.BudgetOptions.CallTokens).
	MaxResultTokens int
}

// DefaultErrorPrefix starts OpenAI error answers unless
// AnswerOptions.ErrorPrefix says otherwise.
const DefaultErrorPrefix = "Error: "

// Prefix returns the error prefix o asks for.
func (o *AnswerOptions) Prefix() string {
	switch {
	case o == nil || (o.ErrorPrefix == "" && !o.NoErrorPrefix):
		return DefaultErrorPrefix
	case o.NoErrorPrefix:
		return ""
	}
	return o.ErrorPrefix
}
