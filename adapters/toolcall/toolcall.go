// Package toolcall holds what every provider package shares: a model's tool
// call resolved against a tool set, the provider-neutral rendering of a
// result's content, the cleaning of tool descriptions, and the shapes of a
// conversation's turns. Provider packages turn these into their wire
// shapes; they know nothing of MCP sessions.
package toolcall

import (
	"encoding/json"
	"errors"

	"github.com/conduitmcp/conduit"
)

// Raw is a tool call as the model wrote it, before resolution.
type Raw struct {
	// ID is the provider's call id; Gemini may send none.
	ID string
	// Name is the exposed name the model used.
	Name string
	// Args are the arguments as the response holds them: a decoded value,
	// or JSON text (json.RawMessage) for providers that send a string.
	// They are resolved to an object by [conduit.ToolSet.Resolve].
	Args any
	// Err, when set, says why the call cannot be made as written (a
	// tool_use block without an id); it is answered, not sent.
	Err error
}

// Call is a tool call resolved against the tool set the model was offered.
type Call struct {
	// Index is the call's position in the model's order.
	Index int
	ID    string
	// Name is the exposed name the model used.
	Name string
	// Server and Tool name the server and the tool's own name there; empty
	// when the name did not resolve.
	Server string
	Tool   string
	// Args are the arguments, a JSON object.
	Args map[string]any
	// Def is the offered definition, nil when the name did not resolve.
	Def *conduit.Tool
	// Err, when set, is why the call is answered without being sent: an
	// unknown name, or arguments that are not an object.
	Err *conduit.Error
}

// Resolve resolves raw calls against ts, in order, with
// [conduit.ToolSet.Resolve]. A call with an unknown name or non-object
// arguments gets Err and must not be sent.
func Resolve(raws []Raw, ts *conduit.ToolSet) []Call {
	calls := make([]Call, len(raws))
	for i, r := range raws {
		c := Call{Index: i, ID: r.ID, Name: r.Name}
		t, args, err := ts.Resolve(r.Name, r.Args)
		if t != nil {
			c.Server, c.Tool, c.Def = t.Server, t.Name, t
		}
		if err == nil && r.Err != nil {
			err = conduit.InvalidArgumentsError(t, r.Err)
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

// Warning is something a provider is known to reject or mishandle, found
// while listing, so that users learn of it before an HTTP 400.
type Warning struct {
	// Tool is the exposed name, or "" for the whole listing.
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message"`
}

// Split returns the calls that may be sent and the answers of those that
// may not, each made by answer; it is how the provider packages' ToolCalls
// functions are built.
func Split(calls []Call, answer func(Call) map[string]any) (ok []Call, rejected []map[string]any) {
	for _, c := range calls {
		if c.Err != nil {
			rejected = append(rejected, answer(c))
		} else {
			ok = append(ok, c)
		}
	}
	return ok, rejected
}

// asError returns err, from conduit.ToolSet.Resolve, as the *conduit.Error
// it always is.
func asError(err error) *conduit.Error {
	var e *conduit.Error
	if errors.As(err, &e) {
		return e
	}
	return &conduit.Error{Kind: conduit.KindInternal, Message: ErrorText(err), Err: err}
}

// DecodedArgs returns arguments as a decoded response holds them (present
// reports that the call had the field at all) in the form [Raw.Args]
// takes: an absent field is no arguments; JSON null and a JSON string are
// JSON text, so that resolution refuses them as not an object rather than
// take null for no arguments or a string for JSON text.
func DecodedArgs(v any, present bool) any {
	switch a := v.(type) {
	case nil:
		if present {
			return json.RawMessage("null")
		}
		return nil
	case string:
		data, _ := json.Marshal(a)
		return json.RawMessage(data)
	}
	return v
}
