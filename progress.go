package conduit

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call's progress notifications, on their way to its CallOptions.Progress
// through a mailbox of the call's own.

// progressFlush bounds how long a call's answer waits for its Progress
// callback to be given the notifications that came before the result.
const progressFlush = 2 * time.Second

// newProgress is the mailbox of a call's progress notifications.
func (c *core) newProgress(server string, call *Call, f func(*Call, Progress)) *mailbox[Progress] {
	return &mailbox[Progress]{
		deliver:  func(p Progress) { f(call, p) },
		maxItems: progressQueue, maxBytes: progressQueueBytes,
		dropped: func(n int) {
			c.Logger.Debug("conduit: progress notifications dropped: the Progress callback was slower than the server", "server", server, "tool", call.Tool, "dropped", n)
		},
	}
}

func (c *core) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	if mb, ok := c.progress.Load(req.Params.ProgressToken); ok {
		p := req.Params
		mb.(*mailbox[Progress]).put(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}, len(p.Message)+32)
	}
}
