package conduit

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"strconv"

	"github.com/conduitmcp/conduit/internal/taskpoll"
	"github.com/conduitmcp/conduit/internal/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// notesTransport wraps the connections of its Transport that it can (see
// transport.Wrap). It takes progress and log notifications off the wire,
// writes on one goroutine, and bounds tools/call results.
type notesTransport struct {
	mcp.Transport
	cn *conn
}

func (t notesTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return c, err
	}
	cn := t.cn
	h := transport.Hooks{ResultBytes: cn.core.limits.resultBytes, Marker: cn.core.resultMarker,
		Progress: func(ctx context.Context, p *mcp.ProgressNotificationParams) {
			sess, _ := cn.current()
			cn.core.onProgress(ctx, &mcp.ProgressNotificationClientRequest{Session: sess, Params: p})
		},
		Log: func(ctx context.Context, p *mcp.LoggingMessageParams) {
			sess, _ := cn.current()
			cn.onLog(ctx, &mcp.LoggingMessageRequest{Session: sess, Params: p})
		}}
	if cn.core.Trace != nil {
		h.CallID = noteRequestID
	}
	// A tools/call answered with a task names it, for taskMiddleware to
	// follow. The call's _meta routes the polls.
	h.TaskAnswer = func(params, result json.RawMessage) (json.RawMessage, bool) {
		cn.mu.Lock()
		p := cn.tasks
		cn.mu.Unlock()
		if p == nil {
			return nil, false
		}
		var req struct {
			Meta json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(params, &req)
		return p.TaskResult(result, &taskpoll.Route{Meta: req.Meta})
	}
	nc := transport.Wrap(c, h)
	if nc == nil {
		return c, nil
	}
	t.cn.mu.Lock()
	t.cn.notes = nc
	t.cn.mu.Unlock()
	return nc, nil
}

// codeResultTooLarge is the code of the error that stands in for an
// oversized tools/call result. Its JSON text is over
// Limits.MaxResultBytes, and it is refused before it is decoded. The
// error's Data is the hub's resultMarker, which holds a random nonce. So
// a server that sends the same code cannot pass its error off as
// conduit's refusal.
const codeResultTooLarge = transport.CodeResultTooLarge

// newResultMarker returns a hub's resultMarker.
func newResultMarker() json.RawMessage {
	return json.RawMessage(strconv.Quote("conduit: result over the limit " + rand.Text()))
}
