package conduit

import (
	"context"
	"time"

	"github.com/conduitmcp/conduit/internal/mailbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call's progress notifications, on their way to its CallOptions.Progress
// through a mailbox of the call's own.

// progressFlush bounds how long a call's answer waits for its Progress
// callback to be given the notifications that came before the result.
const progressFlush = 2 * time.Second

// The bounds of the mailboxes: per call with a Progress callback, and per
// server for log messages. A single notification over the bytes bound is
// still held, alone. On the connections conduit wraps (all but Streamable
// HTTP's), notifications are taken off as the SDK reads them.
const (
	progressQueue      = 16
	progressQueueBytes = 64 << 10
	logQueue           = 256
	logQueueBytes      = 1 << 20
)

// newProgress is the mailbox of a call's progress notifications.
func (c *core) newProgress(server string, call *Call, f func(*Call, Progress)) *mailbox.Box[Progress] {
	return &mailbox.Box[Progress]{
		Deliver:  func(p Progress) { f(call, p) },
		MaxItems: progressQueue, MaxBytes: progressQueueBytes,
		Dropped: func(n int) {
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
		mb.(*mailbox.Box[Progress]).Put(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}, len(p.Message)+32)
	}
}
