package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/conduitmcp/conduit/adapters/driver"
)

func runStrict(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "strict", `
Convert a tool's JSON schema (from FILE, or stdin) to an OpenAI strict-mode
schema with driver.StrictSchema, and print it with the paths of the
properties it made nullable, whose nulls conduit strips before a call:

  {"schema": {...}, "null_paths": [["limit"], ["tags", "[]", "note"]]}

A schema strict mode cannot express is exit status 2, with the reason and
the JSON pointer of the offending keyword.`)
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageError("strict", "one schema at a time")
	}
	name := ""
	if len(pos) == 1 {
		name = pos[0]
	}
	data, err := readInput(env, name, "the schema")
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var schema map[string]any
	if err := dec.Decode(&schema); err != nil || schema == nil {
		return inputError("the schema is not a JSON object: %s", jsonProblem(err))
	}
	strict, nullPaths, err := driver.StrictSchema(schema)
	if err != nil {
		var se *driver.StrictError
		if errors.As(err, &se) {
			return inputError("not convertible to strict mode: %s", reason(err))
		}
		return inputError("not convertible to strict mode: %v", err)
	}
	paths := [][]string{}
	for _, p := range nullPaths {
		paths = append(paths, []string(p))
	}
	return writeJSON(env.Stdout, struct {
		Schema    map[string]any `json:"schema"`
		NullPaths [][]string     `json:"null_paths"`
	}{strict, paths})
}
