package conduit

import (
	"context"
	"errors"

	"github.com/conduitmcp/conduit/internal/mrtr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The multi-round-trip requests of protocol 2026-07-28: the loop runs in
// internal/mrtr. The hub decides how a request starts (its call's Input),
// whether roots are answered, and the *Error a failed exchange becomes.

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
var ErrInputNotGiven = mrtr.ErrNotGiven

// inputCallError is the *Error of a call to exposed that ended with e.
func inputCallError(e *mrtr.Error, call *Call) *Error {
	if e.What == "" {
		// The server's doing: it kept asking.
		return newError(ErrServerError, call.Server, call.Tool,
			"The server of "+call.Exposed+" kept asking for input during the request: "+e.Msg+".", e)
	}
	msg := "The server of " + call.Exposed + " asked for " + e.What + " during the request, which could not be given"
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return newError(ErrInternal, call.Server, call.Tool, msg+".", e)
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
// prompts/get and resources/read. A request made with an Input starts as
// the retry it says. With Input.Return, it ends with the server's first
// input-required result. Questions a handler deferred end the request
// with the call's deferral, which keeps what the server needs to go on.
func (cn *conn) inputMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !mrtr.Governs(method) {
			return next(ctx, method, req)
		}
		var st mrtr.Start
		if in, _ := ctx.Value(inputKey{}).(*Input); in != nil {
			st = mrtr.Start{Retry: in.retry(), Responses: in.Responses, State: in.RequestState, Return: in.Return}
		}
		res, err := cn.rounds.Run(ctx, method, req, next, st)
		if d := (*mrtr.Deferred)(nil); errors.As(err, &d) {
			return nil, deferralOf(d)
		}
		return res, err
	}
}

// deferralOf is the call's deferral of the questions d holds.
func deferralOf(d *mrtr.Deferred) *inputDeferral {
	return &inputDeferral{reason: d.Reason,
		input: &Input{Requests: d.Requests, Responses: d.Responses, RequestState: d.State}}
}
