package conduit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Resolve resolves a call as a model wrote it against the tool set the
// model was offered: the exposed name to its tool, and the arguments to a
// JSON object. It is the first step of every governed call, and the one
// the adapters take for each call of a response; its error is an *Error
// to answer the model with (KindUnknownTool, or KindInvalidArguments when
// the arguments are not an object), and then nothing may be sent. A name
// of a server that is down in the set (a tool offered before it went
// down) is KindUnavailable instead, so that the model may try again later.
//
// args may be nil or a map[string]any (used as they are, not copied),
// JSON as json.RawMessage, []byte or string, or any other value that
// marshals to a JSON object. A nil args is the empty object: it is how a
// Go caller says "no arguments", and how a parser says that the provider
// left its field out where that means none (Gemini's "args"). JSON null is
// not an object, so a parser passes a null or missing field that its
// provider always sends (Anthropic's "input", OpenAI's "arguments") as
// JSON null. An empty or blank JSON text is the empty object, as OpenAI
// sends for a tool without parameters. The adapters package's doc lists
// the rule per provider.
func (ts *ToolSet) Resolve(name string, args any) (*Tool, map[string]any, error) {
	t, ok := ts.Lookup(name)
	if !ok {
		return nil, nil, ts.unknown(name)
	}
	m, err := objectArgs(args)
	if err != nil {
		return t, nil, InvalidArgumentsError(t, err)
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
