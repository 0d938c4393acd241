package conduit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Resolve resolves a call as a model wrote it against the tool set the
// model was offered. The exposed name resolves to its tool. The arguments
// become a JSON object. It is the first step of every governed call. The
// adapters take it for each call of a response. Its error is an *Error to
// answer the model with. That is ErrUnknownTool, or ErrInvalidArguments
// when the arguments are not an object. Then nothing may be sent. A name
// may be of a server that is down in the set: a tool offered before it
// went down. That is ErrUnavailable instead, so the model may try again
// later.
//
// args may be one of these:
//
//   - nil
//   - a map[string]any, used as it is, not copied
//   - JSON as json.RawMessage, []byte or string
//   - any other value that marshals to a JSON object
//
// A nil args is the empty object. It is how a Go caller says "no
// arguments". It is also how a parser says that the provider left its
// field out where that means none (Gemini's "args"). JSON null is not an
// object. Some providers always send their field (Anthropic's "input",
// OpenAI's "arguments"). A parser passes such a field as JSON null when
// it is null or missing. An empty or blank JSON text is the empty object.
// OpenAI sends that for a tool without parameters. The adapters package's
// doc lists the rule per provider.
func (ts *ToolSet) Resolve(name string, args any) (*Tool, map[string]any, error) {
	t, ok := ts.Lookup(name)
	if !ok {
		return nil, nil, ts.unknown(name)
	}
	m, err := objectArgs(args)
	if err != nil {
		return t, nil, invalidArgumentsError(t, err)
	}
	return t, m, nil
}

var errNotObject = errors.New("the arguments must be a JSON object")

// objectArgs turns a call's arguments into a JSON object.
func objectArgs(args any) (map[string]any, error) {
	var data []byte
	switch a := args.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		if a == nil {
			return map[string]any{}, nil
		}
		return a, nil
	case json.RawMessage:
		data = a
	case []byte:
		data = a
	case string:
		data = []byte(a)
	default:
		var err error
		if data, err = json.Marshal(a); err != nil {
			return nil, fmt.Errorf("the arguments are not JSON: %v", err)
		}
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return map[string]any{}, nil
	}
	if data[0] != '{' {
		if !json.Valid(data) {
			return nil, errors.New("the arguments are not valid JSON")
		}
		return nil, errNotObject
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("the arguments are not valid JSON (%v)", err)
	}
	return m, nil
}
