package conduit

import (
	"context"
	"time"

	"github.com/conduitmcp/conduit/pins"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Trace is a set of hooks for watching a hub or client, in the manner of
// net/http/httptrace. Every field is optional. Each takes an info struct,
// so that a field added later breaks no caller. Each is called
// synchronously, so it must be quick and safe for concurrent use.
//
// The events of one call carry its context (their info's Context). That
// is the context CallStart returned, in which the call then runs. So a
// span started there is the parent of everything the call does. The
// events that follow can find it again. An approver or hook may overrun
// its call. It then reports (Approved, HookDenied) after the call's
// CallDone. Package otelconduit (a module of its own) turns a Trace into
// OpenTelemetry spans and metrics.
type Trace struct {
	// ServerUp is called when a session with a server is established.
	ServerUp func(ServerEvent)
	// ServerDown is called when a server could not be reached or its
	// session was lost.
	ServerDown func(ServerEvent)
	// ToolsChanged is called when a server says its tool list changed.
	ToolsChanged func(ServerEvent)
	// Decided is called with the policy's decision for a call.
	Decided func(StepInfo)
	// CallDone is called when a call is answered, with its result or error.
	CallDone func(CallDoneInfo)
	// PinDrift is called, with pins configured, for each tool a new
	// listing leaves out. The tool's definition is changed or new.
	PinDrift func(PinDriftInfo)

	// CallStart is called when a call enters the pipeline, before its
	// name is resolved. The context it returns is the call's from then on.
	// Nil means the one it was given. Approvers, hooks, the request and
	// every later event of the call get it. A Trace that sets CallStart
	// should set CallDone, the call's end.
	CallStart func(CallStartInfo) context.Context
	// Approved is called with an approver's answer to a request the policy
	// asked about. That is a call, or a prompt or resource request.
	Approved func(StepInfo)
	// HookDenied is called when a before- or after-hook refuses a call.
	HookDenied func(StepInfo)
	// ValidationFailed is called when a call's arguments do not match the
	// tool's input schema (Options.Validate).
	ValidationFailed func(StepInfo)
	// ListStart is called before a listing request to a server. Its
	// Method is tools/list, prompts/list, resources/list or
	// resources/templates/list. A listing answered from the cache sends
	// none. It returns the context of the request. Nil means the one it
	// was given.
	ListStart func(ListInfo) context.Context
	// ListDone is called when a listing request is answered.
	ListDone func(ListInfo)
	// RequestStart is called when a request other than a call enters its
	// pipeline. That is a prompts/get, resources/read,
	// resources/subscribe, resources/unsubscribe or completion/complete.
	// It is called before its name or URI is resolved. As with CallStart,
	// the context it returns is the request's from then on. Nil means the
	// one it was given. The listing it may need gets it. So do the policy's
	// decision, the approver and the request's _meta. A Trace that sets
	// RequestStart should set RequestDone.
	RequestStart func(CallStartInfo) context.Context
	// RequestDone is called when a request RequestStart saw is answered.
	RequestDone func(CallDoneInfo)
	// RequestMeta, when set, contributes to the _meta of each request
	// sent to a server. That covers the calls, listings and requests
	// above. It is given the request's context. Trace context is one use.
	// Its keys replace those of the call's CallOptions.Meta. A trace
	// context may come in CallOptions.Meta, as a gateway's client's does.
	// It is the parent of the call's (see [CallStartInfo].Meta). The
	// server must see the call's. The map returned is the request's to
	// keep and add to. Return a new one each time. It is the only hook that
	// changes what is sent.
	RequestMeta func(RequestMetaInfo) map[string]any
	// PromptsChanged is called when a server says its prompt list changed.
	PromptsChanged func(ServerEvent)
	// ResourcesChanged is called when a server says its list of resources
	// (or of resource templates) changed.
	ResourcesChanged func(ServerEvent)
	// ResourceUpdated is called when a server says a resource it was
	// subscribed to changed (see [Hub.SubscribeResource]).
	ResourceUpdated func(ServerEvent)
}

// StepInfo is the argument of the events of a call's governed steps:
// [Trace.Decided], Approved, HookDenied and ValidationFailed. Each field
// past Call says which of them sets it.
type StepInfo struct {
	// Context is the call's context (see [Trace.CallStart]).
	Context context.Context
	Call    *Call // the call; it must not be modified
	// Decided: what the policy decided, and the rule that decided when
	// Matched. No rule matched means the call is denied.
	Decision Decision
	Rule     Rule // Decided, and Approved: the rule that asked
	Matched  bool
	// Approved: the approver's answer, and how long it took.
	Approval Approval
	Elapsed  time.Duration
	// HookDenied: the hook's Name, and whether an after-hook withheld the
	// result.
	Hook  string
	After bool
	// HookDenied: what the hook returned. ValidationFailed: what does not
	// match; it may quote the arguments.
	Err error
}

// CallDoneInfo is the argument of [Trace.CallDone] and [Trace.RequestDone].
type CallDoneInfo struct {
	Method string // as in CallStartInfo
	// Call is the call. It must not be modified. An approver or hook may
	// overrun the call's time limit. Then it is a copy taken before the
	// callback ran, since the callback still holds the call.
	Call *Call
	// Result is a tool call's result, when there is one. It is nil for
	// RequestDone: the request's result is its caller's.
	Result *mcp.CallToolResult
	// Err is the *Error, when the call or request failed.
	Err     error
	Elapsed time.Duration // from the start of the pipeline
	// Context is the context CallStart (or RequestStart) returned.
	Context context.Context
	// Request is the request sent to the server. It is nil when none was
	// sent: the call was denied, found no session, and so on.
	Request *RequestInfo
	// Local reports a call of a local tool, as CallStartInfo.Local. It is
	// false for RequestDone.
	Local bool
}

// PinDriftInfo is the argument of [Trace.PinDrift].
type PinDriftInfo struct {
	Drift pins.Drift // the tool, how it differs from its pin, and the diff
	// Context is the context of the listing that made the tool set the
	// tool is left out of. When a call listed, it is the call's.
	Context context.Context
}

// ServerEvent is the argument of the events about a server's session:
// [Trace.ServerUp], ServerDown, ToolsChanged, PromptsChanged,
// ResourcesChanged and ResourceUpdated.
type ServerEvent struct {
	Server string // the server's id
	// Principal is whose session it is, for a server of
	// IdentityPrincipal. It is "" for a shared one. A principal's session
	// may close for idleness, or to make room for another's. It is not
	// down then, and ServerDown is not called.
	Principal string
	Err       error  // ServerDown: why it is down
	URI       string // ResourceUpdated: the resource that changed
}
