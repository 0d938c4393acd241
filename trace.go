package conduit

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Trace is a set of hooks for watching a hub or client, in the manner of
// net/http/httptrace: every field is optional, and each is called
// synchronously, so it must be quick and safe for concurrent use.
type Trace struct {
	// ServerUp is called when a session with a server is established.
	ServerUp func(server string)
	// ServerDown is called when a server could not be reached or its
	// session was lost.
	ServerDown func(server string, err error)
	// ToolsChanged is called when a server says its tool list changed.
	ToolsChanged func(server string)
	// Decided is called with the policy's decision for a call.
	Decided func(c *Call, d Decision, rule Rule)
	// CallDone is called when a call is answered, with its result or error.
	CallDone func(c *Call, res *mcp.CallToolResult, err error, elapsed time.Duration)
}
