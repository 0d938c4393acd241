package conduit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit/internal/mrtr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The multi-round-trip requests of protocol 2026-07-28. A server may need
// something of its client during a tools/call, prompts/get or
// resources/read. It then answers with input requests (elicitation,
// sampling, roots) instead of a result. The client asks again with the
// answers.
//
// The SDK's client runs that loop itself. But it answers roots from the
// client's own list, whoever made the call, and conduit's is empty. So
// conduit turns the SDK's loop off and runs its own (inputMiddleware). It
// hands every input request to the client's receiving handlers. That is
// the path a JSON-RPC request of protocol 2025-11-25 takes. It reaches
// the Handlers of the call that the request's context names.

// The SDK's limits, unexported in its mcp package. A request is sent at
// most maxInputRounds times. It is given up when the server has shed load
// maxLoadShedding times. Shedding load is input required, with nothing
// asked.
const (
	maxInputRounds  = 10
	maxLoadShedding = 3
)

// ErrInputNotGiven is the cause (for errors.Is) of a request's error when
// its server asked for input that was not given. The server asked by a
// multi-round-trip result (protocol 2026-07-28). Either of two things
// happened:
//
//   - One of its input requests could not be answered. There was no
//     handler, or the handler failed.
//   - The server went on asking beyond the limits of rounds the SDK's
//     client has.
//
// The request ends with it rather than with an answer the server did not
// ask for.
var ErrInputNotGiven = errors.New("conduit: the server's request for input was not given an answer")

// inputError is a multi-round-trip request that ended without a result.
type inputError struct {
	what  string // "roots", "elicitation" or "sampling"; "" when the rounds ran out
	msg   string
	cause error
}

func (e *inputError) Error() string {
	if e.cause == nil {
		return "multi-round-trip: " + e.msg
	}
	return "multi-round-trip: " + e.msg + ": " + e.cause.Error()
}

func (e *inputError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrInputNotGiven}
	}
	return []error{ErrInputNotGiven, e.cause}
}

// callError is the *Error of a call to exposed that ended with e.
func (e *inputError) callError(call *Call) *Error {
	if e.what == "" {
		// The server's doing: it kept asking.
		return newError(ErrServerError, call.Server, call.Tool,
			"The server of "+call.Exposed+" kept asking for input during the request: "+e.msg+".", e)
	}
	msg := "The server of " + call.Exposed + " asked for " + e.what + " during the request, which could not be given"
	if e.cause != nil {
		msg += ": " + e.cause.Error()
	}
	return newError(ErrInternal, call.Server, call.Tool, msg+".", e)
}

// receiveMiddleware keeps next for inputMiddleware to answer with. next
// is the client's receiving handlers as they are when it is added (last).
func (cn *conn) receiveMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	cn.receive = next
	return next
}

type inputKey struct{}

// withInput returns ctx, whose request inputMiddleware makes as in says
// (CallOptions.Input).
func withInput(ctx context.Context, in *Input) context.Context {
	if in == nil {
		return ctx
	}
	return context.WithValue(ctx, inputKey{}, in)
}

// inputMiddleware runs the multi-round-trip loop of tools/call,
// prompts/get and resources/read. The server may answer with input
// requests. Then it answers them through the client's receiving handlers,
// and asks again. It uses the request's context, which names its call. A
// request made with an Input starts as the retry it says. With
// Input.Return, it ends with the server's first input-required result.
func (cn *conn) inputMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" && method != "prompts/get" && method != "resources/read" {
			return next(ctx, method, req)
		}
		in, _ := ctx.Value(inputKey{}).(*Input)
		retry := in.retry()
		if retry {
			var err error
			if req, err = retryRequest(req, in.Responses, in.RequestState); err != nil {
				return nil, err
			}
		}
		shed := 0
		for round := 1; ; round++ {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			asks, state, more := mrtr.Requests(res)
			if more || retry || round > 1 {
				uncached(res)
			}
			if !more || (in != nil && in.Return) {
				return res, nil
			}
			if len(asks) == 0 {
				shed++
			}
			if shed >= maxLoadShedding {
				return nil, &inputError{msg: fmt.Sprintf("the server was busy %d times", shed)}
			}
			if round >= maxInputRounds {
				return nil, &inputError{msg: fmt.Sprintf("it still asked after %d rounds", round)}
			}
			cs, ok := req.GetSession().(*mcp.ClientSession)
			if !ok {
				return nil, &inputError{msg: fmt.Sprintf("a request of %T cannot be answered", req.GetSession())}
			}
			answers, err := cn.answerInputs(ctx, cs, asks)
			if d := (*inputDeferral)(nil); errors.As(err, &d) {
				// The question waits: what the server needs to go on is
				// kept with the call's deferral (Input).
				d.input.RequestState = state
				return nil, d
			}
			if err != nil {
				return nil, err
			}
			if req, err = retryRequest(req, answers, state); err != nil {
				return nil, err
			}
		}
	}
}

// uncached keeps res out of the SDK's session cache of reads. res is a
// resources/read result of a multi-round-trip exchange. The cache is keyed
// by the URI alone. A request for input is no answer for the next read of
// the URI. Nor is what one caller's answers produced.
func uncached(res mcp.Result) {
	if r, ok := res.(*mcp.ReadResourceResult); ok && r != nil {
		r.TTLMs = 0
	}
}

