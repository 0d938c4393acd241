// Package toolcall holds what every provider package shares:
//
//   - a model's tool call resolved against a tool set;
//   - the provider-neutral rendering of a result's content;
//   - the cleaning of tool descriptions;
//   - the shapes of a conversation's turns.
//
// Provider packages turn these into their wire shapes. They know nothing
// of MCP sessions.
package toolcall

import (
	"errors"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/errtext"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Raw is a tool call as the model wrote it, before resolution.
type Raw struct {
	// ID is the provider's call id; Gemini may send none.
	ID string
	// Name is the exposed name the model used.
	Name string
	// Namespace, when set, is the namespace the call names its function
	// in. OpenAI Responses has namespaces, one per server. Name is then
	// the function's name there (see [Resolve]).
	Namespace string
	// Args are the arguments as the response holds them. That is a decoded
	// value, or JSON text (json.RawMessage) for providers that send a
	// string. They are resolved to an object by [conduit.ToolSet.Resolve].
	Args any
	// Err, when set, says why the call cannot be made as written. An
	// example is a tool_use block without an id. It is answered, not sent.
	Err error
}

// Call is a tool call resolved against the tool set the model was offered.
type Call struct {
	// Index is the call's position in the model's order.
	Index int    `json:"index"`
	ID    string `json:"id"`
	// Name is the exposed name the model used.
	Name string `json:"name"`
	// Server and Tool name the server and the tool's own name there. They
	// are empty when the name did not resolve.
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Args are the arguments, a JSON object.
	Args map[string]any `json:"arguments"`
	// Def is the offered definition, nil when the name did not resolve.
	// It is not marshaled: Server and Tool name it.
	Def *conduit.Tool `json:"-"`
	// Err, when set, is why the call is answered without being sent. That
	// is an unknown name, or arguments that are not an object.
	Err *conduit.Error `json:"error,omitempty"`
}

// Resolve resolves raw calls against ts, in order, with
// [conduit.ToolSet.Resolve]. A call with an unknown name or non-object
// arguments gets Err and must not be sent.
//
// A call in a namespace (Raw.Namespace) names a tool of the server of that
// id. That is the one exposed as Name, or else as namespace__Name. The
// latter is the exposed name a hub gives it, which a namespace's listing
// may shorten. The call's Name is then that exposed name. Any other is an
// unknown tool.
func Resolve(raws []Raw, ts *conduit.ToolSet) []Call {
	calls := make([]Call, len(raws))
	for i, r := range raws {
		if r.Namespace != "" {
			r.Name = InNamespace(ts, r.Namespace, r.Name)
		}
		c := Call{Index: i, ID: r.ID, Name: r.Name}
		t, args, err := ts.Resolve(r.Name, r.Args)
		if t != nil {
			c.Server, c.Tool, c.Def = t.Server, t.Name, t
		}
		if err == nil && r.Err != nil {
			err = &conduit.Error{Kind: conduit.ErrInvalidArguments, Server: t.Server, Tool: t.Name,
				Message: errtext.InvalidArguments(t.Exposed, r.Err), Err: r.Err}
		}
		if err != nil {
			c.Err = asError(err)
		} else {
			c.Args = args
		}
		calls[i] = c
	}
	return calls
}

// InNamespace returns the exposed name of the tool that a call of function
// name in namespace ns names (see [Resolve]). That is a tool of server ns
// exposed as name, or else as ns__name. When there is none, it returns
// ns__name, which resolves to no tool.
func InNamespace(ts *conduit.ToolSet, ns, name string) string {
	if t, ok := ts.Lookup(name); ok && t.Server == ns {
		return name
	}
	joined := ns + "__" + name
	if t, ok := ts.Lookup(joined); ok && t.Server != ns {
		// A tool of another server whose exposed name happens to read so.
		return ns + "." + name
	}
	return joined
}

// Warning is something a provider is known to reject or mishandle, found
// while listing. So users learn of it before an HTTP 400.
type Warning struct {
	// Tool is the exposed name, or "" for the whole listing.
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message"`
}

// CheckEach returns check's warnings for every tool of ts, in order. Each
// tool's are computed once per tool set and kept in its memo under key.
func CheckEach(ts *conduit.ToolSet, key any, check func(*conduit.Tool) []Warning) []Warning {
	var ws []Warning
	for t := range ts.All() {
		ws = append(ws, t.Memo(key, func() any { return check(t) }).([]Warning)...)
	}
	return ws
}

// AnswerFunc is a provider package's answer to one call. It answers with a
// result, or with the error that stands for one.
type AnswerFunc func(c Call, res *mcp.CallToolResult, err error, o *AnswerOptions) map[string]any

// ToolCalls resolves raws against ts. raws are a response's calls as a
// provider package parsed them, with its parse error, err. It returns the
// calls that may be sent. It returns answer's answers to those that may
// not: unknown names, arguments that are not an object. It is every
// provider package's ToolCalls function.
func ToolCalls(raws []Raw, err error, ts *conduit.ToolSet, answer AnswerFunc) (ok []Call, rejected []map[string]any, _ error) {
	if err != nil {
		return nil, nil, err
	}
	for _, c := range Resolve(raws, ts) {
		if c.Err != nil {
			rejected = append(rejected, answer(c, nil, c.Err, nil))
		} else {
			ok = append(ok, c)
		}
	}
	return ok, rejected, nil
}

// asError returns err, from conduit.ToolSet.Resolve, as the *conduit.Error
// it always is.
func asError(err error) *conduit.Error {
	var e *conduit.Error
	if errors.As(err, &e) {
		return e
	}
	return &conduit.Error{Kind: conduit.ErrInternal, Message: jsonv.ValidString(err.Error()), Err: err}
}
