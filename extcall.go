// Requests the SDK's ClientSession has no method for (an extension's,
// such as skills/list), sent as the SDK's own jsonrpc.Request through an
// SDK Connection: the JSON-RPC framing and the transport are the SDK's.
package conduit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/conduitmcp/conduit/internal/transport"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxExtResult bounds an extension request's result.
const maxExtResult = 16 << 20

// extIDs numbers extension requests. Their ids are strings, so they can
// never be one of the SDK's own (numbers) on a shared connection.
var extIDs atomic.Uint64

// errNoExtTransport says the session's transport cannot carry a request
// the SDK has no method for.
var errNoExtTransport = errors.New("this transport cannot carry an extension's request")

// extCall sends method with params to cn's server and decodes the result
// into out. Over Streamable HTTP it goes on a connection of its own made
// by the server's SDK transport; over stdio or SSE it shares the
// session's connection, whose reader takes its answer off the wire.
func (cn *conn) extCall(ctx context.Context, sess *mcp.ClientSession, method string, params map[string]any, out any) error {
	// An answer that never comes must not hold the caller for ever.
	if d := cmp.Or(max(cn.core.RequestTimeout, 0), max(cn.core.CallTimeout, 0)); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	version := ""
	if ir := sess.InitializeResult(); ir != nil {
		version = ir.ProtocolVersion
	}
	if version >= "2026-07-28" {
		// The two keys every stateless request carries. No capability is
		// claimed: an extension's listing asks the client for nothing.
		params["_meta"] = map[string]any{mcp.MetaKeyProtocolVersion: version, mcp.MetaKeyClientCapabilities: map[string]any{}}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	id, err := jsonrpc.MakeID(fmt.Sprintf("conduit-ext-%d", extIDs.Add(1)))
	if err != nil {
		return err
	}
	req := &jsonrpc.Request{ID: id, Method: method, Params: raw}
	cn.mu.Lock()
	st, nc := cn.streamable, cn.notes
	cn.mu.Unlock()
	var resp *jsonrpc.Response
	switch {
	case st != nil:
		resp, err = transport.StreamableCall(ctx, st, sess, version, req)
	case nc != nil:
		resp, err = nc.Call(ctx, req)
	default:
		err = errNoExtTransport
	}
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if resp.Error != nil {
		return resp.Error
	}
	if len(resp.Result) > maxExtResult {
		return fmt.Errorf("%s: the result is larger than %s", method, transport.ByteSize(maxExtResult))
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		return fmt.Errorf("%s: the result: %w", method, err)
	}
	return nil
}
