// Package mrtr runs the multi-round-trip requests of protocol
// 2026-07-28. A server may need something of its client during a
// tools/call, prompts/get or resources/read. It then answers with input
// requests (elicitation, sampling, roots) instead of a result. The client
// asks again with the answers.
//
// The SDK's client runs that loop itself. But it answers roots from the
// client's own list, whoever made the call, and a hub's is empty. So the
// hub turns the SDK's loop off and runs this one. It hands every input
// request to the client's receiving handlers. That is the path a JSON-RPC
// request of protocol 2025-11-25 takes. The handlers find the call the
// request's context names.
package mrtr

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's limits, unexported in its mcp package. A request is sent at
// most maxInputRounds times. It is given up when the server has shed load
// maxLoadShedding times. Shedding load is input required, with nothing
// asked.
const (
	maxInputRounds  = 10
	maxLoadShedding = 3
)

// ErrNotGiven is the cause of every [Error]. The root package exports it
// as ErrInputNotGiven.
var ErrNotGiven = errors.New("conduit: the server's request for input was not given an answer")

// Error is a multi-round-trip request that ended without a result.
type Error struct {
	What  string // "roots", "elicitation" or "sampling"; "" when the rounds ran out
	Msg   string
	Cause error
}

func (e *Error) Error() string {
	if e.Cause == nil {
		return "multi-round-trip: " + e.Msg
	}
	return "multi-round-trip: " + e.Msg + ": " + e.Cause.Error()
}

func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrNotGiven}
	}
	return []error{ErrNotGiven, e.Cause}
}

// Deferred ends a request whose server's questions a handler deferred.
// It holds what the server needs to go on: its requests, the answers
// given already, and its state.
type Deferred struct {
	Reason    string // the handlers' reasons, joined
	Requests  mcp.InputRequestMap
	Responses mcp.InputResponseMap
	State     string
}

func (d *Deferred) Error() string { return "conduit: deferred: " + d.Reason }

// Rounds answers the input requests of one client's sessions.
type Rounds struct {
	// Receive is the client's receiving handlers (see Keep). They answer
	// input requests as they answer the JSON-RPC requests of the same
	// methods.
	Receive mcp.MethodHandler
	// Roots lets roots requests through to Receive. Without it they are
	// refused: the SDK's own answer is the client's empty list, which is
	// nobody's roots.
	Roots bool
	// Deferred reports whether a handler's error defers its question, and
	// with what reason.
	Deferred func(error) (string, bool)
}

// Keep is the receiving middleware that keeps next as r.Receive. It must
// be added last, so that next is the client's handlers in full.
func (r *Rounds) Keep(next mcp.MethodHandler) mcp.MethodHandler {
	r.Receive = next
	return next
}

// Start says how a request begins.
type Start struct {
	// Retry makes the request the retry of one whose server asked, with
	// Responses and State.
	Retry     bool
	Responses mcp.InputResponseMap
	State     string
	// Return ends the request with the server's first input-required
	// result.
	Return bool
}

// Governs reports whether method's requests run the loop: tools/call,
// prompts/get and resources/read.
func Governs(method string) bool {
	return method == "tools/call" || method == "prompts/get" || method == "resources/read"
}

