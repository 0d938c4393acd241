package conduit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/conduitmcp/conduit/internal/mrtr"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the failure of a governed request means. The SDK reports a lost
// session, an undelivered request and a server's JSON-RPC error in
// different ways. A model must be told which.

// probeTimeout bounds the ping that tells a lost session from a live one.
// The ping follows a call that failed in a way the SDK does not classify.
// It is a variable for tests.
var probeTimeout = 5 * time.Second

// requestError is the error of a request for call that failed with err.
// It was made on sess with tctx, which is ctx bounded by the hub and
// timeout.
func (c *core) requestError(ctx, tctx context.Context, cn *conn, sess *mcp.ClientSession, call *Call, timeout time.Duration, err error) *Error {
	switch {
	case ctx.Err() != nil:
		return endedError(ctx, call.Def, 0, err)
	case c.ctx.Err() != nil:
		return newError(ErrUnavailable, call.Server, call.Tool,
			"The call to "+call.Exposed+" was ended: the tools were closed.", errors.Join(errClosed, err))
	case tctx.Err() != nil:
		return newError(ErrTimeout, call.Server, call.Tool,
			fmt.Sprintf("The request to the server of %s timed out after %v.", call.Exposed, timeout), errors.Join(context.DeadlineExceeded, err))
	}
	if errors.Is(err, errTaskCancelled) {
		return newError(ErrCanceled, call.Server, call.Tool, "The call to "+call.Exposed+" was cancelled with its task.", err)
	}
	if errors.Is(err, errTaskUnreachable) {
		return newError(ErrUnavailable, call.Server, call.Tool,
			"The task of "+call.Exposed+" could not be asked about; it may succeed if tried again.", err)
	}
	if ie := (*mrtr.Error)(nil); errors.As(err, &ie) {
		// Before the JSON-RPC errors: one in its cause is a handler's, not
		// the server's.
		return inputCallError(ie, call)
	}
	rpcErr, rejected := wireErrors(err)
	if rpcErr != nil && rpcErr.Code == codeResultTooLarge && bytes.Equal(rpcErr.Data, c.resultMarker) {
		// The connection refused the result before it was decoded.
		return resultLimitError(call.Def, errors.New(rpcErr.Message))
	}
	if rpcErr != nil && rpcErr.Code != jsonrpc.CodeInvalidRequest {
		return serverError(call, rpcErr, err)
	}
	if c.lost(ctx, cn, sess, err) {
		return newError(ErrUnavailable, call.Server, call.Tool,
			"The server of "+call.Exposed+" became unavailable during the call.", err)
	}
	switch {
	case rpcErr != nil:
		return serverError(call, rpcErr, err)
	case rejected:
		return newError(ErrUnavailable, call.Server, call.Tool,
			"The request to the server of "+call.Exposed+" failed; it may succeed if tried again.", err)
	}
	return newError(ErrServerError, call.Server, call.Tool,
		"The server of "+call.Exposed+" sent an answer that could not be read.", err)
}

// serverError is a JSON-RPC error from the server. Its message reaches the
// model, so the server's output does too.
func serverError(call *Call, rpcErr *jsonrpc.Error, err error) *Error {
	return newError(ErrServerError, call.Server, call.Tool,
		"The server of "+call.Exposed+" answered with an error: "+rpcErr.Message, err)
}

// codeRejected is the code of the SDK's jsonrpc2.ErrRejected, internal to
// the SDK. It means the transport did not deliver the request, as when an
// HTTP request fails. The session is not over. TestSDKRejectionCode fails
// if the SDK changes it.
const codeRejected = -32005

// wireErrors finds the *jsonrpc.Errors in err's tree. rpcErr is the first
// that is not the transport's rejection. That is a JSON-RPC error from the
// server. But the SDK's reader also fails with one (CodeInvalidRequest).
// It does so on a line of stdout that is JSON but not a message. rejected
// reports a rejection.
func wireErrors(err error) (rpcErr *jsonrpc.Error, rejected bool) {
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if w, ok := err.(*jsonrpc.Error); ok {
			if w.Code == codeRejected {
				rejected = true
			} else if rpcErr == nil {
				rpcErr = w
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return rpcErr, rejected
}

// lost reports whether err, a failed request's error, means that the
// session is gone. If so, it makes sure that it is dropped. The SDK ends a
// session itself when its transport fails, as with a child that died. But
// the failed request may return before the end is visible. And the SDK
// keeps an HTTP session whose requests fail to be sent. A ping settles it.
func (c *core) lost(ctx context.Context, cn *conn, sess *mcp.ClientSession, err error) bool {
	if !cn.live(sess) {
		return true
	}
	gone := errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	if !gone {
		pctx, cancel := c.bound(ctx)
		defer cancel()
		pctx, cancel2 := context.WithTimeout(pctx, probeTimeout)
		defer cancel2()
		gone = !answered(sess.Ping(pctx, nil))
	}
	// An HTTP request can fail with EOF while the SDK keeps the session,
	// so a session found gone is dropped here in any case; dropping one
	// that is already ending is harmless.
	if gone && ctx.Err() == nil && c.ctx.Err() == nil {
		cn.drop(sess, fmt.Errorf("a request failed: %w", err))
	}
	return gone
}
