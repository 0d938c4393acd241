package gateway

import (
	"errors"
	"math"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a client is answered when a request fails. Conduit's errors become
// tool errors or JSON-RPC errors, as a client of an MCP server expects.

// answer is a call's error as a client gets it:
//
//   - a JSON-RPC error from the server, as the server sent it;
//   - an unknown tool, as the SDK's server says it;
//   - anything else (a denial, a time-out, a server that is down) as a
//     tool error whose text is conduit's message.
func answer(err error) (*mcp.CallToolResult, error) {
	if rpcErr := protocolError(err); rpcErr != nil {
		return nil, rpcErr
	}
	msg := err.Error()
	var e *conduit.Error
	if errors.As(err, &e) {
		msg = e.Message
	}
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
	if d, ok := retryAfter(err); ok {
		res.Meta = mcp.Meta{MetaRetryAfter: math.Ceil(d.Seconds())}
	}
	return res, nil
}

// protocolError is err as a JSON-RPC error, when it is one. That is the
// server's own, passed on, or an unknown name. An unknown name is invalid
// params, as the SDK says of an unknown tool. Nil for the failures a tool
// error tells.
func protocolError(err error) *jsonrpc.Error {
	var e *conduit.Error
	if !errors.As(err, &e) {
		return nil
	}
	switch e.Kind {
	case conduit.ErrUnknownTool:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Message}
	case conduit.ErrServerError:
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return rpcErr
		}
	}
	return nil
}

// requestError is the error of a prompt, resource or completion request.
// It is a JSON-RPC error in every case. The server's own is passed on.
func requestError(err error) error {
	if rpcErr := protocolError(err); rpcErr != nil {
		return rpcErr
	}
	var e *conduit.Error
	if errors.As(err, &e) {
		code := int64(jsonrpc.CodeInternalError)
		if e.Kind == conduit.ErrInvalidArguments {
			code = jsonrpc.CodeInvalidParams
		}
		return &jsonrpc.Error{Code: code, Message: e.Message}
	}
	return err
}
