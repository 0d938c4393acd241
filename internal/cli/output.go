package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/conduitmcp/conduit"
)

// writeJSON writes v as indented JSON, HTML characters unescaped. The reader
// is a program or a person, not a browser.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// readInput reads a file, or stdin for "" and "-".
func readInput(env *Env, name, what string) ([]byte, error) {
	if name == "" || name == "-" {
		data, err := io.ReadAll(env.Stdin)
		if err != nil {
			return nil, inputError("reading %s from stdin: %v", what, err)
		}
		return data, nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, inputError("reading %s: %v", what, err)
	}
	return data, nil
}

// describe is a failure as one line: the kind and the message a model sees.
func describe(err error) string {
	var ce *conduit.Error
	if errors.As(err, &ce) {
		msg := fmt.Sprintf("%s: %s", ce.String(), ce.Message)
		// A denial's and a deferral's messages already say their cause.
		var d *conduit.Deferral
		if ce.Err != nil && ce.Kind != conduit.ErrDenied && !errors.As(ce.Err, &d) {
			msg += " (" + ce.Err.Error() + ")"
		}
		return msg
	}
	return err.Error()
}
