package adapters

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Provider is an LLM API whose tool calling conduit speaks. [NewProvider]
// makes it of its driver. The built-in ones are [Anthropic],
// [OpenAIChat], [OpenAIResponses] and [Gemini]. A provider from outside
// this module is made the same way and works wherever they do. Providers
// are equal when made by the same NewProvider call. The zero value is no
// provider: every use of it is an error.
type Provider struct{ r *row }

// row holds a provider's driver behind a pointer. So a Provider is
// comparable whatever the driver's type.
type row struct{ d driver.Provider }

// NewProvider returns the provider that d drives. d must be safe for
// concurrent use. Nil gives the zero Provider.
func NewProvider(d driver.Provider) Provider {
	if d == nil {
		return Provider{}
	}
	return Provider{&row{d}}
}

// impl is the provider's driver, nil for the zero Provider.
func (p Provider) impl() driver.Provider {
	if p.r == nil {
		return nil
	}
	return p.r.d
}

// String returns the provider's name, its driver's Name. The built-ins
// are anthropic, openai-chat, openai-responses, gemini and bedrock.
func (p Provider) String() string {
	if d := p.impl(); d != nil {
		return d.Name()
	}
	return "Provider(none)"
}

// ParseProvider parses a built-in provider's name, as String returns it.
func ParseProvider(s string) (Provider, error) {
	var names []string
	for _, p := range Providers() {
		if strings.EqualFold(s, p.String()) {
			return p, nil
		}
		names = append(names, p.String())
	}
	return Provider{}, fmt.Errorf("unknown provider %q (%s)", s, strings.Join(names, ", "))
}

// MarshalJSON writes a built-in provider as its name, and the zero
// Provider as null. A provider from outside this module has no JSON
// form. Its driver cannot be found again by name, so marshalling it fails.
func (p Provider) MarshalJSON() ([]byte, error) {
	if p.impl() == nil {
		return []byte("null"), nil
	}
	if _, err := ParseProvider(p.String()); err != nil {
		return nil, fmt.Errorf("adapters: provider %s is not built in and has no JSON form", p)
	}
	return json.Marshal(p.String())
}

// UnmarshalJSON reads a built-in provider's name, or null for none. It
// also reads the numbers 1 to 4 of the older numeric form. They are
// Anthropic, OpenAIChat, OpenAIResponses and Gemini. So histories and
// options saved in that form still decode.
func (p *Provider) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		*p = Provider{}
	case string:
		if v == "" {
			*p = Provider{}
			return nil
		}
		q, err := ParseProvider(v)
		if err != nil {
			return fmt.Errorf("adapters: %w", err)
		}
		*p = q
	case float64:
		legacy := []Provider{{}, Anthropic, OpenAIChat, OpenAIResponses, Gemini}
		i := int(v)
		if float64(i) != v || i < 0 || i >= len(legacy) {
			return fmt.Errorf("adapters: unknown provider number %v", v)
		}
		*p = legacy[i]
	default:
		return fmt.Errorf("adapters: a provider is a name, not %s", b)
	}
	return nil
}

func (p Provider) valid() (driver.Provider, error) {
	d := p.impl()
	if d == nil {
		return nil, fmt.Errorf("adapters: invalid provider %v", p)
	}
	return d, nil
}

// Parse returns the tool calls of a provider response as the model wrote
// them, in order. There is one for each answer ExecuteToolCalls makes of
// the same response. So a caller learns from it the name the model used
// for a call that did not resolve. The response is as ExecuteToolCalls
// takes it. The error is for a response that cannot be read. Parse and
// ToolCalls apply no [ResponseLimits]. Bound the response before calling
// them.
func (p Provider) Parse(response any) ([]toolcall.Raw, error) {
	d, err := p.valid()
	if err != nil {
		return nil, err
	}
	return d.Parse(response)
}

// ToolCalls resolves a response's tool calls against ts. It is for
// programs that drive the pipeline themselves. It returns the calls to
// send. It also returns the answers of those that must not be sent.
// Those have unknown names, or arguments that are not an object.
func (p Provider) ToolCalls(response any, ts *conduit.ToolSet) ([]toolcall.Call, []map[string]any, error) {
	d, err := p.valid()
	if err != nil {
		return nil, nil, err
	}
	raws, err := d.Parse(response)
	return toolcall.ToolCalls(raws, err, ts, func(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) map[string]any {
		a, _ := write(d, c, res, err, o)
		return a
	})
}

// Answer answers one call in the provider's shape, keyed by the call's
// id. It answers with res, or with err when the call failed. The model
// reads err's message. The result is cut to o.MaxResultTokens. 0 means
// the default, DefaultMaxResultTokens. Negative means no budget. o may be nil.
func (p Provider) Answer(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) map[string]any {
	d, verr := p.valid()
	if verr != nil {
		return nil
	}
	a, _ := write(d, c, res, err, o)
	return a
}

// Prepare renders one call's answer in the provider's shape, waiting for
// its budget. ExecuteToolCalls does so before it shares a turn's budget.
// Measure it with Tokens, then write it once with Write. A loop that runs
// each call on its own terms shares the turn's budget with it. A durable
// workflow is such a loop. It is nil for an invalid provider. o may be nil.
func (p Provider) Prepare(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) driver.Pending {
	d, verr := p.valid()
	if verr != nil {
		return nil
	}
	return d.Prepare(c, res, err, o)
}

// Shapes describes, for people, what a provider's listing and answers
// look like. `conduit demo` shows them.
type Shapes struct {
	// Tools is the shape of one tool definition in a listing.
	Tools string
	// Answers is how a turn's answers join the conversation.
	Answers string
}

// Streams reports whether p reads streamed responses: whether its driver
// is a driver.Streamer. NewStream refuses a provider that does not.
func (p Provider) Streams() bool {
	d, err := p.valid()
	if err != nil {
		return false
	}
	_, ok := d.(driver.Streamer)
	return ok
}

// Shapes describes the provider's listing and answers. It is the zero
// value for an invalid provider.
func (p Provider) Shapes() Shapes {
	d := p.impl()
	if d == nil {
		return Shapes{}
	}
	return Shapes(d.Shapes())
}

// Wire describes the provider's HTTP API (see [Wire]). It is the zero
// value for an invalid provider.
func (p Provider) Wire() Wire {
	d := p.impl()
	if d == nil {
		return Wire{}
	}
	return Wire(d.API())
}
