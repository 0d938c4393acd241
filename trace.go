package conduit

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Trace is a set of hooks for watching a hub or client, in the manner of
// net/http/httptrace: every field is optional, each takes an info struct
// (so that a field added later breaks no caller), and each is called
// synchronously, so it must be quick and safe for concurrent use.
type Trace struct {
	// ServerUp is called when a session with a server is established.
	ServerUp func(ServerUpInfo)
	// ServerDown is called when a server could not be reached or its
	// session was lost.
	ServerDown func(ServerDownInfo)
	// ToolsChanged is called when a server says its tool list changed.
	ToolsChanged func(ToolsChangedInfo)
	// Decided is called with the policy's decision for a call.
	Decided func(DecidedInfo)
	// CallDone is called when a call is answered, with its result or error.
	CallDone func(CallDoneInfo)
	// PromptsChanged is called when a server says its prompt list changed.
	PromptsChanged func(PromptsChangedInfo)
	// ResourcesChanged is called when a server says its list of resources
	// (or of resource templates) changed.
	ResourcesChanged func(ResourcesChangedInfo)
	// ResourceUpdated is called when a server says a resource it was
	// subscribed to changed (see [Hub.SubscribeResource]).
	ResourceUpdated func(ResourceUpdatedInfo)
}

// ServerUpInfo is the argument of [Trace.ServerUp].
type ServerUpInfo struct {
	Server string // the server's id
}

// ServerDownInfo is the argument of [Trace.ServerDown].
type ServerDownInfo struct {
	Server string // the server's id
	Err    error  // why it is down
}

// ToolsChangedInfo is the argument of [Trace.ToolsChanged].
type ToolsChangedInfo struct {
	Server string // the server's id
}

// DecidedInfo is the argument of [Trace.Decided].
type DecidedInfo struct {
	Call     *Call    // the call; it must not be modified
	Decision Decision // what the policy decided
	Rule     Rule     // the rule that decided, when Matched
	Matched  bool     // false when no rule matched (the call is denied)
}

// CallDoneInfo is the argument of [Trace.CallDone].
type CallDoneInfo struct {
	Call    *Call               // the call; it must not be modified
	Result  *mcp.CallToolResult // the result, when there is one
	Err     error               // the *Error, when there is no result
	Elapsed time.Duration       // from the start of the pipeline
}

// PromptsChangedInfo is the argument of [Trace.PromptsChanged].
type PromptsChangedInfo struct {
	Server string // the server's id
}

// ResourcesChangedInfo is the argument of [Trace.ResourcesChanged].
type ResourcesChangedInfo struct {
	Server string // the server's id
}

// ResourceUpdatedInfo is the argument of [Trace.ResourceUpdated].
type ResourceUpdatedInfo struct {
	Server string // the server's id
	URI    string // the resource that changed
}