// Run sends req through next until the server answers with a result
// that asks nothing. In between it answers the server's input requests
// (r.Receive) and asks again. It uses the request's context, which names
// its call. A request starts as st says.
func (r *Rounds) Run(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler, st Start) (mcp.Result, error) {
	retry := st.Retry
	if retry {
		var err error
		if req, err = retryRequest(req, st.Responses, st.State); err != nil {
			return nil, err
		}
	}
	shed := 0
	for round := 1; ; round++ {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		asks, state, more := Requests(res)
		if more || retry || round > 1 {
			uncached(res)
		}
		if !more || st.Return {
			return res, nil
		}
		if len(asks) == 0 {
			shed++
		}
		if shed >= maxLoadShedding {
			return nil, &Error{Msg: fmt.Sprintf("the server was busy %d times", shed)}
		}
		if round >= maxInputRounds {
			return nil, &Error{Msg: fmt.Sprintf("it still asked after %d rounds", round)}
		}
		cs, ok := req.GetSession().(*mcp.ClientSession)
		if !ok {
			return nil, &Error{Msg: fmt.Sprintf("a request of %T cannot be answered", req.GetSession())}
		}
		answers, err := r.Answer(ctx, cs, asks)
		if d := (*Deferred)(nil); errors.As(err, &d) {
			// The question waits: what the server needs to go on is
			// kept with the call's deferral.
			d.State = state
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

// uncached keeps res out of the SDK's session cache of reads. res is a
// resources/read result of a multi-round-trip exchange. The cache is keyed
// by the URI alone. A request for input is no answer for the next read of
// the URI. Nor is what one caller's answers produced.
func uncached(res mcp.Result) {
	if r, ok := res.(*mcp.ReadResourceResult); ok && r != nil {
		r.TTLMs = 0
	}
}

// Requests returns what res asks of its client (protocol
// 2026-07-28). res is a server's result of tools/call, prompts/get or
// resources/read. It also returns the requestState to send back with the
// answers, and whether res asks at all. An input-required result asks. So
// does one with input requests. An empty set of them means the server
// shed load: ask again later. A result of another type never asks.
func Requests(res mcp.Result) (asks mcp.InputRequestMap, state string, ok bool) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if r != nil && (r.NeedsInput() || r.InputRequests != nil) {
			return r.InputRequests, r.RequestState, true
		}
	case *mcp.GetPromptResult:
		if r != nil && (r.NeedsInput() || r.InputRequests != nil) {
			return r.InputRequests, r.RequestState, true
		}
	case *mcp.ReadResourceResult:
		if r != nil && (r.NeedsInput() || r.InputRequests != nil) {
			return r.InputRequests, r.RequestState, true
		}
	}
	return nil, "", false
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
	return nil, &Error{Msg: fmt.Sprintf("the request's params (%T) cannot be sent again", req.GetParams())}
}

// Answer answers every input request, concurrently as the SDK does.
// The first that fails ends the others and the request. Handlers may
// defer some (DeferInput) while the others are answered. Then the request
// ends with a *Deferred that holds the requests and those answers.
func (r *Rounds) Answer(ctx context.Context, cs *mcp.ClientSession, asks mcp.InputRequestMap) (mcp.InputResponseMap, error) {
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
			a, err := r.answerInput(ctx, cs, ask)
			mu.Lock()
			defer mu.Unlock()
			if reason, ok := r.Deferred(err); ok {
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
		return nil, &Deferred{Reason: strings.Join(slices.Compact(deferred), "; "),
			Requests: maps.Clone(asks), Responses: answers}
	}
	return answers, nil
}

// answerInput answers one input request. It does so as the client's
// receiving handlers answer the JSON-RPC request of the same method.
// Roots are refused unless the hub's Handlers answer them. The SDK's own
// answer is the hub's empty list, which is nobody's roots.
func (r *Rounds) answerInput(ctx context.Context, cs *mcp.ClientSession, ask mcp.InputRequest) (mcp.InputResponse, error) {
	var (
		what, method string
		req          mcp.Request
	)
	switch p := ask.(type) {
	case *mcp.ListRootsParams:
		what, method = "roots", "roots/list"
		if !r.Roots {
			return nil, &Error{What: what, Msg: "roots requested", Cause: errors.New("conduit: roots are not supported")}
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
		req = &mcp.CreateMessageWithToolsRequest{Session: cs, Params: WithTools(p)}
	default:
		return nil, &Error{What: fmt.Sprintf("%T", ask), Msg: "unknown input request"}
	}
	res, err := r.Receive(ctx, method, req)
	if err != nil {
		return nil, &Error{What: what, Msg: what + " requested", Cause: err}
	}
	if a := answerOf(what, res); a != nil {
		return a, nil
	}
	return nil, &Error{What: what, Msg: what + " requested", Cause: fmt.Errorf("conduit: the answer is not one (%T)", res)}
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

// WithTools is p in the form the SDK's client handles sampling in.
func WithTools(p *mcp.CreateMessageParams) *mcp.CreateMessageWithToolsParams {
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