// retryRequest is req again with answers and state, its params copied:
// the caller's are not modified.
func retryRequest(req mcp.Request, answers mcp.InputResponseMap, state string) (mcp.Request, error) {
	cs, _ := req.GetSession().(*mcp.ClientSession)
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParams:
		cp := *p
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.CallToolParams]{Session: cs, Params: &cp}, nil
	case *mcp.CallToolParamsRaw:
		cp := *p
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.CallToolParamsRaw]{Session: cs, Params: &cp}, nil
	case *mcp.GetPromptParams:
		cp := *p
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.GetPromptParams]{Session: cs, Params: &cp}, nil
	case *mcp.ReadResourceParams:
		cp := *p
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.ReadResourceParams]{Session: cs, Params: &cp}, nil
	}
	return nil, &inputError{msg: fmt.Sprintf("the request's params (%T) cannot be sent again", req.GetParams())}
}

// answerInputs answers every input request, concurrently as the SDK does.
// The first that fails ends the others and the request. Handlers may
// defer some (DeferInput) while the others are answered. Then the request
// ends with an *inputDeferral that holds the requests and those answers.
func (cn *conn) answerInputs(ctx context.Context, cs *mcp.ClientSession, asks mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		first    error
		answers  = make(mcp.InputResponseMap, len(asks))
		deferred []string // the handlers' reasons
	)
	for id, ask := range asks {
		wg.Go(func() {
			a, err := cn.answerInput(ctx, cs, ask)
			mu.Lock()
			defer mu.Unlock()
			if reason, ok := deferredInput(err); ok {
				deferred = append(deferred, reason)
				return
			}
			if err != nil {
				if first == nil {
					first = err
					cancel()
				}
				return
			}
			answers[id] = a
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if len(deferred) > 0 {
		slices.Sort(deferred)
		return nil, &inputDeferral{reason: strings.Join(slices.Compact(deferred), "; "),
			input: &Input{Requests: maps.Clone(asks), Responses: answers}}
	}
	return answers, nil
}

// answerInput answers one input request. It does so as the client's
// receiving handlers answer the JSON-RPC request of the same method.
// Roots are refused unless the hub's Handlers answer them. The SDK's own
// answer is the hub's empty list, which is nobody's roots.
func (cn *conn) answerInput(ctx context.Context, cs *mcp.ClientSession, ask mcp.InputRequest) (mcp.InputResponse, error) {
	var (
		what, method string
		req          mcp.Request
	)
	switch p := ask.(type) {
	case *mcp.ListRootsParams:
		what, method = "roots", "roots/list"
		if h := cn.core.Handlers; h == nil || h.Roots == nil {
			return nil, &inputError{what: what, msg: "roots requested", cause: errors.New("conduit: roots are not supported")}
		}
		req = &mcp.ListRootsRequest{Session: cs, Params: p}
	case *mcp.ElicitParams:
		what, method = "elicitation", "elicitation/create"
		req = &mcp.ElicitRequest{Session: cs, Params: p}
	case *mcp.CreateMessageWithToolsParams:
		what, method = "sampling", "sampling/createMessage"
		req = &mcp.CreateMessageWithToolsRequest{Session: cs, Params: p}
	case *mcp.CreateMessageParams:
		// Only a server in this process sends the base type; the wire has
		// one form, which the SDK's client handles as this one.
		what, method = "sampling", "sampling/createMessage"
		req = &mcp.CreateMessageWithToolsRequest{Session: cs, Params: withTools(p)}
	default:
		return nil, &inputError{what: fmt.Sprintf("%T", ask), msg: "unknown input request"}
	}
	res, err := cn.receive(ctx, method, req)
	if err != nil {
		return nil, &inputError{what: what, msg: what + " requested", cause: err}
	}
	if a := answerOf(what, res); a != nil {
		return a, nil
	}
	return nil, &inputError{what: what, msg: what + " requested", cause: fmt.Errorf("conduit: the answer is not one (%T)", res)}
}

// answerOf is res as the answer to a request for what. It is nil when res
// is none: a handler's nil result, or another kind.
func answerOf(what string, res mcp.Result) mcp.InputResponse {
	switch r := res.(type) {
	case *mcp.ListRootsResult:
		if r != nil && what == "roots" {
			return r
		}
	case *mcp.ElicitResult:
		if r != nil && what == "elicitation" {
			return r
		}
	case *mcp.CreateMessageWithToolsResult:
		if r != nil && what == "sampling" {
			return r
		}
	case *mcp.CreateMessageResult:
		if r != nil && what == "sampling" {
			return r
		}
	}
	return nil
}

// withTools is p in the form the SDK's client handles sampling in.
func withTools(p *mcp.CreateMessageParams) *mcp.CreateMessageWithToolsParams {
	msgs := make([]*mcp.SamplingMessageV2, 0, len(p.Messages))
	for _, m := range p.Messages {
		var content []mcp.Content
		if m.Content != nil {
			content = []mcp.Content{m.Content}
		}
		msgs = append(msgs, &mcp.SamplingMessageV2{Role: m.Role, Content: content})
	}
	return &mcp.CreateMessageWithToolsParams{
		Meta:             p.Meta,
		IncludeContext:   p.IncludeContext,
		MaxTokens:        p.MaxTokens,
		Messages:         msgs,
		Metadata:         p.Metadata,
		ModelPreferences: p.ModelPreferences,
		StopSequences:    p.StopSequences,
		SystemPrompt:     p.SystemPrompt,
		Temperature:      p.Temperature,
	}
}
