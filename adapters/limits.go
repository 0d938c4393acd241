package adapters

import (
	"errors"
	"fmt"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// ResponseLimits bound what ExecuteToolCalls takes from a model response.
// The response may be hostile: a prompt injection can make a model write
// anything. The zero value is the defaults. A negative field is no limit.
type ResponseLimits struct {
	// MaxToolCalls is the most calls of one response that are run
	// (default DefaultMaxToolCalls). The calls past it are never sent.
	// Each is answered with an error saying so: toolcall.TooManyCallsError,
	// matching toolcall.ErrTooManyCalls. So every call still has its
	// answer. The calls within the limit run as usual.
	MaxToolCalls int
	// MaxResponseBytes is the largest response read, in bytes of its
	// JSON (default DefaultMaxResponseBytes). A response over it is not
	// parsed. ExecuteToolCalls then returns an error matching
	// ErrResponseTooLarge and sends nothing. A response is measured by
	// its form:
	//
	//   - text, by its length;
	//   - an SDK struct, by its RawJSON or its JSON;
	//   - a decoded map, by a walk that stops past the limit.
	//
	// The walk counts at least the bytes the map's JSON would take.
	MaxResponseBytes int
}

const (
	// DefaultMaxToolCalls is the default ResponseLimits.MaxToolCalls. It
	// is the most tools OpenAI accepts in one request.
	// Models make a few calls a turn, a few dozen at the most. A response
	// with thousands is hostile. Each call costs a server round trip and
	// an answer in the next request.
	DefaultMaxToolCalls = 128
	// DefaultMaxResponseBytes is the default
	// ResponseLimits.MaxResponseBytes, 32 MiB. That is Anthropic's limit
	// on a request, which carries the response back in the conversation.
	// It is tens of times the largest response a model's output tokens
	// can fill. 128k tokens is about 0.5 MB of text.
	DefaultMaxResponseBytes = 32 << 20
)

// ErrResponseTooLarge is what ExecuteToolCalls returns, wrapped with the
// sizes, for a response over ResponseLimits.MaxResponseBytes.
var ErrResponseTooLarge = errors.New("adapters: the response is over the size limit")

func (l ResponseLimits) maxCalls() int {
	if l.MaxToolCalls == 0 {
		return DefaultMaxToolCalls
	}
	return l.MaxToolCalls
}

func (l ResponseLimits) maxBytes() int {
	if l.MaxResponseBytes == 0 {
		return DefaultMaxResponseBytes
	}
	return l.MaxResponseBytes
}

// bound checks response against the size limit. It returns the response
// in the form to parse. A value marshaled here is not marshaled again.
func (l ResponseLimits) bound(response any) (any, error) {
	max := l.maxBytes()
	if max < 0 {
		return response, nil
	}
	out, n, over := jsonv.Bound(response, max)
	if over {
		if _, ok := response.(map[string]any); ok {
			return nil, fmt.Errorf("%w: more than %d bytes, limit %d", ErrResponseTooLarge, max, max)
		}
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrResponseTooLarge, n, max)
	}
	return out, nil
}

// resolve resolves raws against ts. The calls past the call limit are
// not resolved. They are answered with toolcall.TooManyCallsError.
func (l ResponseLimits) resolve(raws []toolcall.Raw, ts *conduit.ToolSet) []toolcall.Call {
	max := l.maxCalls()
	if max < 0 || len(raws) <= max {
		return toolcall.Resolve(raws, ts)
	}
	calls := toolcall.Resolve(raws[:max], ts)
	for i, r := range raws[max:] {
		name := r.Name
		if r.Namespace != "" {
			name = toolcall.InNamespace(ts, r.Namespace, r.Name)
		}
		t, _ := ts.Lookup(name)
		calls = append(calls, toolcall.Call{Index: max + i, ID: r.ID, Name: name,
			Err: toolcall.TooManyCallsError(t, name, len(raws), max)})
	}
	return calls
}
