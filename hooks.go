package conduit

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hook observes or changes calls in the pipeline. Either func may be nil.
// Hooks run in the order configured. Like an approver, a hook should honour
// ctx; one that does not cannot hold a call past its deadline, unless it
// is Inline.
type Hook struct {
	// Name identifies the hook in errors and logs.
	Name string
	// Inline runs Before and After on the caller's goroutine, for hooks
	// that return promptly (counters, metrics, a log line): a call saves
	// the hand-off to another goroutine each way, a few microseconds. The
	// price is the guarantee: an inline hook that blocks holds its call,
	// and the caller, past ctx's end. A call runs its before-hooks inline
	// only when every Before is inline and no approver is asked, and its
	// after-hooks only when every After is.
	Inline bool
	// Before runs after approval and before validation. It may change
	// c.Args, and nothing else: the call goes to the server and tool the
	// policy decided on. An error denies the call: an *Error is answered
	// as it is, any other error as a denial with its message.
	Before func(ctx context.Context, c *Call) error
	// After runs when the server answered with a result (isError included).
	// It may return a replacement. An error withholds the result, answered
	// as Before's errors are.
	After func(ctx context.Context, c *Call, res *mcp.CallToolResult) (*mcp.CallToolResult, error)
}
