// Package toolcall holds what every provider package shares: a model's tool
// call resolved against a tool set, the provider-neutral rendering of a
// result's content, and the cleaning of tool descriptions. Provider packages
// turn these into their wire shapes; they know nothing of MCP sessions.
package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit"
)

// Raw is a tool call as the model wrote it, before resolution.
type Raw struct {
	// ID is the provider's call id; Gemini may send none.
	ID string
	// Name is the exposed name the model used.
	Name string
	// Args is the decoded arguments value.
	Args any
	// ArgsErr, when set, says why the arguments could not be decoded.
	ArgsErr error
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

// Resolve resolves raw calls against ts, in order. A call with an unknown
// name or non-object arguments gets Err and must not be sent.
func Resolve(raws []Raw, ts *conduit.ToolSet) []Call {
	calls := make([]Call, len(raws))
	for i, r := range raws {
		c := Call{Index: i, ID: r.ID, Name: r.Name}
		t, ok := ts.Lookup(r.Name)
		if !ok {
			c.Err = &conduit.Error{Kind: conduit.KindUnknownTool,
				Message: fmt.Sprintf("Unknown tool %q: it is not among the tools offered.", r.Name)}
			calls[i] = c
			continue
		}
		c.Server, c.Tool, c.Def = t.Server, t.Name, t
		err := r.ArgsErr
		if err == nil {
			c.Args, err = ArgsObject(r.Args)
		}
		if err != nil {
			c.Args = nil
			c.Err = &conduit.Error{Kind: conduit.KindInvalidArguments, Server: t.Server, Tool: t.Name,
				Message: sentence("Invalid arguments for " + r.Name + ": " + err.Error()), Err: err}
		}
		calls[i] = c
	}
	return calls
}

// sentence ends s with a full stop.
func sentence(s string) string {
	if strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

var errNotObject = errors.New("the arguments must be a JSON object")

// ArgsObject returns a call's arguments as an object; nil (absent, or a
// JSON null, as a model may write for a tool without parameters) is the
// empty object, and anything else that is not an object is an error.
func ArgsObject(v any) (map[string]any, error) {
	switch a := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return a, nil
	case json.RawMessage:
		var m map[string]any
		if err := json.Unmarshal(a, &m); err != nil || m == nil {
			return nil, errNotObject
		}
		return m, nil
	}
	return nil, errNotObject
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
